#include "models/kernels/gelu.h"

#include <cmath>

namespace zoo::models {

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names{"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu"};
  return names;
}

namespace {
// Exact GELU, x * Phi(x), that keeps Phi(x) from the forward pass for the backward one.
// LibTorch's own backward computes erf a second time; erf is the dearest function in a
// small ViT's training step on the CPU (see the README's Benchmarks), exp is cheaper.
struct GeluKeepCdf : torch::autograd::Function<GeluKeepCdf> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    auto cdf = (x * M_SQRT1_2).erf_().add_(1).mul_(0.5);
    ctx->save_for_backward({x, cdf});
    return x * cdf;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& cdf = saved[1];
    constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)
    auto dx = x.square().mul_(-0.5).exp_().mul_(kInvSqrt2Pi).mul_(x).add_(cdf).mul_(grad[0]);
    return {dx};
  }
};
}  // namespace

torch::Tensor activation(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu") {
    if (x.device().is_cpu() && x.requires_grad() && torch::GradMode::is_enabled()) return GeluKeepCdf::apply(x);
    return torch::gelu(x);
  }
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return torch::gelu(x, "tanh");
  if (name == "relu") return torch::relu(x);
  if (name == "silu") return torch::silu(x);
  TORCH_CHECK(false, "unknown activation '", name, "'");
}

}  // namespace zoo::models
