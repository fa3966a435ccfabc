#include "train/task.h"

#include <algorithm>

#include "train/precision.h"

namespace zoo {

std::vector<std::vector<int64_t>> Task::epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const {
  const int64_t n = num_train_examples();
  auto gen = at::detail::createCPUGenerator(seed * 1000003ULL + static_cast<uint64_t>(epoch));
  auto perm = torch::randperm(n, gen, torch::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> plan;
  for (int64_t i = 0; i < n; i += batch_size) plan.emplace_back(p + i, p + std::min(n, i + batch_size));
  return plan;
}

namespace {

// Runs f with the task's model in eval mode, gradients off and autocast as `precision` says;
// the mode is restored after.
template <class F>
auto in_eval_mode(Task& task, const torch::Device& device, const std::string& precision, F f) {
  auto model = task.model();
  const bool was_training = model->is_training();
  model->eval();
  struct Restore {
    torch::nn::Module& m;
    bool training;
    ~Restore() { m.train(training); }
  } restore{*model, was_training};
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(precision != "fp32", device, autocast_dtype(precision));
  return f();
}

}  // namespace

Metrics evaluate(Task& task, const std::string& split, int64_t batch_size, const torch::Device& device,
                 const std::string& precision) {
  return in_eval_mode(task, device, precision, [&] { return task.evaluate(split, batch_size, device); });
}

std::optional<Metrics> evaluation_sums(Task& task, const std::string& split, int64_t batch_size,
                                       const torch::Device& device, int64_t shard, int64_t shards,
                                       const std::string& precision) {
  return in_eval_mode(task, device, precision, [&] { return task.evaluation_sums(split, batch_size, device, shard, shards); });
}

}  // namespace zoo
