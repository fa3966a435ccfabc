#include "train/slices.h"

#include <ATen/Parallel.h>

#include "core/threads.h"
#include "models/kernels/dropout.h"

namespace zoo {

LossValues loss_values(const Loss& loss, double share) {
  LossValues v;
  v.total = loss.total.item<double>() * share;
  for (const auto& [name, part] : loss.parts) v.parts[name] = part.item<double>() * share;
  return v;
}

namespace {

// `shards` consecutive slices of the batch, sizes differing by at most one.
std::vector<Batch> cut(const Batch& batch, int64_t shards) {
  const int64_t base = batch.size / shards, extra = batch.size % shards;
  std::vector<Batch> parts;
  for (int64_t i = 0, start = 0; i < shards; ++i) {
    const int64_t n = base + (i < extra ? 1 : 0);
    parts.push_back(batch.narrow(start, n));
    start += n;
  }
  return parts;
}

// Adds the slices' gradients to the parameters' in slice order (the same bits every time).
void add_in_order(const std::vector<torch::autograd::variable_list>& grads, const std::vector<torch::Tensor>& params) {
  torch::NoGradGuard no_grad;
  for (size_t p = 0; p < params.size(); ++p) {
    torch::Tensor sum;
    for (const auto& g : grads) {
      if (g.empty() || !g[p].defined()) continue;  // a skipped slice, or a parameter it did not use
      sum = sum.defined() ? sum.add_(g[p]) : g[p].clone();  // own memory: grads may be views
    }
    if (!sum.defined()) continue;
    auto& grad = const_cast<torch::Tensor&>(params[p]).mutable_grad();
    grad = grad.defined() ? grad.add_(sum) : sum;
  }
}

}  // namespace

LossValues forward_backward(const std::function<Loss(const Batch&)>& loss_of, const Batch& batch,
                        double weight, int64_t shards, const std::vector<torch::Tensor>& params,
                        const std::function<void(double)>& check, bool onednn,
                        const std::function<double(const Batch&)>& terms_of) {
  auto whole = [&] {
    const Loss loss = loss_of(batch);
    const LossValues value = loss_values(loss);
    if (check) check(value.total);
    (loss.total * weight).backward();
    return value;
  };
  if (shards <= 1 || batch.size < 2 * shards) return whole();
  const std::vector<Batch> parts = cut(batch, shards);
  std::vector<double> terms(parts.size());
  double all_terms = 0;
  for (size_t i = 0; i < parts.size(); ++i)
    all_terms += terms[i] = terms_of ? terms_of(parts[i]) : static_cast<double>(parts[i].size);
  if (all_terms <= 0) return whole();  // nothing to average: the task's own answer for the batch
  std::vector<uint64_t> dropout_seeds(parts.size());  // drawn in slice order: the same masks every run
  for (auto& seed : dropout_seeds) seed = models::draw_dropout_seed();
  std::vector<LossValues> values(parts.size());
  std::vector<torch::autograd::variable_list> grads(parts.size());
  const bool grad_mode = torch::GradMode::is_enabled();
  {
    ScopedSingleThreadedBlas blas;
    // oneDNN's convolutions wait for a full team of OpenMP threads and hang when called from
    // inside a parallel region: use LibTorch's own kernels meanwhile, unless the caller needs
    // oneDNN's bf16 matrix products (they run single-threaded there, as they should).
    const bool mkldnn = at::globalContext().userEnabledMkldnn();
    if (!onednn) at::globalContext().setUserEnabledMkldnn(false);
    struct Restore {
      bool on;
      ~Restore() { at::globalContext().setUserEnabledMkldnn(on); }
    } restore{mkldnn};
    at::parallel_for(0, shards, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
      torch::AutoGradMode enable(grad_mode);
      for (int64_t i = begin; i < end; ++i) {
        if (terms[i] <= 0) continue;  // its loss would be a mean over nothing
        const double share = terms[i] / all_terms;
        models::DropoutSeedStream stream(dropout_seeds[i]);  // forward and backward: its masks
        const Loss loss = loss_of(parts[i]);
        values[i] = loss_values(loss, share);
        grads[i] = torch::autograd::grad({loss.total * (weight * share)}, params, {}, /*retain_graph=*/false,
                                         /*create_graph=*/false, /*allow_unused=*/true);
      }
    });
  }
  LossValues value;
  for (const auto& v : values) {
    value.total += v.total;
    for (const auto& [name, x] : v.parts) value.parts[name] += x;
  }
  if (check) check(value.total);
  add_in_order(grads, params);
  return value;
}

}  // namespace zoo
