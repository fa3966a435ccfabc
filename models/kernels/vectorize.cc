#include "models/kernels/vectorize.h"

#include <limits>

namespace zoo::models {

ZOO_VECTOR_CLONES void widen(const uint16_t* __restrict in, float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
}

ZOO_VECTOR_CLONES void narrow(const float* __restrict in, uint16_t* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = to_bf16(in[i]);
}

ZOO_VECTOR_CLONES float max_of(const float* __restrict x, int64_t n) {
  constexpr int kLanes = 16;  // independent maxima, so that the loop vectorises
  float acc[kLanes];
  std::fill(acc, acc + kLanes, -std::numeric_limits<float>::infinity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] = x[i + k] > acc[k] ? x[i + k] : acc[k];
  float m = -std::numeric_limits<float>::infinity();
  for (; i < n; ++i) m = x[i] > m ? x[i] : m;
  for (float a : acc) m = a > m ? a : m;
  return m;
}

}  // namespace zoo::models
