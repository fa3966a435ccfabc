#include "train/task.h"

#include <algorithm>

#include "core/error.h"
#include "train/precision.h"

namespace zoo {

std::vector<std::vector<int64_t>> Task::epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const {
  return data::permuted_batches(num_train_examples(), batch_size, seed, epoch);
}

void check_eval_split(const std::string& loaded, const std::string& asked) {
  if (loaded != asked)
    throw std::logic_error(cat("make_eval_batch(\"", asked, "\") after eval_plan(\"", loaded, "\")"));
}

void require_validation_split(bool holds_out, const std::string& key, const json& value, const std::string& fix) {
  if (!holds_out)
    throw Error(cat("config: data.", key, "=", value.dump(), " holds out no validation examples; training evaluates on "
                    "them (train.eval_steps, the best checkpoint): set data.", key, " to ", fix));
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

Metrics evaluation_sums(Task& task, const std::string& split, int64_t batch_size, const torch::Device& device,
                        int64_t shard, int64_t shards, const std::string& precision) {
  return in_eval_mode(task, device, precision, [&] {
    const auto plan = task.eval_plan(split, batch_size);
    int64_t examples = 0;
    for (const auto& b : plan) examples += static_cast<int64_t>(b.size());
    if (examples == 0) throw Error(cat("the ", split, " split has no examples to evaluate"));
    Metrics sums;
    for (size_t i = static_cast<size_t>(shard); i < plan.size(); i += static_cast<size_t>(shards)) {
      Batch batch = task.make_eval_batch(split, plan[i]);
      batch.examples = plan[i];
      for (const auto& [key, value] : task.eval_sums(split, batch.to(device))) sums[key] += value;
    }
    return sums;
  });
}

Metrics evaluate(Task& task, const std::string& split, int64_t batch_size, const torch::Device& device,
                 const std::string& precision) {
  return task.metrics_from_sums(evaluation_sums(task, split, batch_size, device, 0, 1, precision));
}

}  // namespace zoo
