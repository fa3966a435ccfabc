// The one evaluation loop (zoo::evaluation_sums) for every task: a split's batches divide
// among data-parallel processes, each adds up the sums of its own batches, and the sums of
// the parts are those of the whole; two processes log the metrics of one.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "distributed_util.h"
#include "test_util.h"
#include "train/distributed.h"
#include "train/task_registry.h"
#include "translation_fixtures.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;

// Reviews in root/{train,test}/{pos,neg} (text classification and BERT pretraining) and the
// vocab.txt text classification reads.
std::string write_reviews(const test::TempDir& dir) {
  const std::string root = dir / "imdb";
  const std::vector<std::string> good = {"great", "fine", "moving"}, bad = {"dull", "boring", "poor"},
                                  neutral = {"the", "film", "plot", "was", "and"};
  for (int i = 0; i < 60; ++i) {
    const bool pos = i % 2;
    std::string text;
    for (int s = 0; s < 2 + i % 3; ++s) {
      for (int w = 0; w < 6; ++w) text += (w ? " " : "") + (w % 3 == 1 ? (pos ? good : bad)[(i + w) % 3] : neutral[(i * 3 + w + s) % 5]);
      text += ". ";
    }
    const std::string folder = root + (i < 44 ? "/train/" : "/test/") + (pos ? "pos" : "neg");
    fs::create_directories(folder);
    test::write_file(folder + "/" + std::to_string(i) + (pos ? "_9" : "_2") + ".txt", text);
  }
  std::string vocab = "[CLS]\n[PAD]\n[MASK]\n[SEP]\n[UNK]\n.\n";
  for (const auto* pool : {&good, &bad, &neutral})
    for (const auto& w : *pool) vocab += w + "\n";
  test::write_file(dir / "vocab.txt", vocab);
  return root;
}

// A tiny config of each task, with several evaluation batches (of 3) in its validation split.
// The learning rate is 0: one process and two then evaluate the same weights.
std::map<std::string, json> configs(const test::TempDir& dir) {
  test::write_file(dir / "text.txt", test::corpus());
  fs::create_directories(dir / "mnist");
  test::write_tiny_mnist(dir / "mnist", 48, 8);
  test::write_file(dir / "pairs.txt", test::pair_file_text());
  const std::string reviews = write_reviews(dir);
  const json bert_model = {{"model_type", "bert"},          {"hidden_size", 16}, {"num_hidden_layers", 1},
                           {"num_attention_heads", 2},      {"intermediate_size", 32},
                           {"max_position_embeddings", 64}, {"hidden_dropout_prob", 0.0}};
  std::map<std::string, json> c;
  c["language_modeling"] = {{"model", {{"preset", "gpt-nano-char"}, {"n_positions", 16}, {"n_layer", 1}, {"n_embd", 16}}},
                            {"data", {{"files", {dir / "text.txt"}}, {"tokenizer", "char"}, {"max_eval_windows", 20}}}};
  c["image_classification"] = json::parse(test::tiny_vit_config(dir / "mnist"));
  c["image_classification"]["data"]["validation_size"] = 10;
  c["translation"] = json::parse(test::tiny_config(dir / "pairs.txt"));
  c["translation"]["data"]["valid_size"] = 10;
  c["text_classification"] = {
      {"model", bert_model},
      {"data", {{"path", reviews}, {"vocab", dir / "vocab.txt"}, {"max_length", 24}, {"valid_size", 10}}}};
  c["bert_pretraining"] = {
      {"model", bert_model},
      {"data", {{"path", reviews}, {"folders", {"train/pos", "train/neg"}}, {"max_length", 16}, {"validation_fraction", 0.2}}}};
  const json train = {{"max_steps", 2},     {"per_device_train_batch_size", 4}, {"per_device_eval_batch_size", 3},
                      {"learning_rate", 0.0}, {"lr_scheduler_type", "constant"}, {"warmup_steps", 0},
                      {"logging_steps", 1},   {"eval_steps", 2},                 {"save_steps", 2},
                      {"save_total_limit", 0}, {"report_to_tensorboard", false}};
  for (auto& [task, config] : c) {
    config["task"] = task;
    for (const auto& item : train.items()) config["train"][item.key()] = item.value();
  }
  return c;
}

