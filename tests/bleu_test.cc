// Tests of train/bleu: 13a tokenisation and corpus BLEU against an independent Python reference
// (tests/py/bleu_ref.py: `re` tokenisation + NLTK corpus_bleu), and sacreBLEU's documented
// behaviour where NLTK differs (zero matches, 'exp' smoothing, short corpora, empty segments).
// All sentences are invented.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"
#include "train/bleu.h"
#include "core/error.h"

namespace zoo {
namespace {

using json = nlohmann::json;

json run_bleu_ref(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  test::TempDir dir;
  const std::string in = dir / "in.json";
  test::write_file(in, json{{"hyps", hyps}, {"refs", refs}}.dump());
  const test::RunResult r = test::run_python("bleu_ref.py", in);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(r.output);
}

// Every hypothesis has >= 4 tokens and every n-gram order matches somewhere, so NLTK's
// unsmoothed corpus BLEU equals sacreBLEU's.
const std::vector<std::string> kHyps = {
    "The cat is sitting on the mat.",
    "A cup of green tea, please.",
    "He doesn't know where the station is.",
    "We went to the beach on Sunday morning.",
    "It costs 3.50 dollars, not 1,000!",
    "She said: \"I'm tired\" and left early.",
    "Open the window (if it's hot).",
    "The meeting starts at 10-11 am tomorrow.",
    "My brother plays the guitar very well.",
    "Can you help me carry these boxes?",
    "Tom & Mary are old friends.",
    "This book is more interesting than that one.",
    "The train was late again today.",
    "Turn off the lights, please.",
    "I have never seen such a big dog.",
    "They moved to a small town near the sea.",
    "What time does the shop close?",
    "The the children laughed at the the clown/juggler.",  // clipped counts
    "Rain is expected later this evening.",
    "You should eat more vegetables every day.",
};
const std::vector<std::string> kRefs = {
    "The cat sat on the mat.",
    "I'd like a cup of green tea, please.",
    "He does not know where the station is.",
    "We went to the beach on Sunday morning.",
    "It costs 3.50 dollars, not 1,000.",
    "She said \"I am tired\" and went home early.",
    "Open the window if it is hot.",
    "The meeting is from 10-11 am tomorrow.",
    "My older brother plays guitar well.",
    "Could you help me carry these boxes?",
    "Tom &amp; Mary have been friends for years.",
    "This book is more interesting than that one.",
    "Today the train was late again.",
    "Turn off the lights when you go out, please.",
    "I've never seen such a large dog.",
    "They moved to a little town by the sea.",
    "When does the store close?",
    "The kids laughed at the clown.",
    "It is supposed to rain tonight.",
    "You ought to eat more vegetables each day.",
};

TEST(Bleu, MatchesNltkOnFixture) {
  const json ref = run_bleu_ref(kHyps, kRefs);
  const BleuResult r = corpus_bleu(kHyps, kRefs);
  for (int n = 0; n < 4; ++n) {
    ASSERT_GT(r.correct[n], 0) << "fixture must match at every order, n=" << n + 1;
  }
  const double nltk = ref["bleu"].get<double>();
  EXPECT_GT(nltk, 0.2);
  EXPECT_LT(nltk, 0.8);
  EXPECT_NEAR(r.score, 100.0 * nltk, 1e-6);
  EXPECT_LT(r.bp, 0.999);  // the fixture's hypotheses are shorter overall
  EXPECT_NEAR(r.bp, std::exp(1.0 - static_cast<double>(r.ref_len) / r.sys_len), 1e-12);
  // Tokenisation agrees with the Python regexes sentence by sentence.
  for (size_t i = 0; i < kHyps.size(); ++i) {
    EXPECT_EQ(tokenize_13a(kHyps[i]), ref["hyp_tokens"][i].get<std::string>()) << kHyps[i];
    EXPECT_EQ(tokenize_13a(kRefs[i]), ref["ref_tokens"][i].get<std::string>()) << kRefs[i];
  }
  // A subset changes the score, and both implementations follow.
  const std::vector<std::string> h(kHyps.begin(), kHyps.begin() + 8);
  const std::vector<std::string> g(kRefs.begin(), kRefs.begin() + 8);
  EXPECT_NEAR(corpus_bleu(h, g).score, 100.0 * run_bleu_ref(h, g)["bleu"].get<double>(), 1e-6);
}

// Data-parallel evaluation adds up each part's statistics (as metric sums) and scores once:
// the score of the whole corpus, exactly.
TEST(Bleu, StatisticsOfPartsAddUpToTheCorpusScore) {
  std::map<std::string, double> sums;
  for (size_t start = 0; start < kHyps.size(); start += 5) {
    const size_t end = std::min(kHyps.size(), start + 5);
    add_bleu_sums(bleu_statistics({kHyps.begin() + start, kHyps.begin() + end}, {kRefs.begin() + start, kRefs.begin() + end}),
                  "bleu_", sums);
  }
  const BleuResult whole = corpus_bleu(kHyps, kRefs), parts = bleu_score(bleu_from_sums(sums, "bleu_"));
  EXPECT_GT(whole.score, 0.0);
  EXPECT_EQ(parts.score, whole.score);
  EXPECT_EQ(parts.correct, whole.correct);
  EXPECT_EQ(parts.sys_len, whole.sys_len);
  EXPECT_NE(bleu_score(bleu_statistics({kHyps[0]}, {kRefs[0]})).score, whole.score);  // a part alone differs
}

TEST(Bleu, TokenizerMatchesPythonRegexes) {
  const std::vector<std::string> lines = {
      "It's 3.5-4, (a) test.",
      "a.b,c 1.5 1,5 x.5 5.x .5 5. ,a a, ...",
      "&amp;lt; &quot;quoted&quot; &gt;&lt; & amp;",
      "<skipped> line-\nbreak and\nnewline",
      "e-mail 2-3 a-2 2--3 -2-",
      "{braces} [brackets] ~tilde `tick` ^caret_ |pipe| \\back/slash",
      "price: $5; 50% off! #1 @home *star* +plus =eq ?q",
      "Unicode: café — “quotes” 中文。，end",
      "   leading and trailing   \t",
      "",
      "...",
      "x\u3000y\u00a0z",
  };
  const json ref = run_bleu_ref(lines, lines);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string in = lines[i];
    while (!in.empty() && (in.back() == ' ' || in.back() == '\t')) in.pop_back();  // rstrip
    EXPECT_EQ(tokenize_13a(in), ref["hyp_tokens"][i].get<std::string>()) << json(lines[i]).dump();
  }
  EXPECT_EQ(tokenize_13a("It's 3.5-4, (a) test."), "It's 3.5 - 4 , ( a ) test .");
  EXPECT_EQ(tokenize_13a("&amp;lt;"), "<");
  EXPECT_THROW(tokenize_13a("bad \xff"), Error);
}

TEST(Bleu, PerfectMatchIs100) {
  const BleuResult r = corpus_bleu(kRefs, kRefs);
  EXPECT_DOUBLE_EQ(r.score, 100.0);
  EXPECT_DOUBLE_EQ(r.bp, 1.0);
  for (double p : r.precisions) EXPECT_DOUBLE_EQ(p, 100.0);
  EXPECT_EQ(r.sys_len, r.ref_len);
}

TEST(Bleu, LengthMismatchIsAnError) {
  try {
    corpus_bleu({"a b c d"}, {"a b c d", "e f g h"});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("1 hypotheses but 2 references"), std::string::npos)
        << e.what();
  }
}

