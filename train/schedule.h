#pragma once
// Learning-rate schedules (train.lr_scheduler_type), as multipliers of the peak rate.
#include <cstdint>
#include <string>

namespace zoo {

/// Learning rate multiplier in [0, 1] for optimizer step `step` (0-based) of `total`.
double lr_factor(const std::string& schedule, int64_t step, int64_t warmup, int64_t total);

}  // namespace zoo
