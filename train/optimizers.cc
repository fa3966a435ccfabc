#include "train/optimizers.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <type_traits>
#include <utility>

#include <ATen/Parallel.h>

#include "core/error.h"
#include "train/adamw_cpu.h"

// at::_fused_adamw_ (CUDA) is in LibTorch 2.1 and later.
#if defined(TORCH_VERSION_MAJOR) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1))
#define ZOO_FUSED_ADAMW 1
#else
#define ZOO_FUSED_ADAMW 0
#endif
// ... and its overload with the learning rate as a tensor on the device: 2.2 and later.
#if defined(TORCH_VERSION_MAJOR) && !defined(ZOO_NO_CUDA_GRAPHS) && \
    (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2))
#define ZOO_FUSED_ADAMW_TENSOR_LR 1
#else
#define ZOO_FUSED_ADAMW_TENSOR_LR 0
#endif

namespace zoo {

namespace {
// The key under which LibTorch's optimizers keep a parameter's state: its TensorImpl's
// address, printed (LibTorch 1.x) or as a pointer (newer LibTorch).
template <class Key>
Key optimizer_state_key(const torch::Tensor& p) {
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << p.unsafeGetTensorImpl();
    return os.str();
  } else {
    return p.unsafeGetTensorImpl();
  }
}

// Splits the parameters into (decay, no_decay): decay on matrices whose name holds none of
// `exclude`'s fragments; frozen parameters in neither. A fragment that names no parameter is a
// typo: said before training.
std::pair<std::vector<torch::Tensor>, std::vector<torch::Tensor>> split_by_decay(
    const torch::OrderedDict<std::string, torch::Tensor>& named, const std::vector<std::string>& exclude) {
  std::vector<torch::Tensor> decay, no_decay;
  std::vector<bool> used(exclude.size(), false);
  for (const auto& p : named) {
    bool excluded = false;
    for (size_t i = 0; i < exclude.size(); ++i)
      if (p.key().find(exclude[i]) != std::string::npos) excluded = used[i] = true;
    if (!p.value().requires_grad()) continue;  // frozen (a LoRA run's base): no optimizer state
    (p.value().dim() >= 2 && !excluded ? decay : no_decay).push_back(p.value());
  }
  for (size_t i = 0; i < exclude.size(); ++i) {
    if (used[i]) continue;
    std::string examples;
    for (size_t k = 0; k < std::min<size_t>(3, named.size()); ++k) examples += (k ? ", " : "") + named[k].key();
    throw Error(cat("train.weight_decay_exclude: \"", exclude[i], "\" is in no parameter name of the model (",
                    examples, ", ...): fix or remove it"));
  }
  return {std::move(decay), std::move(no_decay)};
}

}  // namespace

struct ThreadedAdamW::Work {
  torch::Tensor param;
  torch::optim::AdamWParamState* state;
  const torch::optim::AdamWOptions* options;
};

// On CUDA, each run of parameters with the same options and dtype is updated by LibTorch's
// fused AdamW kernel (PyTorch's AdamW(fused=True)): one launch instead of about ten per
// parameter. Same state; the arithmetic agrees to rounding, not bit for bit.
void ThreadedAdamW::fused_update([[maybe_unused]] const std::vector<Work>& work) {
#if ZOO_FUSED_ADAMW
  for (size_t begin = 0; begin < work.size();) {
    size_t end = begin + 1;
    const auto& o = *work[begin].options;
    const auto dtype = work[begin].param.scalar_type();
    while (end < work.size() && work[end].options == &o && work[end].param.scalar_type() == dtype) ++end;
    std::vector<torch::Tensor> params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps;
    for (size_t i = begin; i < end; ++i) {
      auto& s = *work[i].state;
      auto& d = device_steps_[work[i].param.unsafeGetTensorImpl()];
      if (!d.count.defined() || d.host != static_cast<double>(s.step()))
        d.count = torch::full({}, static_cast<double>(s.step()),
                              torch::TensorOptions().dtype(torch::kFloat).device(work[i].param.device()));
      if (!capturing_) {
        s.step(s.step() + 1);
        d.host = static_cast<double>(s.step());
      }
      params.push_back(work[i].param);
      grads.push_back(work[i].param.grad());
      exp_avgs.push_back(s.exp_avg());
      exp_avg_sqs.push_back(s.exp_avg_sq());
      if (o.amsgrad()) max_exp_avg_sqs.push_back(s.max_exp_avg_sq());
      steps.push_back(d.count);
    }
    torch::_foreach_add_(steps, 1);  // the kernel reads each parameter's step count on the device
    const auto [beta1, beta2] = o.betas();
#if ZOO_FUSED_ADAMW_TENSOR_LR
    const auto lr = device_lr(o, work[begin].param.device());
#else
    const double lr = o.lr();
#endif
    at::_fused_adamw_(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, steps, lr, beta1, beta2,
                      o.weight_decay(), o.eps(), o.amsgrad(), /*maximize=*/false);
    begin = end;
  }
#endif
}

