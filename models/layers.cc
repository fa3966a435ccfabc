#include "models/layers.h"

#include <cmath>

#include <torch/version.h>

namespace zoo::models {

torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           double dropout_p, bool training, bool causal) {
  const double p = training ? dropout_p : 0.0;
#if TORCH_VERSION_MAJOR >= 2
  return at::scaled_dot_product_attention(q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt,
                                          p, causal);
#else
  const int64_t tq = q.size(-2), tk = k.size(-2);
  // Scale q rather than the (T x T) scores: fewer multiplications, same result.
  auto scores = torch::matmul(q * (1.0 / std::sqrt(static_cast<double>(q.size(-1)))), k.transpose(-2, -1));
  if (causal) {
    auto keep = torch::ones({tq, tk}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).tril();
    scores = scores.masked_fill(keep.logical_not(), -std::numeric_limits<float>::infinity());
  }
  if (mask.defined()) scores = scores + mask;
  auto weights = torch::softmax(scores, -1);
  if (p > 0) weights = torch::dropout(weights, p, /*train=*/true);
  return torch::matmul(weights, v);
#endif
}

torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  const int64_t b = x.size(0), t = x.size(1), h = x.size(2);
  return x.view({b, t, heads, h / heads}).transpose(1, 2);  // (B, heads, T, d)
}

torch::Tensor merge_heads(const torch::Tensor& x) {
  const int64_t b = x.size(0), heads = x.size(1), t = x.size(2), d = x.size(3);
  return x.transpose(1, 2).reshape({b, t, heads * d});  // (B, T, H)
}

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names{"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu"};
  return names;
}

torch::Tensor activation(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu") return torch::gelu(x);
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return torch::gelu(x, "tanh");
  if (name == "relu") return torch::relu(x);
  if (name == "silu") return torch::silu(x);
  TORCH_CHECK(false, "unknown activation '", name, "'");
}

namespace {
// Truncated normal by inverse CDF, the method of torch.nn.init.trunc_normal_.
void trunc_normal_(torch::Tensor t, double std) {
  const double a = -2 * std, b = 2 * std;
  auto cdf = [](double x) { return (1.0 + std::erf(x / std::sqrt(2.0))) / 2.0; };
  const double l = cdf(a / std), u = cdf(b / std);
  t.uniform_(2 * l - 1, 2 * u - 1).erfinv_().mul_(std * std::sqrt(2.0)).clamp_(a, b);
}
}  // namespace

void init_weights_hf(torch::nn::Module& module, double std) {
  torch::NoGradGuard no_grad;
  for (auto& m : module.modules(/*include_self=*/false)) {  // callable from constructors
    if (auto* lin = m->as<torch::nn::Linear>()) {
      trunc_normal_(lin->weight, std);
      if (lin->bias.defined()) lin->bias.zero_();
    } else if (auto* conv = m->as<torch::nn::Conv2d>()) {
      trunc_normal_(conv->weight, std);
      if (conv->bias.defined()) conv->bias.zero_();
    } else if (auto* ln = m->as<torch::nn::LayerNorm>()) {
      ln->weight.fill_(1.0);
      ln->bias.zero_();
    } else if (auto* emb = m->as<torch::nn::Embedding>()) {
      emb->weight.normal_(0.0, std);
    }
  }
}

}  // namespace zoo::models
