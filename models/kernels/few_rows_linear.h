#pragma once
// x W^T + b for a few rows of x (decoding steps of a batch, short prompts) on the CPU in fp32.
// OpenBLAS's sgemm first copies W into packed panels, which for a few rows costs more than the
// product itself; this kernel reads W once, in place: each 4 x 4 block of outputs is 16 dot
// products over K, in vector registers, summed across lanes at the end. Measured against
// OpenBLAS by tools/bench/linear_bench.cc (docs/results.md).
#include <torch/torch.h>

namespace zoo::models {

/// The most rows few_rows_linear takes: past them OpenBLAS's packed products are as fast.
inline constexpr int64_t kFewRowsMax = 32;

/// Whether few_rows_linear computes x W^T + b here: a CPU with AVX2 and FMA (or AVX-512), fp32
/// x and W (W contiguous, (N, K)), 2 to kFewRowsMax rows, no autograd graph to record and no
/// autocast. Where it is false, linear() uses LibTorch's products.
bool few_rows_linear_applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

/// x W^T + b for x (..., K) and W (N, K), b (N) or undefined: (..., N). Each output is one dot
/// product summed in the same order whatever the threads, so the result does not depend on them.
torch::Tensor few_rows_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias);

}  // namespace zoo::models