// The group's learning rate as a tensor on `device`, written from its options unless a step is
// being captured (before_replay() writes it then).
torch::Tensor ThreadedAdamW::device_lr(const torch::optim::AdamWOptions& o, const torch::Device& device) {
  auto& lr = device_lrs_[&o];
  if (!lr.defined()) lr = torch::empty({}, torch::TensorOptions().dtype(torch::kFloat).device(device));
  if (!capturing_) lr.fill_(o.lr());
  return lr;
}

void ThreadedAdamW::before_replay() {
  for (const auto& w : collect()) {
    auto& s = *w.state;
    s.step(s.step() + 1);
    device_steps_[w.param.unsafeGetTensorImpl()].host = static_cast<double>(s.step());
  }
  for (auto& [options, lr] : device_lrs_) lr.fill_(options->lr());
}

std::vector<double> layer_lr_scales(const torch::OrderedDict<std::string, torch::Tensor>& named, double decay) {
  static const std::regex layer(R"((^|\.)(layer|layers|h)\.(\d+)\.)");
  static const std::regex embedding(R"(embed|(^|\.)(wte|wpe)\.)");
  std::vector<int64_t> depth(named.size(), -1);  // -1: the head, until the layers are counted
  int64_t layers = 0;
  for (size_t i = 0; i < named.size(); ++i) {
    std::smatch m;
    if (std::regex_search(named[i].key(), m, layer)) {
      depth[i] = std::stoll(m[3].str()) + 1;
      layers = std::max(layers, depth[i]);
    } else if (std::regex_search(named[i].key(), embedding)) {
      depth[i] = 0;
    }
  }
  std::vector<double> scales(named.size(), 1.0);
  if (decay == 1.0) return scales;
  for (size_t i = 0; i < named.size(); ++i)
    if (depth[i] >= 0) scales[i] = std::pow(decay, static_cast<double>(layers + 1 - depth[i]));
  return scales;
}

