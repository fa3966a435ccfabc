// The datasets of the data floor (issue 37, item 1), used as a task uses them but without the
// trainer: plans deterministic in (seed, epoch), so a resumed run replays the same batches;
// named batches; and their errors naming the file.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "data/token_windows.h"
#include "test_util.h"

namespace zoo::data {
namespace {

// A stream of uint16 ids 0, 1, ..., n - 1 (each id its position, wrapped at `wrap`).
std::string write_stream(const test::TempDir& dir, int64_t n, int64_t wrap) {
  const std::string path = dir / "tokens.bin";
  std::ofstream out(path, std::ios::binary);
  for (int64_t i = 0; i < n; ++i) {
    const auto id = static_cast<uint16_t>(i % wrap);
    out.put(static_cast<char>(id & 0xFF)).put(static_cast<char>(id >> 8));
  }
  return path;
}

TEST(TokenWindows, PlansReplayBySeedAndBatchesAreShiftedWindows) {
  test::TempDir dir;
  const std::string path = write_stream(dir, 1000, 60000);
  TokenWindows windows(TokenStream(path, 2), /*block_size=*/8, /*validation_fraction=*/0.1, /*max_eval_windows=*/5,
                       /*vocab_size=*/60000);
  EXPECT_EQ(windows.train_size(), (900 - 1) / 8);
  const auto plan = windows.epoch_plan(7, 3, 16);
  EXPECT_EQ(plan, windows.epoch_plan(7, 3, 16)) << "a resumed run replays the epoch";
  EXPECT_NE(plan, windows.epoch_plan(7, 4, 16)) << "every epoch draws anew";
  EXPECT_NE(plan, windows.epoch_plan(8, 3, 16));
  int64_t planned = 0;
  for (const auto& batch : plan) {
    planned += static_cast<int64_t>(batch.size());
    for (int64_t start : batch) EXPECT_LE(start + 9, 900) << "training windows stay in the training tokens";
  }
  EXPECT_EQ(planned, windows.train_size());

  const Batch b = windows.train_batch(plan[0]);
  ASSERT_EQ(b.size, static_cast<int64_t>(plan[0].size()));
  EXPECT_EQ(b["input_ids"].sizes(), (std::vector<int64_t>{b.size, 8}));
  EXPECT_TRUE(b["input_ids"].select(1, 0).equal(torch::tensor(plan[0], torch::kLong))) << "a window starts at its start";
  EXPECT_TRUE(b["labels"].equal(b["input_ids"] + 1)) << "labels are the next tokens";

  // Validation: 5 of the held-out windows, spread over tokens 900..999.
  const auto eval = windows.eval_plan("valid", 2);
  ASSERT_EQ(eval.size(), 3u);
  const Batch v = windows.eval_batch({0, 4});
  EXPECT_EQ(v["input_ids"][0][0].item<int64_t>(), 900);
  EXPECT_GE(v["input_ids"][1][0].item<int64_t>(), 900 + 4 * 8);
  EXPECT_THROW(windows.eval_plan("test", 2), Error);
}

TEST(TokenWindows, TooShortStreamsAndForeignIdsAreNamed) {
  test::TempDir dir;
  const std::string path = write_stream(dir, 100, 50);
  try {
    TokenWindows(TokenStream(path, 2), 64, 0.1, 0, 50);
    FAIL() << "100 tokens made windows of 65 in both splits";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": 100 tokens are too few for windows of 65"), std::string::npos) << e.what();
  }
  TokenWindows small_vocab(TokenStream(path, 2), 8, 0.1, 0, /*vocab_size=*/40);  // ids go up to 49
  try {
    small_vocab.train_batch({40});
    FAIL() << "an id outside the model's vocabulary was batched";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": token id 48 is outside the model's vocabulary of 40"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace zoo::data
