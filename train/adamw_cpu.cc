#include "train/adamw_cpu.h"

#include <cmath>

#include "models/kernels/vectorize.h"

namespace zoo {

namespace {

// The vectorised copies need fused multiply-adds in hardware: AVX-512F's, or Haswell's with AVX2.
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ZOO_FMA_CLONES __attribute__((target_clones("avx512f", "arch=haswell", "default")))
#else
#define ZOO_FMA_CLONES
#endif

ZOO_FMA_CLONES void step(float* __restrict p, const float* __restrict g, float* __restrict m, float* __restrict v,
                         int64_t n, AdamWStep s) {
  for (int64_t i = 0; i < n; ++i) {
    const float gi = g[i];
    const float mi = std::fma(gi, s.one_minus_beta1, m[i] * s.beta1);
    const float vi = std::fma(s.one_minus_beta2 * gi, gi, v[i] * s.beta2);
    const float denom = std::sqrt(vi) / s.sqrt_bias_correction2 + s.eps;
    m[i] = mi, v[i] = vi;
    const float pi = p[i] * s.decay;
    p[i] = pi + (s.step_size * mi) / denom;
  }
}

}  // namespace

void adamw_step_cpu(float* p, const float* g, float* m, float* v, int64_t n, const AdamWStep& s) { step(p, g, m, v, n, s); }

}  // namespace zoo