std::unique_ptr<torch::optim::Optimizer> make_optimizer(torch::nn::Module& model, const TrainOptions& o) {
  const auto named = model.named_parameters();
  auto [decay, no_decay] = split_by_decay(named, o.weight_decay_exclude);
  // Each parameter's share of the learning rate (1 unless train.layer_lr_decay): the groups
  // are (decay, no decay) per share, highest share first.
  const std::vector<double> shares = layer_lr_scales(named, o.layer_lr_decay);
  std::map<const c10::TensorImpl*, double> share_of;
  for (size_t i = 0; i < named.size(); ++i) share_of[named[i].value().unsafeGetTensorImpl()] = shares[i];
  std::vector<double> levels(shares.begin(), shares.end());
  std::sort(levels.begin(), levels.end(), std::greater<>());
  levels.erase(std::unique(levels.begin(), levels.end()), levels.end());
  std::vector<torch::optim::OptimizerParamGroup> groups;
  auto add = [&](const std::vector<torch::Tensor>& params, auto options) {
    for (double level : levels) {
      std::vector<torch::Tensor> mine;
      for (const auto& p : params)
        if (share_of.at(p.unsafeGetTensorImpl()) == level) mine.push_back(p);
      if (mine.empty()) continue;
      auto scaled = std::make_unique<decltype(options)>(options);
      scaled->lr(options.lr() * level);
      groups.emplace_back(mine, std::move(scaled));
    }
  };
  if (o.optim == "adamw" || o.optim == "adam") {
    auto base = torch::optim::AdamWOptions(o.learning_rate)
                    .betas({o.adam_beta1, o.adam_beta2})
                    .eps(o.adam_epsilon);
    if (o.optim == "adamw") {
      add(decay, torch::optim::AdamWOptions(base).weight_decay(o.weight_decay));
      add(no_decay, torch::optim::AdamWOptions(base).weight_decay(0.0));
      return std::make_unique<ThreadedAdamW>(groups, base);
    }
    auto adam = torch::optim::AdamOptions(o.learning_rate).betas({o.adam_beta1, o.adam_beta2}).eps(o.adam_epsilon);
    add(decay, torch::optim::AdamOptions(adam).weight_decay(o.weight_decay));
    add(no_decay, torch::optim::AdamOptions(adam).weight_decay(0.0));
    return std::make_unique<torch::optim::Adam>(groups, adam);
  }
  auto sgd = torch::optim::SGDOptions(o.learning_rate).momentum(o.momentum);
  add(decay, torch::optim::SGDOptions(sgd).weight_decay(o.weight_decay));
  add(no_decay, torch::optim::SGDOptions(sgd).weight_decay(0.0));
  return std::make_unique<torch::optim::SGD>(groups, sgd);
}

double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm) {
  for (const auto& p : params)
    if (p.grad().defined())
      return p.grad().is_cpu() ? torch::nn::utils::clip_grad_norm_(params, max_norm)
                               : clip_grad_norm_foreach(params, max_norm);
  return 0.0;
}

double clip_grad_norm_foreach(const std::vector<torch::Tensor>& params, double max_norm) {
  const auto norm = clip_grad_norm_async(params, max_norm);
  return norm.defined() ? norm.item<double>() : 0.0;
}

torch::Tensor clip_grad_norm_async(const std::vector<torch::Tensor>& params, double max_norm) {
  torch::NoGradGuard no_grad;
  std::vector<torch::Tensor> grads;
  for (const auto& p : params)
    if (p.grad().defined()) grads.push_back(p.grad());
  if (grads.empty()) return {};
  auto norm = torch::stack(torch::_foreach_norm(grads, 2)).norm();
  // As LibTorch's: the gradients times min(1, max_norm / (norm + 1e-6)); a factor of exactly 1
  // leaves them as they are.
  const auto coef = (max_norm / (norm + 1e-6)).clamp_max(1.0);
#if ZOO_FUSED_ADAMW_TENSOR_LR  // the same LibTorch versions have a tensor factor for _foreach_mul_
  torch::_foreach_mul_(grads, coef.to(grads.front().scalar_type()));
#else
  for (auto& g : grads) g.mul_(coef.to(g.scalar_type()));
#endif
  return norm;
}

namespace {
// Whether adamw_step_cpu updates p: fp32 on the CPU, p, its gradient and its moments contiguous
// (so that the four are read in the same order), without amsgrad.
bool one_pass(const torch::Tensor& p, torch::optim::AdamWParamState& s, const torch::optim::AdamWOptions& o) {
  const auto& g = p.grad();
  return p.device().is_cpu() && !o.amsgrad() && p.scalar_type() == torch::kFloat && g.scalar_type() == torch::kFloat &&
         p.is_contiguous() && g.is_contiguous() && s.exp_avg().is_contiguous() && s.exp_avg_sq().is_contiguous() &&
         s.exp_avg().scalar_type() == torch::kFloat && s.exp_avg_sq().scalar_type() == torch::kFloat;
}
}  // namespace

