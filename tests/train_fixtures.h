#pragma once
// Running the trainer in a test and reading what it logged.
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

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

}  // namespace zoo::test
