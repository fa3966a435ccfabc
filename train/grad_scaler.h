#pragma once
// Dynamic loss scaling for fp16 autocast (train.precision=fp16), as PyTorch's GradScaler:
// the loss is multiplied by the scale before backward so that small gradients survive fp16,
// the gradients are divided by it before clipping and the optimizer step, a step whose
// gradients hold an inf or NaN is skipped and the scale halved, and the scale doubles after
// growth_interval clean steps in a row.
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/torch.h>

namespace zoo {

class GradScaler {
 public:
  struct Options {
    double init_scale = 65536.0;  // 2^16, PyTorch's default
    double growth_factor = 2.0;
    double backoff_factor = 0.5;
    int64_t growth_interval = 2000;
  };
  GradScaler() : GradScaler(Options{}) {}
  explicit GradScaler(const Options& options) : o_(options), scale_(options.init_scale) {}

  /// What the loss is multiplied by before backward.
  double scale() const { return scale_; }
  /// Divides every defined gradient of `params` by scale() in place; returns whether any of
  /// them holds an inf or NaN (then the step must be skipped). One multi-tensor kernel on
  /// CUDA; reads one number back.
  bool unscale(const std::vector<torch::Tensor>& params) const;
  /// After each step: the scale times backoff_factor when `found_inf` (and the run of clean
  /// steps restarts), else one more clean step, and times growth_factor after growth_interval
  /// of them.
  void update(bool found_inf);
  /// The state a checkpoint keeps (exact resume): {"scale", "growth_tracker"}.
  nlohmann::json state() const;
  void load(const nlohmann::json& state);
  int64_t growth_tracker() const { return growth_tracker_; }

 private:
  Options o_;
  double scale_;
  int64_t growth_tracker_ = 0;
};

}  // namespace zoo
