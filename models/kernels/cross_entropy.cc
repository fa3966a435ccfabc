#include "models/kernels/cross_entropy.h"

#include <limits>
#include <utility>

#include <ATen/core/dispatch/Dispatcher.h>

#include "models/autocast_state.h"
#include "models/kernels/linear.h"
#include "models/kernels/softmax_rows.h"

namespace zoo::models {

namespace {

constexpr int64_t kIgnoreIndex = -100;  // F::cross_entropy's default

// The matrix product that writes fp32 from fp16 or bf16 operands, `aten::mm.dtype` (LibTorch
// 2.8 and later, CUDA), looked up by name so that one source builds against every LibTorch.
using MmDtype = at::Tensor(const at::Tensor&, const at::Tensor&, at::ScalarType);
const c10::optional<c10::TypedOperatorHandle<MmDtype>>& mm_dtype() {
  static const auto op = []() -> c10::optional<c10::TypedOperatorHandle<MmDtype>> {
    const auto handle = c10::Dispatcher::singleton().findSchema({"aten::mm", "dtype"});
    if (!handle) return c10::nullopt;
    try {
      return handle->typed<MmDtype>();
    } catch (const c10::Error&) {  // another signature than 2.8's
      return c10::nullopt;
    }
  }();
  return op;
}

// a b in fp32: the product's own output where the operands are narrower.
torch::Tensor mm_float(const torch::Tensor& a, const torch::Tensor& b) {
  if (a.scalar_type() == at::kFloat) return at::mm(a, b);
  return mm_dtype() ? mm_dtype()->call(a, b, at::kFloat) : at::mm(a, b).to(at::kFloat);
}

// Autocast off for this scope (the fused loss picks its own dtypes), then as it was.
class NoAutocast {
 public:
  NoAutocast() : saved_(AutocastState::current()) { AutocastState{}.apply(); }
  ~NoAutocast() { saved_.apply(); }
  NoAutocast(const NoAutocast&) = delete;
  NoAutocast& operator=(const NoAutocast&) = delete;

 private:
  AutocastState saved_;
};

// How many zero rows pad W to a multiple of `pad_to`.
int64_t padding_rows(int64_t n, int64_t pad_to) { return (n + pad_to - 1) / pad_to * pad_to - n; }

// The padding's bias: 0 for the n real words, -inf for the `extra` padded ones.
torch::Tensor padding_bias(int64_t n, int64_t extra, const torch::TensorOptions& options) {
  auto bias = torch::zeros({n + extra}, options.requires_grad(false));
  bias.narrow(0, n, extra).fill_(-std::numeric_limits<float>::infinity());
  return bias;
}

// W with `extra` zero rows, and the -inf bias of those rows (undefined when there are none).
std::pair<torch::Tensor, torch::Tensor> padded(const torch::Tensor& weight, int64_t extra) {
  if (extra == 0) return {weight, torch::Tensor()};
  return {torch::constant_pad_nd(weight, {0, 0, 0, extra}), padding_bias(weight.size(0), extra, weight.options())};
}

struct FusedLinearCrossEntropy : torch::autograd::Function<FusedLinearCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& labels, int64_t pad_to,
                               torch::ScalarType dtype) {
    NoAutocast no_autocast;
    const auto rows = x.reshape({-1, x.size(-1)}).to(dtype);
    const auto [w, bias] = padded(weight.to(dtype), padding_rows(weight.size(0), pad_to));
    const auto logits = bias.defined() ? at::addmm(bias, rows, w.t()) : at::mm(rows, w.t());
    const auto log_p = at::log_softmax(logits, 1, at::kFloat);
    const auto flat = labels.reshape({-1});
    ctx->save_for_backward({rows, w, log_p, flat});
    ctx->saved_data["x_sizes"] = x.sizes();
    ctx->saved_data["x_dtype"] = x.scalar_type();
    ctx->saved_data["w_dtype"] = weight.scalar_type();
    ctx->saved_data["words"] = weight.size(0);
    return at::nll_loss(log_p, flat, {}, at::Reduction::Mean, kIgnoreIndex);
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    NoAutocast no_autocast;
    const auto saved = ctx->get_saved_variables();
    const auto &rows = saved[0], &w = saved[1], &log_p = saved[2], &flat = saved[3];
    auto& data = ctx->saved_data;
    // d(sum of the rows' losses)/d(logits) = softmax - onehot(label), in the product's dtype.
    auto d_logits = at::empty(log_p.sizes(), log_p.options().dtype(rows.scalar_type()));
    at::exp_out(d_logits, log_p);
    const auto valid = flat.ne(kIgnoreIndex);
    const auto target = flat.masked_fill(valid.logical_not(), 0).unsqueeze(1);
    d_logits.scatter_add_(1, target, at::full({flat.size(0), 1}, -1.0, d_logits.options()));
    // Ignored rows (their onehot went to word 0) are zeroed through the products' small operands.
    const auto keep = valid.unsqueeze(1).to(rows.scalar_type());
    const auto scale = grad[0].to(at::kFloat) / valid.sum().to(at::kFloat);  // on the device: no sync
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = mm_float(d_logits, w).mul_(keep).mul_(scale);
      dx = dx.to(data["x_dtype"].toScalarType()).view(data["x_sizes"].toIntVector());
    }
    if (ctx->needs_input_grad(1)) {
      dw = mm_float(d_logits.t(), rows * keep).narrow(0, 0, data["words"].toInt()).mul_(scale);
      dw = dw.to(data["w_dtype"].toScalarType());
    }
    return {dx, dw, torch::Tensor(), torch::Tensor(), torch::Tensor()};
  }
};

