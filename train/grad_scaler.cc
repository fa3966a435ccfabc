#include "train/grad_scaler.h"

#include <cmath>

#include "core/error.h"

namespace zoo {

bool GradScaler::unscale(const std::vector<torch::Tensor>& params) const {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return false;
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(grads.front().device());
  auto found = torch::zeros({1}, opts);
  const auto inv_scale = torch::full({1}, 1.0 / scale_, opts);
  if (grads.front().is_cuda()) {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found, inv_scale);
  } else {  // the same on the CPU, one tensor after the other
    for (auto& g : grads) {
      found += torch::logical_not(torch::isfinite(g)).any().to(torch::kFloat);
      g.mul_(inv_scale.to(g.scalar_type()));
    }
  }
  return found.item<float>() > 0;
}

void GradScaler::update(bool found_inf) {
  if (found_inf) {
    scale_ *= o_.backoff_factor;
    growth_tracker_ = 0;
    return;
  }
  if (++growth_tracker_ >= o_.growth_interval) {
    scale_ *= o_.growth_factor;
    growth_tracker_ = 0;
  }
}

nlohmann::json GradScaler::state() const { return {{"scale", scale_}, {"growth_tracker", growth_tracker_}}; }

void GradScaler::load(const nlohmann::json& state) {
  const double scale = state.at("scale").get<double>();
  if (!(std::isfinite(scale) && scale > 0)) throw Error(cat("grad_scaler.scale ", scale, " is not a positive number"));
  scale_ = scale;
  growth_tracker_ = state.at("growth_tracker").get<int64_t>();
}

}  // namespace zoo
