// Evaluation never needs more memory than the training step it follows (issue 66): the trainer
// splits evaluation batches whose forward would outgrow the step's activations, the metrics do
// not change, and the estimate beside the measured peak names the phase that sets it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "fixtures.h"
#include "io/config.h"
#include "models/registry.h"
#include "test_util.h"
#include "train/memory_budget.h"

namespace zoo {
namespace {

// The GPT: 8 layers x 512, block 512, batch 8, evaluation batch 64.
json gpt_8x512(bool checkpointing) {
  json config = {{"task", "language_modeling"},
                 {"model", models::resolve_model_config(
                               {{"preset", "gpt-nano-char"}, {"n_layer", 8}, {"n_embd", 512}, {"n_head", 8},
                                {"n_positions", 512}, {"vocab_size", 65}})},
                 {"data", {{"block_size", 512}}},
                 {"train",
                  {{"per_device_train_batch_size", 8}, {"per_device_eval_batch_size", 64},
                   {"gradient_checkpointing", checkpointing}}}};
  return config;
}

TEST(EvaluationMemory, BatchesAreSplitToStayUnderTheTrainingStep) {
  for (const bool checkpointing : {false, true}) {
    const json config = gpt_8x512(checkpointing);
    std::string note;
    const int64_t batch = evaluation_batch_size(config, &note);
    const double training = estimate_training_memory(config).activations;
    EXPECT_GE(batch, 1);
    EXPECT_LE(estimate_evaluation_memory(config, batch).activations, training) << "checkpointing " << checkpointing;
    if (batch < 64) {
      EXPECT_GT(estimate_evaluation_memory(config, batch + 1).activations, training) << "the largest batch that fits";
      EXPECT_NE(note.find("evaluating in batches of " + std::to_string(batch)), std::string::npos) << note;
      EXPECT_NE(note.find("train.per_device_eval_batch_size=64"), std::string::npos) << note;
    }
  }
  // Checkpointing keeps fewer activations, so its evaluation batches are smaller; without it the
  // step's activations leave room for the whole evaluation batch of 64.
  EXPECT_LT(evaluation_batch_size(gpt_8x512(true), nullptr), 64);
  EXPECT_EQ(evaluation_batch_size(gpt_8x512(false), nullptr), 64);
  EXPECT_NE(peak_estimate(gpt_8x512(true)).find("set by the training step"), std::string::npos)
      << peak_estimate(gpt_8x512(true));
}

// A tiny run whose evaluation batches are split: its final metrics are zoo eval's with the
// whole batch.
TEST(EvaluationMemory, SplitEvaluationGivesTheSameMetrics) {
  test::TempDir t;
  test::write_file(t / "text.txt", test::corpus());
  test::tiny_config(t, {t / "text.txt"}, 6);
  auto r = test::run_zoo("train --config " + (t / "config.json") + " --output-dir " + (t / "run") +
                         " --set train.gradient_checkpointing=true --set train.per_device_eval_batch_size=4096"
                         " --set data.max_eval_windows=400 --set train.per_device_train_batch_size=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("evaluating in batches of "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(estimated "), std::string::npos) << r.output;  // with the phase that sets it
  double trained = NAN;
  for (const auto& line : test::lines_of(test::read_file(t / "run/metrics.jsonl"))) {
    const json m = json::parse(line);
    if (m.value("type", "") == "eval" && m.value("step", 0) == 6) trained = m.at("loss").get<double>();
  }
  ASSERT_FALSE(std::isnan(trained));
  r = test::run(std::string(ZOO_BINARY) + " eval --checkpoint " + (t / "run/checkpoint-6") + " --split valid 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const double whole = json::parse(r.output).at("loss").get<double>();
  EXPECT_NEAR(trained, whole, 1e-5 * std::abs(whole));
}

}  // namespace
}  // namespace zoo
