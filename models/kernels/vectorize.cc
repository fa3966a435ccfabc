#include "models/kernels/vectorize.h"

namespace zoo::models {

ZOO_VECTOR_CLONES void widen(const uint16_t* __restrict in, float* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = from_bf16(in[i]);
}

ZOO_VECTOR_CLONES void narrow(const float* __restrict in, uint16_t* __restrict out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = to_bf16(in[i]);
}

}  // namespace zoo::models
