#pragma once
// The linear layers' product for every model: x W^T + b in the form each device runs fastest.
#include <torch/torch.h>

namespace zoo::models {

/// x W^T + b, as torch::nn::Linear. On the CPU as LibTorch's C++ Linear computes it (a matrix
/// product, then the bias added in place, in the product's dtype: under bf16 autocast a bf16
/// bias, as Python's autocast gives `linear`), which on LibTorch 1.13 beats ATen's `linear`
/// (`addmm` over the flattened rows; docs/results.md, GPT on an NVIDIA H100); a single row
/// (cached decoding of one sequence) as a matrix-vector product, which reads W once where
/// OpenBLAS's matrix product first copies it into packed panels. Elsewhere ATen's
/// `linear`, as PyTorch's Python Linear: on CUDA the bias is added in the GEMM's epilogue
/// instead of a pass of its own over the output.
inline torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {}) {
  if (x.is_cpu()) {
    if (x.dim() >= 1 && x.numel() == x.size(-1)) {  // one row: cached decoding of one sequence
      const auto row = x.reshape({-1});
      auto y = bias.defined() ? at::addmv(bias, weight, row) : at::mv(weight, row);
      auto sizes = x.sizes().vec();
      sizes.back() = weight.size(0);
      return y.view(sizes);
    }
    if (!bias.defined()) return x.matmul(weight.t());
    if (x.dim() == 2) return torch::addmm(bias, x, weight.t());
    auto y = x.matmul(weight.t());
    // Under autocast the product is bf16 while the bias stays fp32, and ATen adds mixed dtypes
    // in place through a scalar casting loop; the bias is cast first, as autocast casts it
    // for PyTorch's linear.
    return y.add_(bias.to(y.scalar_type()));  // the bias itself where the dtypes agree
  }
  return at::linear(x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

inline torch::Tensor linear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  return linear(x, layer->weight, layer->bias);
}

}  // namespace zoo::models
