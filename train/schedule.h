#pragma once
// Learning-rate schedules (train.lr_scheduler_type), as multipliers of the peak rate.
#include <cstdint>
#include <string>

namespace zoo {

/// Learning rate multiplier in [0, 1] for optimizer step `step` (0-based) of `total`.
/// "cosine_with_min_lr" decays from 1 to `min_rate` (Hugging Face's min_lr_rate; nanoGPT's
/// min_lr / learning_rate).
double lr_factor(const std::string& schedule, int64_t step, int64_t warmup, int64_t total, double min_rate = 0.0);

}  // namespace zoo
