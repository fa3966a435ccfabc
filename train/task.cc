#include "train/task.h"

#include <algorithm>

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

Metrics evaluate(Task& task, const std::string& split, int64_t batch_size, const torch::Device& device) {
  auto model = task.model();
  const bool was_training = model->is_training();
  model->eval();
  struct Restore {
    torch::nn::Module& m;
    bool training;
    ~Restore() { m.train(training); }
  } restore{*model, was_training};
  torch::NoGradGuard no_grad;
  return task.evaluate(split, batch_size, device);
}

}  // namespace zoo
