// The Trainer's data-parallel steps: evaluation sums added up over the processes, the
// step's loss and stop flag reduced, and the check that every replica holds the same weights.
#include "train/trainer.h"

#include <algorithm>
#include <sstream>

#include "core/hash.h"
#include "train/logging.h"
#include "train/memory_budget.h"

namespace zoo {

Metrics Trainer::evaluate_split(const std::string& split) {
  if (eval_batch_ == 0) {  // chosen once, at the first evaluation
    std::string note;
    eval_batch_ = evaluation_batch_size(config_, &note);
    if (!note.empty() && log_) log_->message(note);
  }
  const int64_t batch = eval_batch_;
  if (!args_.collective) return zoo::evaluate(task_, split, batch, args_.device, precision_);
  // Data parallel: each process evaluates its batches and the sums are added up. A process
  // with no batch has no keys, so the keys are first agreed on (all processes' together).
  Metrics sums = zoo::evaluation_sums(task_, split, batch, args_.device, rank(), world(), precision_);
  std::string mine;
  for (const auto& kv : sums) mine += kv.first + '\n';
  std::vector<double> lengths(static_cast<size_t>(world()), 0.0);  // gather() takes equal lengths
  lengths[static_cast<size_t>(rank())] = static_cast<double>(mine.size());
  args_.collective->sum(lengths);
  mine.resize(static_cast<size_t>(*std::max_element(lengths.begin(), lengths.end())), '\n');
  for (const auto& keys : args_.collective->gather(mine)) {
    std::istringstream in(keys);
    for (std::string key; std::getline(in, key);)
      if (!key.empty()) sums.emplace(key, 0.0);
  }
  std::vector<double> values;
  for (const auto& kv : sums) values.push_back(kv.second);
  args_.collective->sum(values);
  size_t i = 0;
  for (auto& kv : sums) kv.second = values[i++];
  return task_.metrics_from_sums(sums);
}

bool Trainer::reduce_step(LossValues* loss, int64_t* examples, bool stop) {
  if (!args_.collective) return stop;
  std::vector<double> v{loss->total, static_cast<double>(*examples), stop ? 1.0 : 0.0};
  for (const auto& kv : loss->parts) v.push_back(kv.second);
  args_.collective->sum(v);
  const double n = world();
  loss->total = v[0] / n;
  *examples = static_cast<int64_t>(v[1]);
  size_t i = 3;
  for (auto& kv : loss->parts) kv.second = v[i++] / n;
  return v[2] > 0;
}

void Trainer::check_replicas_agree() {
  torch::NoGradGuard no_grad;
  uint64_t h = fnv1a("");  // of every parameter's bytes
  for (const auto& p : params_) h = fnv1a(tensor_bytes(p), h);
  const std::string mine(reinterpret_cast<const char*>(&h), sizeof h);
  const auto all = args_.collective->gather(mine);
  for (size_t r = 0; r < all.size(); ++r)
    if (all[r] != all[0])
      throw Error(cat("data parallel: the weights of rank ", r, " differ from rank 0's after step ", state_.step,
                      "; the processes did not train the same model (different zoo builds or devices?)"));
  if (log_)
    log_->message(cat("data parallel: the weights are identical on all ", all.size(), " processes; ",
                      args_.collective->summary()));
}

}  // namespace zoo
