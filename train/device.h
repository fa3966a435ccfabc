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

/// Sets LibTorch's intra-op threads (0: one per core, unless OMP_NUM_THREADS is set) and,
/// when LibTorch runs BLAS through OpenBLAS's own thread pool, gives OpenBLAS as many threads
/// when OMP_WAIT_POLICY is passive (see use_passive_openmp) and makes it single-threaded
/// otherwise (unless OPENBLAS_NUM_THREADS is set), so the two pools do not fight over the
/// cores: on a 2-core machine that oversubscription costs ~35% of a ViT training step.
/// On glibc it also keeps freed tensor buffers in the heap (mallopt: no mmap below 32 MiB,
/// no trimming) instead of returning them to the OS and page-faulting them back every step:
/// measured 250-300 -> 181 ms per ViT training step here.
void configure_cpu_threads(int threads = 0);

/// Call first thing in main(). OpenMP threads (LibTorch's intra-op pool) busy-wait after each
/// parallel region by default, taking the cores from OpenBLAS's own pool, so BLAS has to run
/// single-threaded. With OMP_WAIT_POLICY=PASSIVE they sleep instead and both pools can use
/// every core: measured here (2 cores) 1098 -> 767 ms per seq2seq training step, ViT
/// unchanged. OpenMP reads the variable when it loads, before main(), so when it is unset
/// this sets it and re-executes the program (Linux, /proc/self/exe) with the same arguments;
/// a user's own OMP_WAIT_POLICY is left alone. Returns only if no re-execution happened.
void use_passive_openmp(char** argv);

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
