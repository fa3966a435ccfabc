#pragma once
// AdamW's update of one fp32 tensor on the CPU in a single pass over its values: what
// ThreadedAdamW (train/optimizers.h) runs there instead of LibTorch's seven tensor operations
// per parameter, each a pass over memory (the word embedding is most of a small BERT's).
#include <cstdint>

namespace zoo {

/// The step's numbers, as LibTorch's AdamW::step rounds them to fp32 for its operations.
struct AdamWStep {
  float decay;                 // 1 - lr weight_decay
  float beta1, one_minus_beta1, beta2, one_minus_beta2;
  float sqrt_bias_correction2;  // sqrt(1 - beta2^step)
  float eps;
  float step_size;             // -lr / (1 - beta1^step)
};

/// p, m (exp_avg) and v (exp_avg_sq) updated in place from g, n values each, element by element
/// with LibTorch 1.13's arithmetic on the CPU: p *= decay; m = fma(g, 1 - beta1, m beta1) (its
/// add_ with alpha is a fused multiply-add); v = v beta2 + (1 - beta2) g g; p += step_size m /
/// (sqrt(v) / sqrt_bias_correction2 + eps).
void adamw_step_cpu(float* p, const float* g, float* m, float* v, int64_t n, const AdamWStep& s);

}  // namespace zoo
