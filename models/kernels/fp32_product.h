#pragma once
// What zoo's own fp32 CPU products (few_rows_linear, onednn_linear) take: one home for the
// checks both make before choosing themselves over LibTorch's product.
#include <torch/torch.h>

namespace zoo::models {

/// The rows of x for x W^T + b where x (..., K), W (N, K) contiguous and b (N) (or undefined)
/// are fp32 on the CPU with matching, non-zero widths; -1 where they are not.
inline int64_t fp32_cpu_product_rows(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!x.is_cpu() || x.dim() < 1 || x.scalar_type() != at::kFloat) return -1;
  if (!weight.is_cpu() || weight.dim() != 2 || weight.scalar_type() != at::kFloat || !weight.is_contiguous()) return -1;
  if (bias.defined() && (!bias.is_cpu() || bias.scalar_type() != at::kFloat || bias.dim() != 1 ||
                         !bias.is_contiguous() || bias.size(0) != weight.size(0))) return -1;
  if (x.size(-1) != weight.size(1) || x.size(-1) == 0 || weight.size(0) == 0) return -1;
  return x.numel() / x.size(-1);
}

/// Whether autograd records x W^T + b (grad mode on and an input that requires grad).
inline bool records_graph(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  return at::GradMode::is_enabled() &&
         (x.requires_grad() || weight.requires_grad() || (bias.defined() && bias.requires_grad()));
}

}  // namespace zoo::models
