#include "train/weight_average.h"

#include <algorithm>

#include "io/checkpoint.h"

namespace zoo {

WeightAverage::WeightAverage(torch::nn::Module& model, double decay) : decay_(decay) {
  torch::NoGradGuard no_grad;
  for (auto& [name, t] : state_dict(model)) {
    live_.push_back(t);
    average_.push_back(t.detach().clone());
  }
}

double WeightAverage::decay_at(double decay, int64_t step) {
  return std::min(decay, (1.0 + static_cast<double>(step)) / (10.0 + static_cast<double>(step)));
}

void WeightAverage::update(int64_t step) {
  torch::NoGradGuard no_grad;
  const double d = decay_at(decay_, step);
  for (size_t i = 0; i < average_.size(); ++i) {
    if (average_[i].is_floating_point()) average_[i].lerp_(live_[i], 1.0 - d);  // d * average + (1 - d) * live
    else average_[i].copy_(live_[i]);
  }
}

void WeightAverage::swap() {
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < average_.size(); ++i) {
    auto held = live_[i].clone();
    live_[i].copy_(average_[i]);
    average_[i].copy_(held);
  }
}

}  // namespace zoo