// The output layer and its loss on the CPU: the product in bf16 under autocast (else in x's
// dtype), the loss from its scores by softmax_rows (no fp32 copy of them, no log-probabilities),
// and in the backward pass the scores turned into their gradient in place for the products.
struct CpuLinearCrossEntropy : torch::autograd::Function<CpuLinearCrossEntropy> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x,
                               const torch::Tensor& weight, const torch::Tensor& labels,
                               const c10::optional<torch::Tensor>& bias) {
    const auto autocast = AutocastState::current();
    const auto dtype = autocast.cpu ? autocast.cpu_dtype : x.scalar_type();
    NoAutocast no_autocast;
    const auto rows = x.reshape({-1, x.size(-1)}).to(dtype).contiguous();
    const auto w = weight.to(dtype);
    // The bias goes to the row kernel, which adds it in fp32: addmm would first broadcast it
    // into the scores (docs/results.md, *BERT-tiny's pretraining step*).
    auto logits = at::mm(rows, w.t());
    const auto b = bias ? bias->detach().to(at::kFloat) : torch::Tensor();
    const auto flat = labels.reshape({-1});
    const auto [stats, loss] = softmax_rows_loss(logits, flat, kIgnoreIndex, b);
    const auto valid = flat.ne(kIgnoreIndex).sum().to(at::kFloat);
    // The scores become their gradient in place: a second backward pass through this one
    // fails autograd's check of the saved tensors' versions.
    ctx->save_for_backward({rows, w, logits, stats, flat, valid, b});
    ctx->saved_data["x_sizes"] = x.sizes();
    ctx->saved_data["x_dtype"] = x.scalar_type();
    ctx->saved_data["w_dtype"] = weight.scalar_type();
    ctx->saved_data["b_dtype"] = bias ? bias->scalar_type() : at::kFloat;
    return loss.sum() / valid;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    NoAutocast no_autocast;
    auto saved = ctx->get_saved_variables();
    const auto &rows = saved[0], &w = saved[1], &stats = saved[3], &flat = saved[4], &valid = saved[5], &b = saved[6];
    auto& d = saved[2];
    auto& data = ctx->saved_data;
    const auto db = softmax_rows_gradient_(d, stats, flat, grad[0].item<float>() / valid.item<float>(), kIgnoreIndex, b);
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0))
      dx = at::mm(d, w).to(data["x_dtype"].toScalarType()).view(data["x_sizes"].toIntVector());
    if (ctx->needs_input_grad(1)) dw = at::mm(d.t(), rows).to(data["w_dtype"].toScalarType());
    // The bias, when given, is the fourth input autograd tracks (labels, third, has no gradient).
    const bool bias_grad = db.defined() && ctx->needs_input_grad(3);
    return {dx, dw, torch::Tensor(), bias_grad ? db.to(data["b_dtype"].toScalarType()) : torch::Tensor()};
  }
};

// `pad_to` = 0: as linear() pads, on CUDA.
int64_t default_padding(const torch::Tensor& x, const torch::Tensor& weight) {
  return x.is_cuda() && pads_output_width(x, weight) ? 64 : 1;
}

// Whether the fused fp16 form applies: CUDA, a reduced-precision step, LibTorch >= 2.8 (whose
// products write fp32 from fp16: the weight gradient in fp16 would overflow or underflow).
bool fuses_in_half(const torch::Tensor& x) {
  if (!x.is_cuda() || !mm_dtype()) return false;
  return AutocastState::current().cuda || x.scalar_type() == at::kHalf || x.scalar_type() == at::kBFloat16;
}

}  // namespace

torch::Tensor linear_cross_entropy_fused(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& labels,
                                         int64_t pad_to, torch::ScalarType dtype) {
  return FusedLinearCrossEntropy::apply(x, weight, labels, std::max<int64_t>(pad_to, 1), dtype);
}

torch::Tensor linear_cross_entropy_unfused(const torch::Tensor& x, const torch::Tensor& weight,
                                           const torch::Tensor& labels, int64_t pad_to, const torch::Tensor& bias) {
  if (pad_to == 0) pad_to = default_padding(x, weight);
  const int64_t extra = padding_rows(weight.size(0), pad_to);
  torch::Tensor logits;
  if (extra == 0) {
    logits = linear(x, weight, bias);
  } else {
    const auto [w, padding] = padded(weight, extra);
    logits = at::linear(x, w, bias.defined() ? torch::cat({bias, torch::zeros({extra}, bias.options())}) + padding : padding);
  }
  return torch::nn::functional::cross_entropy(logits.to(torch::kFloat).flatten(0, -2), labels.flatten());
}

torch::Tensor linear_cross_entropy(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& labels,
                                   int64_t pad_to, const torch::Tensor& bias) {
  if (x.device().is_cpu())
    return CpuLinearCrossEntropy::apply(x, weight, labels, bias.defined() ? c10::optional<torch::Tensor>(bias) : c10::nullopt);
  if (pad_to == 0) pad_to = default_padding(x, weight);
  if (fuses_in_half(x) && !bias.defined()) return linear_cross_entropy_fused(x, weight, labels, pad_to, at::kHalf);
  return linear_cross_entropy_unfused(x, weight, labels, pad_to, bias);
}

}  // namespace zoo::models
