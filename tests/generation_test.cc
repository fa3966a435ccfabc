// Decoding strategies (models/generation.h) on a deterministic table model, checked
// against exhaustive search, plus beam search with a real Seq2Seq.
#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "models/generation.h"
#include "models/kernels/beam_topk.h"
#include "models/seq2seq.h"

namespace zoo {
namespace {

using models::beam_search;
using models::DecoderState;
using models::GenerationOptions;
using models::greedy_decode;
using models::Hypothesis;
using models::PrefixTree;
using Scope = DecoderState::Scope;
using Tokens = std::vector<int64_t>;

constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kA = 3, kB = 4, kC = 5;
constexpr double kNegInf = -std::numeric_limits<double>::infinity();

// A second-order model from a table: log p(next | prev2, prev) = table[sentence][prev2][prev]
// (table: (sentences, V, V, V)). The state keeps each row's sentence (per sentence) and the
// token before the previous one (per hypothesis, so a wrong reorder changes the results).
class TableModel : public models::StepModel {
 public:
  explicit TableModel(torch::Tensor table) : table_(std::move(table)) {}
  DecoderState start(const Tokens& sentences) const {
    DecoderState s;
    s.set("sentence", torch::tensor(sentences, torch::kLong), 0, Scope::kSentence);
    s.set("prev", torch::full({static_cast<int64_t>(sentences.size())}, kBos, torch::kLong));
    return s;
  }
  torch::Tensor step(const torch::Tensor& prev_tokens, DecoderState& state) override {
    ++calls;
    auto out = table_.index({state.get("sentence"), state.get("prev"), prev_tokens});  // (N, V)
    state.set("prev", prev_tokens);
    return out.clone();
  }
  double log_prob(int64_t sentence, const Tokens& tokens) const {
    double lp = 0;
    int64_t prev2 = kBos, prev = kBos;
    for (int64_t t : tokens) {
      lp += table_[sentence][prev2][prev][t].item<double>();
      prev2 = prev;
      prev = t;
    }
    return lp;
  }
  const torch::Tensor& table() const { return table_; }
  int calls = 0;

