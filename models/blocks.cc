#include "models/blocks.h"

#include <cmath>

#include "models/kernels/dropout.h"
#include "models/kernels/gelu.h"
#include "models/kernels/linear.h"
#include "models/module_path.h"

namespace zoo::models {

namespace {
// Dropout while `m` (a layer of the block, hence in the model's tree) is in training mode.
torch::Tensor dropout_if_training(const torch::Tensor& x, double p, const torch::nn::Module& m) {
  return apply_dropout(x, p, m.is_training());
}
}  // namespace

FeedForward::FeedForward(torch::nn::Module& owner, const FeedForwardOptions& o) : options(o) {
  fc1 = register_at(owner, o.fc1_name(), torch::nn::Linear(o.hidden_size(), o.intermediate_size()));
  fc2 = register_at(owner, o.fc2_name(), torch::nn::Linear(o.intermediate_size(), o.hidden_size()));
}

torch::Tensor FeedForward::operator()(const torch::Tensor& x) {
  auto h = dropout_if_training(activation(options.activation(), linear(x, fc1)), options.activation_dropout(), *fc1);  // (B, T, I)
  return dropout_if_training(linear(h, fc2), options.dropout(), *fc2);
}

Residual::Residual(torch::nn::Module& owner, const ResidualOptions& o) : options(o) {
  norm = register_at(owner, o.norm_name(),
                     torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size()}).eps(o.eps())));
}

torch::Tensor Residual::drop(const torch::Tensor& x) const { return dropout_if_training(x, options.dropout(), *norm); }

torch::Tensor sinusoidal_positions(int64_t max_positions, int64_t dim, bool interleaved) {
  const auto opts = torch::TensorOptions().dtype(torch::kDouble);  // angles up to max_positions: keep the digits
  auto pos = torch::arange(max_positions, opts).unsqueeze(1);                       // (P, 1)
  auto i = torch::arange((dim + 1) / 2, opts);                                       // pair index
  auto angle = pos / torch::pow(10000.0, 2.0 * i / static_cast<double>(dim));        // (P, ceil(dim/2))
  auto sin = angle.sin(), cos = angle.narrow(1, 0, dim / 2).cos();
  torch::Tensor table;
  if (interleaved) {
    table = torch::empty({max_positions, dim}, opts);
    table.slice(1, 0, dim, 2).copy_(sin);
    table.slice(1, 1, dim, 2).copy_(cos);
  } else {
    table = torch::cat({sin, cos}, 1);
  }
  return table.to(torch::kFloat);
}

SinusoidalPositionsImpl::SinusoidalPositionsImpl(int64_t max_positions, int64_t dim, bool interleaved) {
  weight = register_buffer("weight", sinusoidal_positions(max_positions, dim, interleaved));
}

torch::Tensor SinusoidalPositionsImpl::forward(const torch::Tensor& x, int64_t offset) {
  TORCH_CHECK(offset + x.size(1) <= weight.size(0), "positions ", offset, "..", offset + x.size(1) - 1,
              " beyond the table's ", weight.size(0));
  return x + weight.narrow(0, offset, x.size(1));
}

LearnedPositions::LearnedPositions(torch::nn::Module& owner, const LearnedPositionsOptions& o) : options(o) {
  if (o.as_parameter()) {
    weight = register_parameter_at(owner, o.name(), torch::zeros({1, o.max_positions(), o.dim()}));
  } else {
    weight = register_at(owner, o.name(), torch::nn::Embedding(o.max_positions(), o.dim()))->weight;
  }
}

torch::Tensor LearnedPositions::operator()(const torch::Tensor& x, int64_t offset) const {
  const int64_t t = x.size(1), dim = weight.dim() - 2;  // the table's position dimension
  TORCH_CHECK(offset + t <= options.max_positions(), "positions ", offset, "..", offset + t - 1, " beyond the ",
              options.max_positions(), " learned ones");
  // The whole table as is when it fits exactly (ViT): a narrowed view would cost a zero-filled
  // gradient buffer in backward.
  return x + (offset == 0 && t == options.max_positions() ? weight : weight.narrow(dim, offset, t));
}

torch::Tensor LearnedPositions::operator()(const torch::Tensor& x, const torch::Tensor& positions) const {
  TORCH_CHECK(weight.dim() == 2, "per-sequence positions need an Embedding's table");
  TORCH_CHECK(positions.numel() == 0 || positions.max().item<int64_t>() < options.max_positions(),
              "positions beyond the ", options.max_positions(), " learned ones");
  return x + torch::embedding(weight, positions);
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
