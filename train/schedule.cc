#include "train/schedule.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace zoo {

double lr_factor(const std::string& schedule, int64_t step, int64_t warmup, int64_t total, double min_rate) {
  const double s = static_cast<double>(step), w = static_cast<double>(warmup);
  if (schedule == "constant") return 1.0;
  if (warmup > 0 && step < warmup && schedule != "inverse_sqrt") return s / w;
  if (schedule == "constant_with_warmup") return 1.0;
  const double span = std::max<double>(1.0, static_cast<double>(total - warmup));
  const double progress = std::min(1.0, std::max(0.0, (s - w) / span));
  if (schedule == "linear") return 1.0 - progress;
  if (schedule == "cosine") return 0.5 * (1.0 + std::cos(M_PI * progress));
  if (schedule == "cosine_with_min_lr") return min_rate + (1.0 - min_rate) * 0.5 * (1.0 + std::cos(M_PI * progress));
  if (schedule == "inverse_sqrt") {
    // Noam (Vaswani et al. 2017): linear warmup to the peak at step `warmup`, then
    // decay with 1/sqrt(step); learning_rate is the peak.
    const double n = s + 1, ww = std::max(1.0, w);
    return std::min(n / ww, std::sqrt(ww / n));
  }
  throw Error(cat("unknown lr_scheduler_type '", schedule, "'"));
}

}  // namespace zoo
