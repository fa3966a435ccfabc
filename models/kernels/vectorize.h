#pragma once
// What the CPU kernels' loops share: GCC function multi-versioning (copies of a loop compiled
// for wider vector units beside the baseline, picked when the program loads, so that the loop
// is vectorised on the CPUs that have the units while the build stays portable), and bf16 <->
// fp32 conversion by bits, as c10::BFloat16 converts.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <torch/torch.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
// AVX-512F and AVX2 copies.
#define ZOO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
// With AVX-512DQ too (x86-64-v4): loops with 64-bit integer multiplications (vpmullq).
#define ZOO_VECTOR_CLONES_V4 __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
// With AVX-512 VNNI too: GCC turns u8 x s8 sums into vpdpbusd (64 multiply-adds an instruction).
#define ZOO_INT8_CLONES __attribute__((target_clones("arch=icelake-server", "avx512f", "avx2", "default")))
#else
#define ZOO_VECTOR_CLONES
#define ZOO_VECTOR_CLONES_V4
#define ZOO_INT8_CLONES
#endif

namespace zoo::models {

/// bf16 bits -> fp32: the top half of the float.
inline float from_bf16(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

/// fp32 -> bf16 bits, rounded to nearest even; NaN stays NaN (0x7FC0).
inline uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const auto rounded = static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
  return f != f ? uint16_t{0x7FC0} : rounded;
}

/// bf16 -> fp32 and fp32 -> bf16 (as to_bf16) of n values: loops vectorised by
/// ZOO_VECTOR_CLONES, for the kernels that work on bf16 tensors a chunk at a time in fp32.
void widen(const uint16_t* __restrict in, float* __restrict out, int64_t n);
void narrow(const float* __restrict in, uint16_t* __restrict out, int64_t n);

/// The largest of x[0..n) (-inf for n = 0; NaN values are skipped), vectorised.
float max_of(const float* __restrict x, int64_t n);

/// The data of a contiguous fp32 (T = float) or bf16 (T = uint16_t, its bits) CPU tensor, as the
/// kernels' loops take it.
template <typename T>
T* data_as(const torch::Tensor& t) {
  if constexpr (std::is_same_v<T, float>) return t.data_ptr<float>();
  else return reinterpret_cast<T*>(t.data_ptr<c10::BFloat16>());
}

/// e^x as Cephes' expf computes it (x = n ln 2 + r, a degree-5 polynomial in r, 2^n from the
/// exponent bits), in plain arithmetic that the compiler vectorises; x is clamped to
/// [-87, 88]. Relative error about 1e-7.
inline float exp_cephes(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // x / ln 2 to the nearest integer
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;                // x - n ln 2, ln 2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  const int32_t bits = (static_cast<int32_t>(n) + 127) << 23;
  float two_n;
  std::memcpy(&two_n, &bits, sizeof two_n);
  return (p * r * r + r + 1.0f) * two_n;
}

}  // namespace zoo::models