// The last evaluation's metrics in a run's metrics.jsonl.
json last_eval(const std::string& run) {
  json found;
  std::istringstream in(test::read_file(run + "/metrics.jsonl"));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j.value("type", "") == "eval") found = j;
  }
  return found;
}

std::string train_command(const std::string& config, const std::string& out) {
  return std::string("train --device cpu --config ") + config + " --output-dir " + out;
}

TEST(Evaluation, EveryTaskSplitsItsBatchesAmongProcessesAndTheSumsAddUp) {
  test::TempDir dir;
  for (const auto& [task, config] : configs(dir)) {
    SCOPED_TRACE(task);
    const std::string cfg = dir / (task + ".json"), run = dir / task;
    write_json_file(cfg, config);
    auto r = test::run("OMP_NUM_THREADS=1 " + std::string(ZOO_BINARY) + " " + train_command(cfg, run));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const torch::Device cpu(torch::kCPU);
    auto loaded = load_task(run + "/checkpoint-2", {}, cpu);
    const Metrics whole = evaluation_sums(*loaded, "valid", 3, cpu, 0, 1);
    const Metrics first = evaluation_sums(*loaded, "valid", 3, cpu, 0, 2);
    const Metrics second = evaluation_sums(*loaded, "valid", 3, cpu, 1, 2);
    ASSERT_FALSE(whole.empty());
    for (const auto& [key, value] : whole) {
      const double a = first.count(key) ? first.at(key) : 0.0, b = second.count(key) ? second.at(key) : 0.0;
      EXPECT_NEAR(a + b, value, 1e-9 * std::max(1.0, std::abs(value))) << key;
    }
    // Each process evaluated a part, not the whole split.
    const std::string count = whole.count("examples") ? "examples" : "tokens";
    ASSERT_TRUE(whole.count(count) && first.count(count) && second.count(count));
    EXPECT_GT(first.at(count), 0);
    EXPECT_GT(second.at(count), 0);
    EXPECT_LT(first.at(count), whole.at(count));
    // And the metrics of the whole are those the run logged.
    const Metrics metrics = loaded->metrics_from_sums(whole);
    const json logged = last_eval(run);
    for (const auto& [key, value] : metrics)
      EXPECT_NEAR(logged.at(key).get<double>(), value, 1e-6 * std::max(1.0, std::abs(value))) << key;
  }
}


TEST(Evaluation, TwoProcessesLogTheMetricsOfOneForEveryTask) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";  // reported, not passed
  test::TempDir dir;
  int offset = 0;
  for (const auto& [task, config] : configs(dir)) {
    SCOPED_TRACE(task);
    const std::string cfg = dir / (task + ".json"), one = dir / (task + "_one"), two = dir / (task + "_two");
    write_json_file(cfg, config);
    auto r = test::run("OMP_NUM_THREADS=1 " + std::string(ZOO_BINARY) + " " + train_command(cfg, one));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const int port = test::port(12000, offset++);  // below the ephemeral range (32768-60999)
    r = test::run("OMP_NUM_THREADS=1 " + std::string(ZOO_TESTS_DIR) + "/../tools/launch.sh --nproc 2 --master-port " +
                  std::to_string(port) + " -- " + ZOO_BINARY + " " + train_command(cfg, two));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    ASSERT_NE(r.output.find("x2 processes (gloo)"), std::string::npos) << r.output;
    const json a = last_eval(one), b = last_eval(two);
    ASSERT_FALSE(a.is_null());
    for (const auto& [key, value] : a.items()) {
      if (!value.is_number() || key == "step" || key == "epoch" || key.find("runtime") != std::string::npos ||
          key.find("per_second") != std::string::npos)
        continue;
      ASSERT_TRUE(b.contains(key)) << key;
      const double x = value.get<double>();
      EXPECT_NEAR(b.at(key).get<double>(), x, 1e-9 * std::max(1.0, std::abs(x))) << key;
    }
  }
}

}  // namespace
}  // namespace zoo
