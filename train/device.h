#pragma once
// Device choice: parsed and checked once (by the CLI), then passed down explicitly.
// There are no global device variables anywhere in zoo.
#include <string>

#include <torch/types.h>

namespace zoo {

/// Parses "auto" | "cpu" | "cuda" | "cuda:N" | "mps" and checks that this machine and
/// this LibTorch build can provide it; "auto" picks CUDA, else MPS, else CPU.
/// Throws zoo::Error with the reason (e.g. "this LibTorch was built without CUDA").
torch::Device resolve_device(const std::string& spec);

/// Human-readable report for `zoo devices`.
std::string describe_devices();

/// True when this LibTorch has MPS support compiled in and an MPS device is usable.
bool mps_available();

/// The CPU's native bfloat16 arithmetic, which oneDNN (LibTorch's mkldnn) uses for matrix
/// products under train.precision=bf16: "AMX-BF16" (Intel Xeon 4th generation and later),
/// "AVX512-BF16" (e.g. AMD Zen 4), or "" when the CPU has none (or this LibTorch has no
/// oneDNN): bf16 would then run through slow reference kernels, so zoo refuses it.
std::string cpu_bf16_support();

/// Whether CUDA device `index` computes in bf16 natively (compute capability >= 8.0, Ampere
/// and later); false when this build has no CUDA.
bool cuda_bf16_support(int64_t index);

}  // namespace zoo