// The parameters with a gradient, each with its state (created as AdamW::step does) and its
// group's options.
std::vector<ThreadedAdamW::Work> ThreadedAdamW::collect() {
  std::vector<Work> work;
  for (auto& group : param_groups_) {
    const auto& options = static_cast<const torch::optim::AdamWOptions&>(group.options());
    for (auto& p : group.params()) {
      if (!p.grad().defined()) continue;
      TORCH_CHECK(!p.grad().is_sparse(), "AdamW does not support sparse gradients");
      auto& slot = state_[optimizer_state_key<std::decay_t<decltype(state_)>::key_type>(p)];
      if (!slot) {  // created here, before the threads start, exactly as AdamW::step does
        auto state = std::make_unique<torch::optim::AdamWParamState>();
        state->step(0);
        state->exp_avg(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        state->exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        if (options.amsgrad()) state->max_exp_avg_sq(torch::zeros_like(p, torch::MemoryFormat::Preserve));
        slot = std::move(state);
      }
      work.push_back({p, static_cast<torch::optim::AdamWParamState*>(slot.get()), &options});
    }
  }
  return work;
}

torch::Tensor ThreadedAdamW::step(LossClosure closure) {
  torch::NoGradGuard no_grad;
  torch::Tensor loss;
  if (closure) {
    torch::AutoGradMode enable_grad(true);
    loss = closure();
  }
  const std::vector<Work> work = collect();
  int64_t total = 0;
  for (const auto& w : work) total += w.param.numel();
  auto update = [](const Work& w) {
    auto& p = const_cast<torch::Tensor&>(w.param);
    const auto& grad = p.grad();
    const auto& o = *w.options;
    auto& s = *w.state;
    s.step(s.step() + 1);
    const auto [beta1, beta2] = o.betas();
    const double bias_correction1 = 1 - std::pow(beta1, s.step());
    const double bias_correction2 = 1 - std::pow(beta2, s.step());
    if (one_pass(p, s, o)) {
      const AdamWStep k{static_cast<float>(1 - o.lr() * o.weight_decay()), static_cast<float>(beta1),
                        static_cast<float>(1 - beta1), static_cast<float>(beta2), static_cast<float>(1 - beta2),
                        static_cast<float>(std::sqrt(bias_correction2)), static_cast<float>(o.eps()),
                        static_cast<float>(-o.lr() / bias_correction1)};
      adamw_step_cpu(p.data_ptr<float>(), grad.data_ptr<float>(), s.exp_avg().data_ptr<float>(),
                     s.exp_avg_sq().data_ptr<float>(), p.numel(), k);
      return;
    }
    if (o.weight_decay() != 0) p.mul_(1 - o.lr() * o.weight_decay());
    s.exp_avg().mul_(beta1).add_(grad, 1 - beta1);
    s.exp_avg_sq().mul_(beta2).addcmul_(grad, grad, 1 - beta2);
    torch::Tensor denom;
    if (o.amsgrad()) {
      torch::max_out(s.max_exp_avg_sq(), s.exp_avg_sq(), s.max_exp_avg_sq());
      denom = (s.max_exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
    } else {
      denom = (s.exp_avg_sq().sqrt() / std::sqrt(bias_correction2)).add_(o.eps());
    }
    p.addcdiv_(s.exp_avg(), denom, -o.lr() / bias_correction1);
  };
  if (work.empty()) return loss;
  if (ZOO_FUSED_ADAMW && work.front().param.is_cuda()) {
    fused_update(work);
    return loss;
  }
  const int64_t threads = at::get_num_threads();
  if (threads <= 1 || !work.front().param.device().is_cpu() || at::in_parallel_region()) {
    for (const auto& w : work) update(w);
    return loss;
  }
  // Cut the list where the running size passes each thread's share; each thread's
  // operations then run single-threaded (nested parallelism is serial in ATen).
  std::vector<size_t> cut{0};
  int64_t running = 0;
  for (size_t i = 0; i < work.size(); ++i) {
    running += work[i].param.numel();
    if (running * threads >= total * static_cast<int64_t>(cut.size()) && cut.size() < static_cast<size_t>(threads))
      cut.push_back(i + 1);
  }
  cut.push_back(work.size());
  at::parallel_for(0, static_cast<int64_t>(cut.size()) - 1, 1, [&](int64_t begin, int64_t end) {
    torch::NoGradGuard no_grad_here;  // grad mode is per thread
    for (int64_t t = begin; t < end; ++t)
      for (size_t i = cut[t]; i < cut[t + 1]; ++i) update(work[i]);
  });
  return loss;
}

}  // namespace zoo