 private:
  torch::Tensor table_;
};

// First-order table for one sentence: rows[prev] = {token: probability}; unlisted: 0.
torch::Tensor first_order(const std::map<int64_t, std::map<int64_t, double>>& rows, int64_t vocab) {
  auto t = torch::full({vocab, vocab}, kNegInf, torch::kFloat);
  for (const auto& [prev, probs] : rows)
    for (const auto& [token, p] : probs) t[prev][token] = std::log(p);
  return t.unsqueeze(0).unsqueeze(1).expand({1, vocab, vocab, vocab}).contiguous();
}

// Random second-order tables over V tokens; pad and bos are never generated.
torch::Tensor random_table(int64_t sentences, int64_t vocab, uint64_t seed) {
  torch::manual_seed(seed);
  auto logits = torch::randn({sentences, vocab, vocab, vocab}) * 1.5;
  logits.select(3, kEos).add_(0.5);  // sentences end
  logits.select(3, kPad).fill_(kNegInf);
  logits.select(3, kBos).fill_(kNegInf);
  return torch::log_softmax(logits, -1);
}

GenerationOptions options(int64_t beams, int64_t max_new, double alpha = 0.0) {
  GenerationOptions o;
  o.bos_id = kBos;
  o.eos_id = kEos;
  o.num_beams = beams;
  o.max_new_tokens = max_new;
  o.length_penalty = alpha;
  o.attention = true;
  return o;
}

// Every finished sequence of at most max_new tokens for sentence 0 (or `sentence`), scored.
std::vector<Hypothesis> exhaustive(const TableModel& m, int64_t sentence,
                                   const GenerationOptions& o) {
  std::vector<Hypothesis> out;
  auto acc = m.table().accessor<float, 4>();
  const int64_t vocab = m.table().size(3);
  Tokens prefix;
  std::function<void(int64_t, int64_t, double)> rec = [&](int64_t prev2, int64_t prev, double lp) {
    for (int64_t t = 0; t < vocab; ++t) {
      const double v = acc[sentence][prev2][prev][t];
      if (!std::isfinite(v)) continue;
      prefix.push_back(t);
      if (t == o.eos_id) {
        Hypothesis h;
        h.tokens = prefix;
        h.log_prob = lp + v;
        h.score = h.log_prob / o.length_divisor(static_cast<int64_t>(prefix.size()));
        h.finished = true;
        out.push_back(h);
      } else if (static_cast<int64_t>(prefix.size()) < o.max_new_tokens) {
        rec(prev, t, lp + v);
      }
      prefix.pop_back();
    }
  };
  rec(kBos, kBos, 0.0);
  std::stable_sort(out.begin(), out.end(),
                   [](const Hypothesis& a, const Hypothesis& b) { return a.score > b.score; });
  return out;
}

void expect_same(const Hypothesis& a, const Hypothesis& b, const std::string& what) {
  EXPECT_EQ(a.tokens, b.tokens) << what;
  EXPECT_NEAR(a.log_prob, b.log_prob, 1e-4) << what;
  EXPECT_NEAR(a.score, b.score, 1e-4) << what;
  EXPECT_EQ(a.finished, b.finished) << what;
}

TEST(DecoderState, ReorderMovesHypothesesAndKeepsSentences) {
  DecoderState s;
  s.set("memory", torch::tensor({10, 20}), 0, Scope::kSentence);
  s.set("hidden", torch::tensor({{1, 2}, {3, 4}}), 1);  // rows along dim 1
  EXPECT_EQ(s.rows(), 2);
  s.repeat_interleave(2);
  EXPECT_TRUE(torch::equal(s.get("memory"), torch::tensor({10, 10, 20, 20})));
  EXPECT_TRUE(torch::equal(s.get("hidden"), torch::tensor({{1, 1, 2, 2}, {3, 3, 4, 4}})));
  s.set("hidden", torch::tensor({{1, 5, 2, 6}, {3, 7, 4, 8}}), 1);
  s.reorder(torch::tensor({1, 1, 3, 2}));
  EXPECT_TRUE(torch::equal(s.get("memory"), torch::tensor({10, 10, 20, 20})));
  EXPECT_TRUE(torch::equal(s.get("hidden"), torch::tensor({{5, 5, 6, 2}, {7, 7, 8, 4}})));
  s.select(torch::tensor({2, 3}));
  EXPECT_TRUE(torch::equal(s.get("memory"), torch::tensor({20, 20})));
  EXPECT_EQ(s.rows(), 2);
  s.set("other", torch::zeros({3}));
  EXPECT_THROW(s.rows(), Error);
  EXPECT_THROW(s.get("missing"), Error);
  EXPECT_THROW(s.set("scalar", torch::tensor(1.0)), Error);
}

TEST(PrefixTree, AllowsOnlyContinuationsOfListedSequences) {
  // Document 002's example, one id per character: 明月几时有 / 明天会更好 / 明天下雨 / 明年见 ...
  const PrefixTree tree({{10, 11, 12}, {10, 13, 14}, {10, 13, 15, 16}, {10, 17}, {20}, {10, 17}},
                        kEos);
  EXPECT_EQ(tree.size(), 5);  // the duplicate counts once
  EXPECT_EQ(tree.allowed({}), (Tokens{10, 20}));
  EXPECT_EQ(tree.allowed({10}), (Tokens{11, 13, 17}));
  EXPECT_EQ(tree.allowed({10, 13}), (Tokens{14, 15}));
  EXPECT_EQ(tree.allowed({10, 17}), (Tokens{kEos}));
  EXPECT_TRUE(tree.allowed({10, 17, kEos}).empty());
  EXPECT_TRUE(tree.allowed({11}).empty());
  EXPECT_TRUE(tree.contains({10, 13, 14, kEos}));
  EXPECT_FALSE(tree.contains({10, 13, kEos}));
  EXPECT_FALSE(tree.contains({10, 13, 14}));

  auto lp = torch::zeros({2, 25});
  tree.apply({{}, {10, 13}}, lp);
  EXPECT_TRUE(torch::equal(lp[0].isfinite().nonzero().flatten(), torch::tensor({10, 20})));
  EXPECT_TRUE(torch::equal(lp[1].isfinite().nonzero().flatten(), torch::tensor({14, 15})));
  auto small = torch::zeros({1, 15});
  EXPECT_THROW(tree.apply({{}}, small), Error);  // token 20 is outside a vocabulary of 15
  EXPECT_THROW(PrefixTree({{3, kEos, 4}}, kEos), Error);
  const PrefixTree empty_ok({{}}, kEos);
  EXPECT_EQ(empty_ok.allowed({}), (Tokens{kEos}));
}

TEST(GenerationOptions, SpecialIdsAreRequired) {
  GenerationOptions o;
  EXPECT_THROW(o.validate(), Error);
  o = options(2, 5);
  EXPECT_NO_THROW(o.validate());
  o.num_return_sequences = 3;
  EXPECT_THROW(o.validate(), Error);
  o = options(2, 5, 1.0);
  EXPECT_DOUBLE_EQ(o.length_divisor(4), 4.0);
  o.length_normalization = "gnmt";
  EXPECT_DOUBLE_EQ(o.length_divisor(4), 9.0 / 6.0);
}

// bos -> a (0.5) | c (0.4) | eos (0.1); a -> eos (0.35) | a (0.33) | c (0.32); c -> eos (0.9) ...
TableModel greedy_trap() {
  return TableModel(first_order({{kBos, {{kA, 0.5}, {kC, 0.4}, {kEos, 0.1}}},
                                 {kA, {{kEos, 0.35}, {kA, 0.33}, {kC, 0.32}}},
                                 {kC, {{kEos, 0.9}, {kA, 0.05}, {kC, 0.05}}}},
                                6));
}

TEST(Greedy, TakesTheMostProbableTokenEachStep) {
  auto m = greedy_trap();
  auto hyps = greedy_decode(m, m.start({0}), options(1, 10));
  ASSERT_EQ(hyps.size(), 1u);
  EXPECT_EQ(hyps[0].tokens, (Tokens{kA, kEos}));
  EXPECT_NEAR(hyps[0].log_prob, std::log(0.5 * 0.35), 1e-6);
  EXPECT_TRUE(hyps[0].finished);
  EXPECT_FALSE(hyps[0].attention.defined());

  // Cut at max_new_tokens: unfinished. a -> a is the most probable without eos.
  auto loop = TableModel(
      first_order({{kBos, {{kA, 0.9}, {kEos, 0.1}}}, {kA, {{kA, 0.8}, {kEos, 0.2}}}}, 6));
  auto cut = greedy_decode(loop, loop.start({0}), options(1, 3));
  EXPECT_EQ(cut[0].tokens, (Tokens{kA, kA, kA}));
  EXPECT_FALSE(cut[0].finished);
}

TEST(BeamTopk, IsTopkOfTheScoredCandidates) {
  torch::manual_seed(5);
  const int64_t beams = 4, vocab = 1000, width = 8;
  auto log_probs = torch::log_softmax(torch::randn({3 * beams, vocab}) * 3, -1);
  log_probs.index_put_({5, torch::indexing::Slice(0, 990)}, -std::numeric_limits<float>::infinity());
  // Sentence 0: one live beam (the first step); 1: all live; 2: one live beam with 10 finite tokens.
  std::vector<double> scores = {0, kNegInf, kNegInf, kNegInf, -1.5, -0.25, -3.0, -2.0,
                                kNegInf, -4.0, kNegInf, kNegInf};
  log_probs.index_put_({9, torch::indexing::Slice(10, vocab)}, -std::numeric_limits<float>::infinity());
  const auto [top, numbers] = models::beam_topk(log_probs, scores, beams, width);
  const auto candidates = (log_probs + torch::tensor(scores, torch::kDouble).to(torch::kFloat).unsqueeze(1))
                              .view({3, beams * vocab});
  const auto [want, want_numbers] = candidates.topk(width, 1);
  EXPECT_TRUE(torch::equal(top.to(torch::kFloat), want));
  EXPECT_TRUE(torch::equal(numbers, want_numbers));
  // Fewer finite candidates than `width`: the rest is -inf.
  auto few = torch::full({2, 3}, -std::numeric_limits<float>::infinity());
  few.index_put_({0, 1}, -0.5);
  const auto [few_top, few_numbers] = models::beam_topk(few, {0.0, 0.0}, 2, 4);
  EXPECT_EQ(few_top[0][0].item<double>(), -0.5);
  EXPECT_EQ(few_numbers[0][0].item<int64_t>(), 1);
  EXPECT_EQ(few_top[0][1].item<double>(), kNegInf);
  // Ties: the lower number first.
  const auto [tie_top, tie_numbers] = models::beam_topk(torch::zeros({2, 3}), {0.0, 0.0}, 2, 2);
  EXPECT_EQ(tie_numbers[0][0].item<int64_t>(), 0);
  EXPECT_EQ(tie_numbers[0][1].item<int64_t>(), 1);
}

TEST(BeamSearch, FindsTheBetterSequenceGreedyMisses) {
  auto m = greedy_trap();
  auto beams = beam_search(m, m.start({0}), options(2, 10));
  ASSERT_EQ(beams.size(), 1u);
  ASSERT_EQ(beams[0].size(), 1u);
  EXPECT_EQ(beams[0][0].tokens, (Tokens{kC, kEos}));
  EXPECT_NEAR(beams[0][0].log_prob, std::log(0.4 * 0.9), 1e-6);
  EXPECT_GT(beams[0][0].log_prob, std::log(0.5 * 0.35));  // greedy's
  // Two steps: after the second every live extension is worse than c eos.
  EXPECT_EQ(m.calls, 2);
}

TEST(BeamSearch, BeamSizeOneIsGreedy) {
  auto m = TableModel(random_table(5, 7, 11));
  const Tokens sentences = {0, 1, 2, 3, 4};
  for (double alpha : {0.0, 1.0}) {
    auto o = options(1, 8, alpha);
    o.early_stopping = alpha > 0;  // else one beam may search on after greedy's eos
    auto greedy = greedy_decode(m, m.start(sentences), o);
    auto beam = beam_search(m, m.start(sentences), o);
    ASSERT_EQ(beam.size(), sentences.size());
    for (size_t i = 0; i < sentences.size(); ++i) {
      ASSERT_EQ(beam[i].size(), 1u);
      expect_same(beam[i][0], greedy[i], "sentence " + std::to_string(i));
    }
  }
}

TEST(BeamSearch, LengthNormalisationChangesTheWinner) {
  // Short: eos (0.45). Long: a eos (0.55 * 0.7 = 0.385). Raw log-prob prefers the short one,
  // log-prob / length the long one (-0.80 / 1 < -0.95 / 2).
  auto m = TableModel(first_order(
      {{kBos, {{kEos, 0.45}, {kA, 0.55}}}, {kA, {{kEos, 0.7}, {kB, 0.3}}}, {kB, {{kEos, 1.0}}}},
      6));
  auto raw = beam_search(m, m.start({0}), options(2, 5, 0.0));
  EXPECT_EQ(raw[0][0].tokens, (Tokens{kEos}));
  auto normalised = beam_search(m, m.start({0}), options(2, 5, 1.0));
  EXPECT_EQ(normalised[0][0].tokens, (Tokens{kA, kEos}));
  EXPECT_NEAR(normalised[0][0].score, std::log(0.385) / 2, 1e-6);
  auto o = options(2, 5, 1.0);
  o.length_normalization = "gnmt";
  o.num_return_sequences = 2;
  auto gnmt = beam_search(m, m.start({0}), o);
  ASSERT_EQ(gnmt[0].size(), 2u);
  for (const auto& h : gnmt[0])
    EXPECT_NEAR(h.score, h.log_prob / o.length_divisor(h.tokens.size()), 1e-9);
  EXPECT_GE(gnmt[0][0].score, gnmt[0][1].score);
}

// Under length normalisation a live hypothesis may still overtake a finished one even
// when its log-prob is already lower: eos (0.7) scores log 0.7 / 1 = -0.36 after one step,
// a b c eos (0.3 * 0.99^2) scores -1.22 / 4 = -0.31 after four. The search must not stop
// at the first step.
TEST(BeamSearch, EarlyStoppingNeverCutsOffABetterLongerHypothesis) {
  auto m = TableModel(first_order({{kBos, {{kEos, 0.7}, {kA, 0.3}}},
                                   {kA, {{kB, 0.99}, {kEos, 0.01}}},
                                   {kB, {{kC, 0.99}, {kEos, 0.01}}},
                                   {kC, {{kEos, 1.0}}}},
                                  6));
  auto best = beam_search(m, m.start({0}), options(2, 6, 1.0));
  EXPECT_EQ(best[0][0].tokens, (Tokens{kA, kB, kC, kEos}));
  EXPECT_NEAR(best[0][0].score, std::log(0.3 * 0.99 * 0.99) / 4, 1e-6);
  EXPECT_EQ(m.calls, 4);
  auto raw = beam_search(m, m.start({0}), options(2, 6, 0.0));
  EXPECT_EQ(raw[0][0].tokens, (Tokens{kEos}));
  EXPECT_EQ(m.calls, 4 + 1);  // without normalisation the bound stops after the first step
  // fairseq's rule stops once num_beams (2) hypotheses finished: eos and a eos, at step 2.
  auto o = options(2, 6, 1.0);
  o.early_stopping = true;
  auto early = beam_search(m, m.start({0}), o);
  EXPECT_EQ(early[0][0].tokens, (Tokens{kEos}));
  EXPECT_EQ(m.calls, 4 + 1 + 2);
}

// With a beam as wide as all candidates nothing is pruned, so beam search must return the
// exhaustive optimum -- this checks the early-stopping bound under length normalisation.
TEST(BeamSearch, WideBeamEqualsExhaustiveSearch) {
  auto m = TableModel(random_table(3, 5, 7));  // tokens pad, bos (never), eos, a, b
  for (double alpha : {0.0, 0.7, 1.5}) {
    for (const char* norm : {"plain", "gnmt"}) {
      auto o = options(48, 5, alpha);  // <= 3 * 2^4 candidates per step
      o.length_normalization = norm;
      o.num_return_sequences = 3;
      auto beams = beam_search(m, m.start({0, 1, 2}), o);
      for (int64_t s = 0; s < 3; ++s) {
        auto best = exhaustive(m, s, o);
        ASSERT_EQ(beams[s].size(), 3u);
        for (size_t k = 0; k < 3; ++k)
          expect_same(beams[s][k], best[k],
                      "sentence " + std::to_string(s) + " rank " + std::to_string(k) + " alpha " +
                          std::to_string(alpha) + " " + norm);
      }
    }
  }
}

TEST(BeamSearch, BatchedEqualsOneByOne) {
  auto m = TableModel(random_table(6, 8, 3));
  auto o = options(3, 7, 0.6);
  o.num_return_sequences = 2;
  const Tokens sentences = {0, 1, 2, 3, 4, 5};
  auto batched = beam_search(m, m.start(sentences), o);
  auto greedy_batched = greedy_decode(m, m.start(sentences), o);
  for (int64_t s : sentences) {
    auto alone = beam_search(m, m.start({s}), o);
    ASSERT_EQ(batched[s].size(), alone[0].size());
    for (size_t k = 0; k < alone[0].size(); ++k)
      expect_same(batched[s][k], alone[0][k], "sentence " + std::to_string(s));
    expect_same(greedy_batched[s], greedy_decode(m, m.start({s}), o)[0],
                "greedy, sentence " + std::to_string(s));
    // The model's own score of the returned tokens.
    EXPECT_NEAR(batched[s][0].log_prob, m.log_prob(s, batched[s][0].tokens), 1e-4);
  }
}

TEST(ConstrainedDecoding, OnlyListedSequencesAndTheBestOfThem) {
  const std::vector<Tokens> listed = {{kA, kB}, {kB, kA, kC}, {kC}, {kA, kA, kA}, {kB}};
  const PrefixTree tree(listed, kEos);
  auto o = options(8, 6);
  o.num_return_sequences = 3;
  // A model whose own best output is not listed (the first such seed), so the constraint
  // has to change the answer.
  auto m = TableModel(random_table(1, 6, 0));
  for (uint64_t seed = 0; tree.contains(beam_search(m, m.start({0}), o)[0][0].tokens); ++seed) {
    ASSERT_LT(seed, 100u);
    m = TableModel(random_table(1, 6, seed + 1));
  }

  // The listed sequences by the model's score.
  std::vector<std::pair<double, Tokens>> ranked;
  for (auto seq : listed) {
    seq.push_back(kEos);
    ranked.push_back({m.log_prob(0, seq), seq});
  }
  std::sort(ranked.rbegin(), ranked.rend());

  auto beams = beam_search(m, m.start({0}), o, &tree);
  ASSERT_EQ(beams[0].size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_TRUE(tree.contains(beams[0][k].tokens));
    EXPECT_EQ(beams[0][k].tokens, ranked[k].second);
    EXPECT_NEAR(beams[0][k].log_prob, ranked[k].first, 1e-4);
  }
  auto greedy = greedy_decode(m, m.start({0}), o, &tree);
  EXPECT_TRUE(tree.contains(greedy[0].tokens));
  EXPECT_TRUE(greedy[0].finished);
}

// --- With the real Seq2Seq -------------------------------------------------------------

models::Seq2Seq tiny_seq2seq(bool bidirectional) {
  models::Seq2SeqOptions o;
  o.source_vocab_size = 11;
  o.target_vocab_size = 13;
  o.embedding_dim = 8;
  o.units = 16;
  o.bidirectional_encoder = bidirectional;
  torch::manual_seed(4);
  models::Seq2Seq m(o);
  torch::NoGradGuard no_grad;
  m->named_parameters()["decoder.fc.bias"][kEos].add_(1.5);  // let some hypotheses end
  return m;
}

TEST(Seq2SeqGeneration, BeamSearchReturnsValidScoredSequencesWithAttention) {
  for (bool bidirectional : {false, true}) {
    SCOPED_TRACE(bidirectional ? "bidirectional" : "unidirectional");
    auto m = tiny_seq2seq(bidirectional);
    auto src =
        torch::tensor({{3, 4, 5, 6, 0, 0}, {7, 8, 9, 10, 3, 4}, {5, 5, 0, 0, 0, 0}}, torch::kLong);
    auto o = options(4, 9, 1.0);
    o.num_return_sequences = 3;
    auto nbest = models::generate(*m, src, o);
    ASSERT_EQ(nbest.size(), 3u);
    bool any_finished = false;
    for (int64_t b = 0; b < 3; ++b) {
      ASSERT_EQ(nbest[b].size(), 3u);
      const int64_t len = src[b].ne(0).sum().item<int64_t>();
      for (size_t k = 0; k < nbest[b].size(); ++k) {
        const Hypothesis& h = nbest[b][k];
        if (k > 0) {
          EXPECT_GE(nbest[b][k - 1].score, h.score);
        }
        ASSERT_FALSE(h.tokens.empty());
        ASSERT_LE(h.tokens.size(), 9u);
        for (size_t t = 0; t < h.tokens.size(); ++t) {
          EXPECT_GE(h.tokens[t], 0);
          EXPECT_LT(h.tokens[t], 13);
          if (t + 1 < h.tokens.size()) {
            EXPECT_NE(h.tokens[t], kEos);
          }
        }
        EXPECT_EQ(h.finished, h.tokens.back() == kEos);
        any_finished |= h.finished;
        // Attention rows: one per token, a distribution over the real source positions.
        ASSERT_TRUE(h.attention.defined());
        ASSERT_EQ(h.attention.sizes(), (std::vector<int64_t>{(int64_t)h.tokens.size(), 6}));
        EXPECT_TRUE(torch::allclose(h.attention.sum(1), torch::ones({(int64_t)h.tokens.size()})));
        EXPECT_EQ(h.attention.narrow(1, len, 6 - len).abs().sum().item<double>(), 0.0);
        // The score is the model's: teacher-forced log-probability of the same tokens.
        Tokens in = {kBos};
        in.insert(in.end(), h.tokens.begin(), h.tokens.end() - 1);
        torch::NoGradGuard no_grad;
        m->eval();
        auto lp = torch::log_softmax(
            m->forward(src.narrow(0, b, 1), torch::tensor(in, torch::kLong).unsqueeze(0)), -1)[0];
        auto gold = torch::tensor(h.tokens, torch::kLong).unsqueeze(1);
        EXPECT_NEAR(lp.gather(1, gold).sum().item<double>(), h.log_prob, 1e-4);
      }
      // Batched == alone (source padding is invisible).
      auto alone = models::generate(*m, src.narrow(0, b, 1).narrow(1, 0, len), o);
      for (size_t k = 0; k < nbest[b].size(); ++k) {
        EXPECT_EQ(alone[0][k].tokens, nbest[b][k].tokens);
        EXPECT_NEAR(alone[0][k].score, nbest[b][k].score, 1e-4);
      }
    }
    EXPECT_TRUE(any_finished);

    // num_beams = 1 goes through greedy search, which agrees with a one-beam search.
    m->train();
    auto greedy = models::generate(*m, src, options(1, 9));
    EXPECT_TRUE(m->is_training());  // mode restored
    m->eval();
    torch::NoGradGuard no_grad;
    auto one = beam_search(*m, m->start(src), options(1, 9));
    for (int64_t b = 0; b < 3; ++b) {
      ASSERT_EQ(greedy[b].size(), 1u);
      expect_same(greedy[b][0], one[b][0], "greedy vs one beam");
      EXPECT_TRUE(torch::allclose(greedy[b][0].attention, one[b][0].attention));
    }
  }
}

TEST(Seq2SeqGeneration, ConstrainedBeamSearchStaysInTheTree) {
  auto m = tiny_seq2seq(false);
  auto src = torch::tensor({{3, 4, 5, 0}, {6, 7, 0, 0}}, torch::kLong);
  const PrefixTree tree({{3, 4}, {5, 6, 7}, {8}}, kEos);
  auto o = options(4, 6);
  o.num_return_sequences = 3;
  auto nbest = models::generate(*m, src, o, &tree);
  for (const auto& sentence : nbest) {
    ASSERT_EQ(sentence.size(), 3u);  // exactly the three listed sequences, best first
    for (const auto& h : sentence) EXPECT_TRUE(tree.contains(h.tokens));
  }
}

}  // namespace
}  // namespace zoo
