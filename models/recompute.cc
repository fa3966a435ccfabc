#include "models/recompute.h"

#include <mutex>

#include "models/autocast_state.h"

namespace zoo::models {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// Autocast is per thread and backward may run on another thread (CUDA's device threads), so the
// forward's state (AutocastState) is carried over to the rerun.

// What the rerun needs, carried through the autograd context as a capsule.
struct Saved : torch::CustomClassHolder {
  std::function<torch::Tensor(const std::vector<torch::Tensor>&)> f;
  torch::Tensor cpu_rng, cuda_rng;
  torch::Device device{torch::kCPU};
  AutocastState autocast;
};

torch::Tensor generator_state(at::Generator gen) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  return gen.get_state();
}
void set_generator_state(at::Generator gen, const torch::Tensor& state) {
  std::lock_guard<std::mutex> lock(gen.mutex());
  gen.set_state(state);
}

struct Recompute : torch::autograd::Function<Recompute> {
  static torch::Tensor forward(AutogradContext* ctx, c10::IValue capsule, torch::TensorList inputs) {
    auto saved = c10::static_intrusive_pointer_cast<Saved>(capsule.toCapsule());
    saved->cpu_rng = generator_state(at::detail::getDefaultCPUGenerator());
    for (const auto& x : inputs)
      if (x.is_cuda()) saved->device = x.device();
    if (saved->device.is_cuda()) saved->cuda_rng = generator_state(at::globalContext().defaultGenerator(saved->device));
    saved->autocast = AutocastState::current();
    ctx->save_for_backward(inputs.vec());
    ctx->saved_data["saved"] = capsule;
    torch::NoGradGuard no_grad;
    return saved->f(inputs.vec());
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_output) {
    auto saved = c10::static_intrusive_pointer_cast<Saved>(ctx->saved_data["saved"].toCapsule());
    const auto inputs = ctx->get_saved_variables();
    std::vector<torch::Tensor> detached;
    for (const auto& x : inputs) detached.push_back(x.detach().requires_grad_(x.requires_grad()));
    // Rerun from the forward's random numbers and autocast, then give the current ones back.
    auto cpu_gen = at::detail::getDefaultCPUGenerator();
    const auto cpu_now = generator_state(cpu_gen);
    torch::Tensor cuda_now;
    if (saved->device.is_cuda()) cuda_now = generator_state(at::globalContext().defaultGenerator(saved->device));
    const AutocastState autocast_now = AutocastState::current();
    set_generator_state(cpu_gen, saved->cpu_rng);
    if (saved->device.is_cuda()) set_generator_state(at::globalContext().defaultGenerator(saved->device), saved->cuda_rng);
    saved->autocast.apply();
    torch::Tensor out;
    {
      torch::AutoGradMode grad(true);
      out = saved->f(detached);
    }
    autocast_now.apply();
    set_generator_state(cpu_gen, cpu_now);
    if (saved->device.is_cuda()) set_generator_state(at::globalContext().defaultGenerator(saved->device), cuda_now);
    torch::autograd::backward({out}, {grad_output[0]});
    variable_list grads{torch::Tensor()};  // the capsule
    for (const auto& d : detached) grads.push_back(d.requires_grad() ? d.grad() : torch::Tensor());
    return grads;
  }
};

}  // namespace

torch::Tensor recompute_in_backward(const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
                                    const std::vector<torch::Tensor>& inputs) {
  if (!torch::GradMode::is_enabled()) return f(inputs);
  auto saved = c10::make_intrusive<Saved>();
  saved->f = f;
  return Recompute::apply(c10::IValue::make_capsule(saved), torch::TensorList(inputs));
}

torch::Tensor GradientCheckpointing::checkpointed(bool training, const torch::Tensor& x,
                                                  const std::function<torch::Tensor(const torch::Tensor&)>& block) const {
  if (!gradient_checkpointing_ || !training) return block(x);
  // An input that needs no gradient (a LoRA run's frozen embeddings) would leave the block's
  // output outside the graph, and its adapters untrained: it becomes a leaf that asks for one
  // (transformers' enable_input_require_grads does the same for PEFT).
  const auto input = x.requires_grad() || !torch::GradMode::is_enabled() ? x : x.detach().requires_grad_(true);
  return recompute_in_backward([block](const std::vector<torch::Tensor>& in) { return block(in[0]); }, {input});
}

int set_gradient_checkpointing(torch::nn::Module& model, bool on) {
  int n = 0;
  for (const auto& m : model.modules())
    if (auto* c = dynamic_cast<GradientCheckpointing*>(m.get())) c->set_gradient_checkpointing(on), ++n;
  return n;
}

}  // namespace zoo::models
