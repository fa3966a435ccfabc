#pragma once
// Running the trainer in a test and reading what it logged; the checks every task's R-Drop
// loss must pass.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "train/task_registry.h"
#include "train/trainer.h"

namespace zoo::test {

/// Each training step's logged values in `out`/metrics.jsonl, by step.
inline std::map<int64_t, json> train_records(const std::string& out) {
  std::map<int64_t, json> records;
  std::ifstream in(out + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    auto j = json::parse(line);
    if (j["type"] == "train") records[j["step"].get<int64_t>()] = j;
  }
  return records;
}

/// Each training step's logged loss, by step.
inline std::map<int64_t, double> train_losses(const std::string& out) {
  std::map<int64_t, double> losses;
  for (const auto& [step, j] : train_records(out)) losses[step] = j["loss"].get<double>();
  return losses;
}

/// zoo train of a resolved `config` into `out` on `device` (from `resume` when given).
inline void run_training(const json& config, const std::string& out, const torch::Device& device = torch::kCPU,
                         const std::string& resume = "") {
  auto task = make_task(config);
  TrainerArgs args{config, "tiny.json", out, device, resume};
  train(*task, args);
}

/// Trains `config` for its 8 steps into dir/a, copies a's checkpoint-4 and resumes from it
/// into dir/b; returns both runs' losses.
inline std::pair<std::map<int64_t, double>, std::map<int64_t, double>> train_and_resume_at_4(
    const json& config, const std::string& dir, const torch::Device& device = torch::kCPU) {
  namespace fs = std::filesystem;
  const std::string a = dir + "/a", b = dir + "/b";
  run_training(config, a, device);
  fs::create_directories(b);
  fs::copy(a + "/checkpoint-4", b + "/checkpoint-4", fs::copy_options::recursive);
  run_training(config, b, device, b + "/checkpoint-4");
  return {train_losses(a), train_losses(b)};
}

/// A task's loss of `batch` with train.r_drop_alpha = `alpha` (the model has dropout): in
/// training mode, the parts "ce" and "kl" with kl > 0 and total = ce + alpha * kl; in eval mode
/// (two identical passes) kl = 0 and ce and total are the loss with r_drop_alpha = 0, which has
/// no parts. The task's context and the model's training mode are restored.
inline void expect_r_drop_loss(Task& task, const Batch& batch, double alpha) {
  torch::NoGradGuard no_grad;
  const TaskContext saved = task.context();
  TaskContext context = saved;
  context.r_drop_alpha = alpha;
  task.set_context(context);
  task.model()->train();
  const Loss twice = task.loss(batch);
  ASSERT_EQ(twice.parts.size(), 2u);
  ASSERT_EQ(twice.parts.count("ce") + twice.parts.count("kl"), 2u);
  const double total = twice.total.item<double>(), ce = twice.parts.at("ce").item<double>(),
               kl = twice.parts.at("kl").item<double>();
  const double tolerance = 1e-6 * std::max(1.0, std::abs(total));
  EXPECT_NEAR(total, ce + alpha * kl, tolerance);
  EXPECT_GT(alpha * kl, 100 * tolerance) << "dropout should make the two passes differ";

  task.model()->eval();
  const Loss same = task.loss(batch);
  EXPECT_NEAR(same.parts.at("kl").item<double>(), 0.0, 1e-6);
  context.r_drop_alpha = 0;
  task.set_context(context);
  const Loss plain = task.loss(batch);
  EXPECT_TRUE(plain.parts.empty());
  EXPECT_NEAR(same.parts.at("ce").item<double>(), plain.total.item<double>(), 1e-5);
  EXPECT_NEAR(same.total.item<double>(), plain.total.item<double>(), 1e-5);
  task.model()->train();
  task.set_context(saved);
}

}  // namespace zoo::test
