#pragma once
// What the CPU kernels' loops share: GCC function multi-versioning (copies of a loop compiled
// for wider vector units beside the baseline, picked when the program loads, so that the loop
// is vectorised on the CPUs that have the units while the build stays portable), and bf16 <->
// fp32 conversion by bits, as c10::BFloat16 converts.
#include <cstdint>
#include <cstring>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
// AVX-512F and AVX2 copies.
#define ZOO_VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
// With AVX-512DQ too (x86-64-v4): loops with 64-bit integer multiplications (vpmullq).
#define ZOO_VECTOR_CLONES_V4 __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define ZOO_VECTOR_CLONES
#define ZOO_VECTOR_CLONES_V4
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

}  // namespace zoo::models
