#pragma once
// x W^T + b on the CPU in fp32 through oneDNN's matmul, for products of more rows than
// few_rows_linear takes (prefill, encoders, classifiers, beams of a batch). OpenBLAS's sgemm
// runs its AVX2 kernels where the CPU or OPENBLAS_CORETYPE says so; oneDNN picks its own by the
// CPU's instruction sets (AVX-512 where there is one) and reads W in place, transposed.
// Measured against LibTorch's products by tools/bench/linear_bench.cc (docs/results.md).
#include <torch/torch.h>

namespace zoo::models {

/// Whether this build calls oneDNN's matmul itself (ZOO_WITH_ONEDNN: LibTorch links oneDNN as a
/// shared library and its headers were found).
bool has_onednn_linear();

/// Whether onednn_linear computes x W^T + b here: a build with oneDNN, fp32 x, W (N, K)
/// contiguous and b (N) on the CPU, more than kFewRowsMax rows, no autocast, and
/// ZOO_ONEDNN_LINEAR not 0. Where it is false, linear() uses LibTorch's products.
bool onednn_linear_applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

/// x W^T + b for x (..., K), W (N, K), b (N) or undefined: (..., N). Under autograd its
/// backward runs through the same matmul (dx = dy W, dW = dy^T x).
torch::Tensor onednn_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace zoo::models
