#pragma once
// The linear layers' product for every model: x W^T + b in the form each device runs fastest.
#include <torch/torch.h>

namespace zoo::models {

/// x W^T + b, as torch::nn::Linear. On the CPU as LibTorch's C++ Linear computes it (a matrix
/// product, then the bias added in place), which on LibTorch 1.13 beats ATen's `linear`
/// (`addmm` over the flattened rows; docs/results.md, GPT on an NVIDIA H100). Elsewhere ATen's
/// `linear`, as PyTorch's Python Linear: on CUDA the bias is added in the GEMM's epilogue
/// instead of a pass of its own over the output.
inline torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {}) {
  if (x.is_cpu()) return torch::nn::functional::linear(x, weight, bias);
  return at::linear(x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

inline torch::Tensor linear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  return linear(x, layer->weight, layer->bias);
}

}  // namespace zoo::models
