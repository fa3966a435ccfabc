#pragma once
// The linear layers' product for every model: x W^T + b in the form each device runs fastest.
#include <torch/torch.h>

namespace zoo::models {

/// x W^T + b, as torch::nn::Linear. On the CPU as LibTorch's C++ Linear computes it (a matrix
/// product, then the bias added in place), which on LibTorch 1.13 beats ATen's `linear`
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
    return torch::nn::functional::linear(x, weight, bias);
  }
  return at::linear(x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

inline torch::Tensor linear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  return linear(x, layer->weight, layer->bias);
}

}  // namespace zoo::models
