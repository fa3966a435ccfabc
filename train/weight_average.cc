#include "train/weight_average.h"

#include <algorithm>

#include "train/checkpoint.h"

namespace zoo {

WeightAverage::WeightAverage(torch::nn::Module& model, double decay) : decay_(decay) {
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : state_dict(model)) {
    live_.push_back(t);
    avg_.push_back(t.detach().clone());
  }
}

double WeightAverage::decay_at(double decay, int64_t step) {
  return std::min(decay, (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step)));
}

void WeightAverage::update(int64_t step) {
  torch::NoGradGuard no_grad;
  const double d = decay_at(decay_, step);
  for (size_t i = 0; i < avg_.size(); ++i) {
    if (avg_[i].is_floating_point()) avg_[i].lerp_(live_[i], 1.0 - d);  // d * avg + (1 - d) * live
    else avg_[i].copy_(live_[i]);
  }
}

void WeightAverage::swap() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < avg_.size(); ++i) {
    auto held = live_[i].clone();
    live_[i].copy_(avg_[i]);
    avg_[i].copy_(held);
  }
}

}  // namespace zoo
