// BERT pretraining examples (data/bert_examples.h): the deterministic part against document
// 000's preparation re-written in Python (tests/py/bert_doc000_data.py: sentence split,
// basic_english, 70th percentile, vocabulary), the item layout, and the masking statistics of
// both variants.
#include "data/bert_examples.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/text.h"
#include "test_util.h"

namespace zoo::data {
namespace {

using json = nlohmann::json;

// Invented reviews with what basic_english and the ". " split must handle.
std::vector<std::string> reviews() {
  std::vector<std::string> out = {
      "I loved this film. It's \"great\", really (truly)! Would I watch it again? Yes; twice: now.",
      "Terrible. Just terrible.<br /><br />The acting was bad. The plot was bad. Don't go.",
      "ÉCOLE films are odd.  Two spaces. A.B. initials. End",
      "One sentence only",
      "",
  };
  const std::vector<std::string> words = {"movie", "plot", "actor", "scene", "bad", "good", "story", "music"};
  for (int r = 0; r < 60; ++r) {
    std::string review;
    for (int s = 0; s < 2 + r % 5; ++s) {
      if (!review.empty()) review += ". ";
      for (int w = 0; w < 3 + (r * 7 + s * 3) % 9; ++w) review += (w ? " " : "") + words[(r + s * 5 + w * 3) % 8];
    }
    out.push_back(review + ".");
  }
  return out;
}

TEST(BertExamples, TokensLengthAndVocabularyMatchTheDocumentsPreparation) {
  test::TempDir dir;
  const auto texts = reviews();
  test::write_file(dir / "reviews.json", json(texts).dump());
  auto r = test::run_python("bert_doc000_data.py", dir / "reviews.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json py = json::parse(r.output);

  std::vector<std::vector<std::string>> tokens;
  for (const auto& review : texts)
    for (const auto& s : split_sentences(review)) tokens.push_back(basic_english(s));
  EXPECT_EQ(tokens, py["tokens"].get<std::vector<std::vector<std::string>>>());

  const BertExamples ex = build_bert_examples(texts, {});
  EXPECT_EQ(ex.sentence_length, py["length"].get<int64_t>());
  EXPECT_EQ(ex.vocab.tokens(), py["vocab"].get<std::vector<std::string>>());
  EXPECT_EQ(ex.size(), 2 * py["pairs"].get<int64_t>());  // a true and a false item per pair
}

TEST(BertExamples, ItemsAreClsSentenceSepClsSentenceWithMasksOnlyOnWords) {
  const BertExamples ex = build_bert_examples(reviews(), {});
  const int64_t L = ex.sentence_length, W = ex.width;
  ASSERT_EQ(W, 2 * L + 1);
  ASSERT_EQ(static_cast<int64_t>(ex.input_ids.size()), ex.size() * W);
  int64_t next = 0;
  for (int64_t i = 0; i < ex.size(); ++i) {
    const int32_t* in = &ex.input_ids[i * W];
    const int32_t* orig = &ex.original[i * W];
    const uint8_t* m = &ex.masked[i * W];
    EXPECT_EQ(in[0], BertVocab::kCls);
    EXPECT_EQ(in[L], BertVocab::kSep);
    EXPECT_EQ(in[L + 1], BertVocab::kCls);
    next += ex.is_next[i];
    for (int64_t p = 0; p < W; ++p) {
      if (!m[p]) {
        EXPECT_EQ(in[p], orig[p]) << "item " << i << " position " << p;
      }
      if (m[p]) {
        EXPECT_GE(orig[p], BertVocab::kMask + 1) << "only words are selected";
      }
      if (orig[p] == BertVocab::kPad) {
        EXPECT_EQ(in[p], BertVocab::kPad);
      }
    }
    if (i % 2 == 0) {
      EXPECT_EQ(ex.is_next[i], 1);  // true item first, then its false one
    }
  }
  EXPECT_EQ(2 * next, ex.size());
  // Deterministic per seed, different across seeds.
  EXPECT_EQ(build_bert_examples(reviews(), {}).input_ids, ex.input_ids);
  BertExampleOptions other;
  other.seed = 1;
  EXPECT_NE(build_bert_examples(reviews(), other).input_ids, ex.input_ids);
}

// 15% selected; of those 80% [MASK], 10% random, 10% unchanged (the paper); the document's
// variant: no unchanged ones, 80/20, and draws may repeat.
TEST(BertExamples, MaskingFollowsThePaperOrTheDocument) {
  std::vector<std::string> many;
  for (int r = 0; r < 400; ++r) {
    std::string review;
    for (int s = 0; s < 4; ++s) {
      if (s) review += ". ";
      for (int w = 0; w < 20; ++w) review += (w ? " w" : "w") + std::to_string((r * 31 + s * 7 + w) % 300);
    }
    many.push_back(review);
  }
  for (const std::string masking : {"bert", "document"}) {
    BertExampleOptions o;
    o.masking = masking;
    const BertExamples ex = build_bert_examples(many, o);
    int64_t words = 0, selected = 0, as_mask = 0, unchanged = 0;
    for (size_t p = 0; p < ex.original.size(); ++p) {
      const bool word = ex.original[p] >= BertVocab::kFirstWord || ex.original[p] == BertVocab::kUnk;
      words += word;
      if (!ex.masked[p]) continue;
      ++selected;
      as_mask += ex.input_ids[p] == BertVocab::kMask;
      unchanged += ex.input_ids[p] == ex.original[p];
    }
    const double rate = static_cast<double>(selected) / static_cast<double>(words);
    const double mask_share = static_cast<double>(as_mask) / static_cast<double>(selected);
    const double same_share = static_cast<double>(unchanged) / static_cast<double>(selected);
    if (masking == "bert") {
      EXPECT_NEAR(rate, 0.15, 0.01) << masking;
      EXPECT_NEAR(mask_share, 0.8, 0.02);
      EXPECT_NEAR(same_share, 0.1 + 0.1 / 300, 0.02);  // unchanged, or a random word that is the same
    } else {
      EXPECT_LT(rate, 0.15);  // repeated draws select fewer distinct tokens
      EXPECT_GT(rate, 0.12);
      EXPECT_NEAR(mask_share, 0.8, 0.02);
      EXPECT_LT(same_share, 0.02);
    }
  }
}

// The paper's layout: "[CLS] A [SEP] B [SEP]" within max_length; A and a true B are consecutive
// windows of one review's words (its sentences joined by "."), in order, every word once;
// token types from B on; about half the items true.
TEST(BertExamples, SegmentsAreConsecutiveWindowsOfAReview) {
  BertExampleOptions o;
  o.layout = "segments";
  o.max_length = 12;
  o.mask_probability = 0;  // the words as they are, to compare with the reviews
  const auto texts = reviews();
  const BertExamples ex = build_bert_examples(texts, o);
  ASSERT_EQ(ex.width, 12);
  ASSERT_EQ(ex.second_start.size(), static_cast<size_t>(ex.size()));
  std::vector<std::vector<int32_t>> windows;  // what each item must hold, in order
  for (const auto& review : texts) {
    const auto sentences = split_sentences(review);
    std::vector<int32_t> stream;
    for (size_t k = 0; k < sentences.size(); ++k) {
      if (k) stream.push_back(static_cast<int32_t>(ex.vocab.id(".")));
      for (const auto& w : basic_english(sentences[k])) stream.push_back(static_cast<int32_t>(ex.vocab.id(w)));
    }
    // whole windows of 9 words, and a last one of two words or more
    for (size_t at = 0; at + 2 <= stream.size(); at += 9)
      windows.emplace_back(stream.begin() + static_cast<long>(at),
                           stream.begin() + static_cast<long>(std::min(stream.size(), at + 9)));
  }
  ASSERT_EQ(static_cast<size_t>(ex.size()), windows.size());
  int64_t next = 0;
  for (int64_t i = 0; i < ex.size(); ++i) {
    const int32_t* in = &ex.input_ids[i * 12];
    const auto& window = windows[static_cast<size_t>(i)];
    const int64_t b = ex.second_start[static_cast<size_t>(i)], a = b - 2;
    ASSERT_EQ(in[0], BertVocab::kCls);
    ASSERT_GE(a, 1);
    ASSERT_LT(a, static_cast<int64_t>(window.size()));
    ASSERT_EQ(in[b - 1], BertVocab::kSep) << "item " << i;
    int64_t end = b;
    while (end < 12 && in[end] != BertVocab::kSep) ++end;
    ASSERT_LT(end, 12) << "a closing [SEP]";
    ASSERT_GT(end, b) << "a B of one word or more";
    ASSERT_LE(end - b, static_cast<int64_t>(window.size()) - a) << "B no longer than the window's rest";
    for (int64_t p = end + 1; p < 12; ++p) ASSERT_EQ(in[p], BertVocab::kPad);
    EXPECT_EQ(std::vector<int32_t>(in + 1, in + b - 1), std::vector<int32_t>(window.begin(), window.begin() + a));
    if (ex.is_next[static_cast<size_t>(i)]) {
      ++next;
      EXPECT_EQ(std::vector<int32_t>(in + b, in + end), std::vector<int32_t>(window.begin() + a, window.end()));
    }
  }
  EXPECT_NEAR(static_cast<double>(next) / static_cast<double>(ex.size()), 0.5, 0.15);

  o.mask_probability = 0.15;  // masking draws within A and within B only
  const BertExamples masked = build_bert_examples(texts, o);
  for (size_t p = 0; p < masked.masked.size(); ++p)
    if (masked.masked[p]) {
      EXPECT_GE(masked.original[p], BertVocab::kMask + 1) << p;
    }
  o.max_length = 4;
  EXPECT_THROW(build_bert_examples(texts, o), Error);
}

TEST(BertExamples, PercentileAndSplitAreNumpysAndPythons) {
  EXPECT_EQ(percentile_floor({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 70), 7);  // 7.3 -> 7
  EXPECT_EQ(percentile_floor({5}, 70), 5);
  EXPECT_EQ(percentile_floor({10, 1, 4}, 70), 6);  // sorted 1 4 10: 4 + 0.4 * 6 = 6.4
  EXPECT_EQ(split_sentences("a. b.c. . d"), (std::vector<std::string>{"a", "b.c", "", "d"}));
  EXPECT_EQ(split_sentences(""), (std::vector<std::string>{""}));
  EXPECT_EQ(basic_english("Don't <br />STOP, (now)!"),
            (std::vector<std::string>{"don", "'", "t", "stop", ",", "(", "now", ")", "!"}));
}

}  // namespace
}  // namespace zoo::data
