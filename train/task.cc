#include "train/task.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "models/kernels/softmax_rows.h"
#include "train/objectives.h"
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

// Runs f with the tasks' models in eval mode, gradients off and autocast as `precision` says;
// their modes are restored after.
template <class F>
auto in_eval_mode(const std::vector<Task*>& tasks, const torch::Device& device, const std::string& precision, F f) {
  struct Restore {
    std::vector<std::pair<std::shared_ptr<torch::nn::Module>, bool>> modes;
    ~Restore() {
      for (auto& [model, training] : modes) model->train(training);
    }
  } restore;
  for (auto* task : tasks) restore.modes.emplace_back(task->model(), task->model()->is_training());
  for (auto& [model, training] : restore.modes) model->eval();
  torch::NoGradGuard no_grad;
  AutocastGuard autocast(precision != "fp32", device, autocast_dtype(precision));
  return f();
}

}  // namespace

Metrics evaluation_sums(Task& task, const std::string& split, int64_t batch_size, const torch::Device& device,
                        int64_t shard, int64_t shards, const std::string& precision) {
  return in_eval_mode({&task}, device, precision, [&] {
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

namespace {
// The members' scores of one batch of examples, checked to describe the same examples.
std::vector<torch::Tensor> member_log_probs(const std::vector<Task*>& members, const std::vector<std::string>& names,
                                            const std::string& split, const std::vector<int64_t>& examples,
                                            const torch::Device& device, torch::Tensor& labels) {
  std::vector<torch::Tensor> log_probs;
  for (size_t m = 0; m < members.size(); ++m) {
    Batch batch = members[m]->make_eval_batch(split, examples);
    batch.examples = examples;
    batch = batch.to(device);
    const auto logits = members[m]->eval_logits(split, batch);
    if (!logits.defined())
      throw Error(cat(names[m], ": an ensemble averages classifiers' predictions, and this checkpoint's task has no "
                                "classes (evaluate it alone)"));
    if (m == 0) {
      labels = batch["labels"];
    } else if (!torch::equal(batch["labels"], labels) || logits.size(-1) != log_probs[0].size(-1)) {
      throw Error(cat(names[m], ": its ", split, " split has other labels or classes than ", names[0],
                      "'s: an ensemble's members must read the same data (data.path, the split settings)"));
    }
    log_probs.push_back(torch::log_softmax(logits.to(torch::kFloat), -1));
  }
  return log_probs;
}
}  // namespace

Metrics evaluate_ensemble(const std::vector<Task*>& members, const std::vector<std::string>& names,
                          const std::string& split, int64_t batch_size, const torch::Device& device,
                          const std::string& precision) {
  if (members.empty() || names.size() != members.size())
    throw std::logic_error("evaluate_ensemble: one name per member, and at least one member");
  return in_eval_mode(members, device, precision, [&] {
    const auto plan = members[0]->eval_plan(split, batch_size);
    for (size_t m = 1; m < members.size(); ++m) members[m]->eval_plan(split, batch_size);  // loads the split
    Metrics sums;
    for (const auto& examples : plan) {
      torch::Tensor labels;
      const auto log_probs = member_log_probs(members, names, split, examples, device, labels);
      const auto mean = models::log_mean_of_distributions(log_probs);
      for (const auto& [key, value] : classification_sums(mean, labels)) sums[key] += value;
    }
    if (sums["examples"] == 0) throw Error(cat("the ", split, " split has no examples to evaluate"));
    return classification_metrics(sums);
  });
}

}  // namespace zoo
