// The sampling decoders (models/sampling.h): top-k / top-p filtering equal to document 002's
// Python function (tests/py/top_k_top_p_ref.py), draws that follow the filtered
// distribution and depend on the seed only, the repetition penalty, streaming and stops.
#include <gtest/gtest.h>

#include "models/sampling.h"
#include "test_util.h"
#include "io/safetensors.h"

namespace zoo::models {
namespace {

torch::Tensor python_filter(const torch::Tensor& logits, int64_t k, double p, int64_t m) {
  test::TempDir dir;
  safetensors::save(dir / "in.safetensors", {{"logits", logits}});
  auto r = test::run_python("top_k_top_p_ref.py", (dir / "in.safetensors") + " " + (dir / "out.safetensors") + " " +
                                                      std::to_string(k) + " " + std::to_string(p) + " " +
                                                      std::to_string(m));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? safetensors::load(dir / "out.safetensors").tensors.at("filtered") : torch::Tensor();
}

TEST(Sampling, TopKTopPFilteringMatchesDocument002) {
  torch::manual_seed(0);
  auto logits = torch::randn({5, 40});
  logits[1].narrow(0, 0, 6).fill_(2.0);  // ties at the k-th place
  struct Case { int64_t k; double p; int64_t m; };
  for (const Case& c : {Case{0, 1.0, 1}, Case{5, 1.0, 1}, Case{0, 0.9, 1}, Case{3, 0.5, 1}, Case{50, 1.0, 1},
                        Case{0, 0.05, 3}, Case{2, 0.3, 4}, Case{4, 0.999, 1}}) {
    auto ours = top_k_top_p_filtering(logits.clone(), c.k, c.p, -std::numeric_limits<double>::infinity(), c.m);
    auto ref = python_filter(logits, c.k, c.p, c.m);
    ASSERT_TRUE(ref.defined());
    EXPECT_TRUE(torch::equal(ours.isinf(), ref.isinf())) << "k " << c.k << " p " << c.p << " m " << c.m;
    auto finite = ref.isfinite();
    EXPECT_TRUE(torch::allclose(ours.masked_select(finite), ref.masked_select(finite), 1e-6, 1e-6));
  }
}

// A model without context: the same next-token distribution every step.
class Fixed : public StepModel {
 public:
  explicit Fixed(torch::Tensor log_probs) : log_probs_(std::move(log_probs)) {}
  torch::Tensor step(const torch::Tensor& prev, DecoderState&) override {
    ++calls;
    return log_probs_.unsqueeze(0).expand({prev.size(0), -1}).clone();
  }
  int calls = 0;

 private:
  torch::Tensor log_probs_;
};

DecoderState rows(int64_t n) {
  DecoderState s;
  s.set("h", torch::zeros({n, 1}));
  return s;
}

GenerationOptions options(int64_t max_new, int64_t eos = 99) {
  GenerationOptions g;
  g.bos_id = 0;
  g.eos_id = eos;
  g.num_beams = 1;
  g.max_new_tokens = max_new;
  return g;
}

TEST(Sampling, DrawsFollowTheFilteredDistributionAndTheSeed) {
  auto probs = torch::tensor({0.5, 0.3, 0.15, 0.05}, torch::kDouble);
  Fixed model(probs.log().to(torch::kFloat));
  SamplingOptions o;
  o.seed = 7;
  o.top_k = 3;  // token 3 never drawn; the rest renormalised to 0.5/0.95, 0.3/0.95, 0.15/0.95
  auto h = sample_decode(model, rows(1), options(20000), o);
  std::vector<double> counts(4, 0);
  for (int64_t t : h[0].tokens) counts[t] += 1;
  EXPECT_EQ(counts[3], 0);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(counts[i] / 20000, probs[i].item<double>() / 0.95, 0.015) << i;
  auto again = sample_decode(model, rows(1), options(50), o);
  EXPECT_EQ(again[0].tokens, sample_decode(model, rows(1), options(50), o)[0].tokens);
  o.seed = 8;
  EXPECT_NE(again[0].tokens, sample_decode(model, rows(1), options(50), o)[0].tokens);
}

TEST(Sampling, GreedyTopKOneTinyTopPAndColdTemperatureAllTakeTheBest) {
  Fixed model(torch::tensor({0.2, 0.5, 0.3}).log());
  SamplingOptions o;
  o.do_sample = false;
  const std::vector<int64_t> best(10, 1);
  EXPECT_EQ(sample_decode(model, rows(2), options(10), o)[1].tokens, best);
  o.do_sample = true;
  o.top_k = 1;
  EXPECT_EQ(sample_decode(model, rows(1), options(10), o)[0].tokens, best);
  o.top_k = 0;
  o.top_p = 0.01;
  EXPECT_EQ(sample_decode(model, rows(1), options(10), o)[0].tokens, best);
  o.top_p = 1;
  o.temperature = 1e-4;
  EXPECT_EQ(sample_decode(model, rows(1), options(10), o)[0].tokens, best);
}

TEST(Sampling, RepetitionPenaltyTurnsAwayFromTokensAlreadyThere) {
  Fixed model(torch::tensor({0.45, 0.55}).log());
  SamplingOptions o;
  o.do_sample = false;
  o.repetition_penalty = 1.5;  // log 0.55 * 1.5 < log 0.45: token 1 loses once it appeared
  auto h = sample_decode(model, rows(1), options(3), o, /*context=*/{});
  EXPECT_EQ(h[0].tokens, (std::vector<int64_t>{1, 0, 1}));
  // In greedy and beam search through the Constraint interface, with the prompt as context.
  RepetitionPenalty penalty(1.5, {1});
  auto g = greedy_decode(model, rows(1), options(1), &penalty);
  EXPECT_EQ(g[0].tokens, (std::vector<int64_t>{0}));
}

TEST(Sampling, StreamsEveryTokenInOrderAndStopsWhenAsked) {
  Fixed model(torch::tensor({0.1, 0.2, 0.3, 0.4}).log());
  SamplingOptions o;
  o.seed = 3;
  std::vector<int64_t> streamed;
  auto h = sample_decode(model, rows(1), options(30), o, {}, nullptr, [&](int64_t row, int64_t token) {
    EXPECT_EQ(row, 0);
    streamed.push_back(token);
    return streamed.size() < 5;
  });
  EXPECT_EQ(streamed.size(), 5u);
  EXPECT_EQ(h[0].tokens, streamed);
  EXPECT_FALSE(h[0].finished);
  EXPECT_EQ(model.calls, 5);
  // eos ends a row as finished
  auto e = sample_decode(model, rows(1), options(200, /*eos=*/3), o);
  EXPECT_TRUE(e[0].finished);
  EXPECT_EQ(e[0].tokens.back(), 3);
}

TEST(Sampling, BadOptionsAreRejectedByName) {
  SamplingOptions o;
  o.temperature = 0;
  EXPECT_THROW(o.validate(), Error);
  o.temperature = 1;
  o.top_p = 1.5;
  try {
    o.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("top_p"), std::string::npos);
  }
}

}  // namespace
}  // namespace zoo::models
