// Which words BERT pretraining masks (data/mask_weights.h, data.mask_weighting): the weighted
// draw's chances, and, through BertItems' dynamic masks on invented reviews in the IMDB
// archive's layout, that label_odds favours the words that tell the labels apart and
// frequency the rare ones, while uniform favours none; the configurations that cannot work
// are refused with the fix.
#include "data/mask_weights.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.h"
#include "data/bert_items.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace zoo::data {
namespace {

TEST(MaskWeights, WeightedChoiceFollowsTheWeights) {
  std::mt19937_64 rng(7);
  const std::vector<float> weights = {1, 1, 0, 1, 8};  // of positions 10, 11, 12, 13, 14
  std::map<int64_t, int> first;
  constexpr int kDraws = 20000;
  for (int d = 0; d < kDraws; ++d) {
    std::vector<int64_t> positions = {10, 11, 12, 13, 14};
    weighted_choice(positions, weights, 4, rng);
    ++first[positions[0]];
    // The four drawn are the four of positive weight; every position is still there once.
    EXPECT_EQ(positions[4], 12);
    std::vector<int64_t> sorted = positions;
    std::sort(sorted.begin(), sorted.end());
    ASSERT_EQ(sorted, (std::vector<int64_t>{10, 11, 12, 13, 14}));
  }
  EXPECT_NEAR(first[14] / static_cast<double>(kDraws), 8.0 / 11, 0.015);
  EXPECT_NEAR(first[10] / static_cast<double>(kDraws), 1.0 / 11, 0.01);
  EXPECT_EQ(first[12], 0);
}

// 120 reviews a label of "the film was X ..." sentences, X "good" in train/pos, "bad" in
// train/neg, and unlabelled ones about "long" films in train/unsup; "rare" in one review of 4.
std::string write_reviews(const test::TempDir& dir) {
  const std::string root = dir / "aclImdb";
  const std::vector<std::pair<std::string, std::string>> folders = {{"pos", "good"}, {"neg", "bad"}, {"unsup", "long"}};
  for (const auto& [folder, word] : folders) {
    fs::create_directories(root + "/train/" + folder);
    for (int r = 0; r < 120; ++r) {
      std::string text = r % 4 ? "" : "rare";
      for (int s = 0; s < 4; ++s) text += " the film was " + word + " and the plot was " + (s % 2 ? "slow" : "fast") + ".";
      test::write_file(root + "/train/" + folder + "/" + std::to_string(r) + "_5.txt", text);
    }
  }
  return root;
}

// The share of each word's occurrences that the dynamic masks of 40 training batches select.
BertPretrainingDataOptions options(const std::string& root, const std::string& weighting) {
  BertPretrainingDataOptions o;
  o.path = root;
  o.folders = {"train/pos", "train/neg", "train/unsup"};
  o.layout = "segments";
  o.max_length = 24;
  o.next_sentence_prediction = false;
  o.dynamic_masking = true;
  o.mask_weighting = weighting;
  o.validation_fraction = 0.1;
  return o;
}

std::map<std::string, double> masked_share(const std::string& root, const std::string& weighting) {
  BertItems items(options(root, weighting), 5);
  items.build();
  std::vector<int64_t> rows(static_cast<size_t>(items.train_size()));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<int64_t>(i);
  std::map<std::string, double> seen, masked;
  for (uint64_t seed = 1; seed <= 40; ++seed) {
    const Batch b = items.train_batch(rows, seed);
    auto ids = b["input_ids"], labels = b["labels"];
    auto original = torch::where(labels.ne(BertItems::kIgnore), labels, ids);
    auto po = original.accessor<int64_t, 2>(), pl = labels.accessor<int64_t, 2>();
    for (int64_t r = 0; r < original.size(0); ++r)
      for (int64_t p = 0; p < original.size(1); ++p) {
        const std::string& word = items.examples().vocab.token(po[r][p]);
        seen[word] += 1;
        masked[word] += pl[r][p] != BertItems::kIgnore;
      }
  }
  for (auto& [word, n] : masked) n /= seen.at(word);
  return masked;
}

TEST(MaskWeights, DynamicMasksFavourWhatTheWeightingAsks) {
  test::TempDir dir;
  const std::string root = write_reviews(dir);
  auto uniform = masked_share(root, "uniform");
  for (const char* word : {"good", "bad", "the", "film", "rare"}) EXPECT_NEAR(uniform[word], 0.15, 0.03) << word;

  auto odds = masked_share(root, "label_odds");
  EXPECT_GT(odds["good"], 3 * odds["the"]) << odds["good"] << " " << odds["the"];
  EXPECT_GT(odds["bad"], 3 * odds["film"]) << odds["bad"] << " " << odds["film"];
  EXPECT_GT(odds["good"], 3 * odds["long"]) << "unlabelled reviews weigh nothing: " << odds["long"];

  auto frequency = masked_share(root, "frequency");
  EXPECT_GT(frequency["rare"], 2 * frequency["the"]) << frequency["rare"] << " " << frequency["the"];
  EXPECT_GT(frequency["good"], 2 * frequency["was"]) << frequency["good"] << " " << frequency["was"];
}

// The message BertItems::build throws, "" when it builds.
std::string refusal(const BertPretrainingDataOptions& o) {
  try {
    BertItems(o, 5).build();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(MaskWeights, WhatCannotWorkIsRefusedWithTheFix) {
  test::TempDir dir;
  auto o = options(write_reviews(dir), "label_odds");
  o.folders = {"train/pos", "train/unsup"};
  std::string why = refusal(o);
  EXPECT_NE(why.find("needs texts of exactly two labels"), std::string::npos) << why;
  EXPECT_NE(why.find("(pos)"), std::string::npos) << why;

  o.folders = {"train/pos", "train/neg"};
  EXPECT_EQ(refusal(o), "");
  // A cut-down run (data.max_reviews) takes its reviews in turn from each folder, so it still
  // has both labels (the first 30 in folder order would all be train/pos's).
  o.folders = {"train/pos", "train/neg", "train/unsup"};
  o.max_reviews = 30;
  EXPECT_EQ(refusal(o), "");
  BertItems cut(o, 5);
  cut.build();
  for (const char* word : {"good", "bad", "long"})
    EXPECT_NE(cut.examples().vocab.id(word), BertVocab::kUnk) << word << " is read";
  o.folders = {"train/pos", "train/neg"};
  o.max_reviews = 0;
  o.dynamic_masking = false;
  why = refusal(o);
  EXPECT_NE(why.find("set data.dynamic_masking true"), std::string::npos) << why;
}

}  // namespace
}  // namespace zoo::data