// sacreBLEU: no match at any order -> 0, precisions 0, bp still reported.
TEST(Bleu, NoMatchIsZero) {
  const BleuResult r = corpus_bleu({"w x y z"}, {"a b c d e f g h"});
  EXPECT_EQ(r.score, 0.0);
  for (double p : r.precisions) EXPECT_EQ(p, 0.0);
  EXPECT_EQ(r.sys_len, 4);
  EXPECT_EQ(r.ref_len, 8);
  EXPECT_NEAR(r.bp, std::exp(1.0 - 8.0 / 4.0), 1e-15);
}

// sacreBLEU's 'exp' smoothing: the k-th order with no match gets 100 / (2^k * total).
TEST(Bleu, ExpSmoothing) {
  const BleuResult r = corpus_bleu({"a b c d e"}, {"a b x d e"});
  EXPECT_EQ(r.correct, (std::array<int64_t, 4>{4, 2, 0, 0}));
  EXPECT_EQ(r.total, (std::array<int64_t, 4>{5, 4, 3, 2}));
  EXPECT_DOUBLE_EQ(r.precisions[0], 80.0);
  EXPECT_DOUBLE_EQ(r.precisions[1], 50.0);
  EXPECT_DOUBLE_EQ(r.precisions[2], 100.0 / (2 * 3));
  EXPECT_DOUBLE_EQ(r.precisions[3], 100.0 / (4 * 2));
  const double want =
      std::exp((std::log(80.0) + std::log(50.0) + std::log(100.0 / 6) + std::log(12.5)) / 4);
  EXPECT_NEAR(r.score, want, 1e-12);
  EXPECT_DOUBLE_EQ(r.bp, 1.0);
}

// A corpus whose segments are all shorter than 4 tokens has no 4-gram at all: sacreBLEU stops
// and the score is 0 even for a perfect match.
TEST(Bleu, NoHigherOrderNgramsIsZero) {
  const BleuResult r = corpus_bleu({"a b c"}, {"a b c"});
  EXPECT_EQ(r.total[3], 0);
  EXPECT_EQ(r.score, 0.0);
  EXPECT_DOUBLE_EQ(r.precisions[2], 100.0);
  EXPECT_EQ(r.precisions[3], 0.0);
}

TEST(Bleu, EmptyHypotheses) {
  const BleuResult all_empty = corpus_bleu({"", ""}, {"a b c d", "e f g h"});
  EXPECT_EQ(all_empty.score, 0.0);
  EXPECT_EQ(all_empty.sys_len, 0);
  EXPECT_EQ(all_empty.bp, 0.0);
  // One empty hypothesis only shortens the corpus (sacreBLEU adds no n-grams for it).
  const BleuResult one_empty = corpus_bleu({"a b c d e", ""}, {"a b c d e", "x y z"});
  EXPECT_EQ(one_empty.total, (std::array<int64_t, 4>{5, 4, 3, 2}));
  EXPECT_NEAR(one_empty.score, 100.0 * std::exp(1.0 - 8.0 / 5.0), 1e-12);
  const BleuResult none = corpus_bleu({}, {});
  EXPECT_EQ(none.score, 0.0);
}

// Segments are rstrip()ed before tokenisation, so a trailing "-\n" keeps its dash.
TEST(Bleu, SegmentsAreRstrippedFirst) {
  EXPECT_DOUBLE_EQ(corpus_bleu({"one two three four-\n"}, {"one two three four-"}).score, 100.0);
  EXPECT_DOUBLE_EQ(corpus_bleu({"one two three four \u3000"}, {"one two three four"}).score, 100.0);
}

}  // namespace
}  // namespace zoo
