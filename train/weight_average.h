#pragma once
// An exponential moving average of a model's weights (train.ema_decay).
#include <cstdint>
#include <vector>

#include <torch/torch.h>

namespace zoo {

/// Exponential moving average of a model's weights (Polyak averaging, timm's ModelEma):
/// after optimizer step n (1-based) every floating-point parameter and buffer moves
/// average = d * average + (1 - d) * weight, with d = decay_at(decay, n) = min(decay, (1 + n) / (10 + n))
/// so that the first averages are not dominated by the initial weights. Other buffers are
/// copied. The average starts as a copy of the model's current weights.
class WeightAverage {
 public:
  WeightAverage(torch::nn::Module& model, double decay);
  static double decay_at(double decay, int64_t step);
  void update(int64_t step);
  /// Exchanges the averages and the model's weights in place (a second call undoes it).
  void swap();
  /// The averaged tensors, in state_dict() order.
  const std::vector<torch::Tensor>& averages() const { return average_; }

 private:
  double decay_;
  std::vector<torch::Tensor> live_, average_;
};

/// The model holds the averages while alive (a no-op without an average): evaluations,
/// keep-best and model.safetensors use them.
class AveragedWeights {
 public:
  explicit AveragedWeights(WeightAverage* average) : average_(average) {
    if (average_) average_->swap();
  }
  ~AveragedWeights() {
    if (average_) average_->swap();
  }
  AveragedWeights(const AveragedWeights&) = delete;
  AveragedWeights& operator=(const AveragedWeights&) = delete;

 private:
  WeightAverage* average_;
};

}  // namespace zoo
