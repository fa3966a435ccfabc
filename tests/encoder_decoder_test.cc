// The encoder-decoder interface (models/encoder_decoder.h): the generic generate() decodes
// a model that is not Seq2Seq exactly as worked out by hand, and the registry builds
// translation models by model type, refusing types that are not encoder-decoders.
#include "models/encoder_decoder.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/encoder_decoder_ensemble.h"
#include "models/registry.h"
#include "models/seq2seq.h"
#include "train/task_registry.h"

namespace zoo {
namespace {

using models::DecoderState;
using models::GenerationOptions;
using models::Hypothesis;

constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kVocab = 5;
constexpr double kHit = 0.7;  // probability of the copied token; the rest is spread evenly

// A copying "translator": at step t it puts probability kHit on source token t, and on eos
// once the source (without padding) is used up. Its attention row at step t is one-hot on
// source position t (the last position once past the end). Every number is known, so its
// decodes can be computed by hand.
class CopyModelImpl : public torch::nn::Module, public models::EncoderDecoder {
 public:
  CopyModelImpl() { bias = register_parameter("bias", torch::zeros({kVocab})); }

  DecoderState start(const torch::Tensor& src) override {
    DecoderState state;
    state.set("memory", src, 0, DecoderState::Scope::kSentence);
    state.set("position", torch::zeros({src.size(0)}, torch::kLong), 0);
    return state;
  }

  torch::Tensor step(const torch::Tensor& /*prev_tokens*/, DecoderState& state) override {
    saw_training = is_training();
    saw_grad = torch::GradMode::is_enabled();
    const torch::Tensor& src = state.get("memory");  // (N, S)
    const torch::Tensor& position = state.get("position");
    const int64_t rows = src.size(0), len = src.size(1);
    auto at = position.clamp_max(len - 1);
    auto token = src.gather(1, at.unsqueeze(1)).squeeze(1);
    token = torch::where(position.ge(len) | token.eq(kPad), torch::full_like(token, kEos), token);
    auto probs = torch::full({rows, kVocab}, (1 - kHit) / (kVocab - 1));
    probs.scatter_(1, token.unsqueeze(1), kHit);
    state.set("position", position + 1, 0);
    state.set("attention", torch::one_hot(at, len).to(torch::kFloat), 0);
    return torch::log_softmax(probs.log() + bias, -1);
  }

  torch::Tensor attention(const DecoderState& state) const override {
    return state.has("attention") ? state.get("attention") : torch::Tensor();
  }

  // Teacher forcing changes nothing for a model that ignores its inputs.
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in, double ratio = 1.0,
                        torch::Generator* = nullptr) override {
    if (ratio < 1) throw Error("CopyModel: no teacher_forcing_ratio below 1");
    DecoderState state = start(src);
    std::vector<torch::Tensor> steps;
    for (int64_t t = 0; t < tgt_in.size(1); ++t) steps.push_back(step(tgt_in.select(1, t), state));
    return torch::stack(steps, 1);
  }

  std::shared_ptr<torch::nn::Module> module() override { return shared_from_this(); }
  int64_t pad_id() const override { return kPad; }

  torch::Tensor bias;
  bool saw_training = true, saw_grad = true;
};
TORCH_MODULE(CopyModel);

GenerationOptions greedy(int64_t max_new_tokens) {
  GenerationOptions o;
  o.bos_id = kBos;
  o.eos_id = kEos;
  o.num_beams = 1;
  o.max_new_tokens = max_new_tokens;
  o.attention = true;
  return o;
}

TEST(EncoderDecoder, GenericGreedyDecodesAModelThatIsNotSeq2SeqAsComputedByHand) {
  CopyModel m;
  m->train();
  const auto src = torch::tensor({{3, 4, 4, 0}, {4, 0, 0, 0}}, torch::kLong);
  const auto out = models::generate(*m, src, greedy(10));

  // By hand: copy the real tokens, then eos; each token has probability 0.7.
  const std::vector<std::vector<int64_t>> expected = {{3, 4, 4, kEos}, {4, kEos}};
  ASSERT_EQ(out.size(), 2u);
  for (size_t b = 0; b < 2; ++b) {
    ASSERT_EQ(out[b].size(), 1u);
    const Hypothesis& h = out[b][0];
    EXPECT_EQ(h.tokens, expected[b]);
    EXPECT_TRUE(h.finished);
    const double n = static_cast<double>(expected[b].size());
    EXPECT_NEAR(h.log_prob, n * std::log(kHit), 1e-5);
    EXPECT_NEAR(h.score, std::log(kHit), 1e-5);  // length_penalty 1: log_prob / length
    // Row t attends to source position t.
    ASSERT_TRUE(h.attention.defined());
    EXPECT_TRUE(torch::equal(h.attention, torch::eye(4).narrow(0, 0, expected[b].size())))
        << h.attention;
  }
  // Decoding ran in eval mode without gradients; the caller's mode is back.
  EXPECT_FALSE(m->saw_training);
  EXPECT_FALSE(m->saw_grad);
  EXPECT_TRUE(m->is_training());

  // Cut at max_new_tokens: unfinished, the tokens so far.
  const auto cut = models::generate(*m, src.narrow(0, 0, 1), greedy(2));
  EXPECT_EQ(cut[0][0].tokens, (std::vector<int64_t>{3, 4}));
  EXPECT_FALSE(cut[0][0].finished);
}

TEST(EncoderDecoder, GenericBeamSearchAgreesAndScoresLikeTeacherForcing) {
  CopyModel m;
  const auto src = torch::tensor({{3, 4, 4, 0}, {4, 0, 0, 0}}, torch::kLong);
  GenerationOptions o = greedy(10);
  o.num_beams = 3;
  o.num_return_sequences = 2;
  const auto out = models::generate(*m, src, o);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0][0].tokens, (std::vector<int64_t>{3, 4, 4, kEos}));
  EXPECT_EQ(out[1][0].tokens, (std::vector<int64_t>{4, kEos}));
  for (const auto& nbest : out) {
    ASSERT_EQ(nbest.size(), 2u);
    EXPECT_GE(nbest[0].score, nbest[1].score);
  }
  // The model's teacher-forced log-probability of the best output is its log_prob.
  const auto& best = out[0][0];
  std::vector<int64_t> in = {kBos};
  in.insert(in.end(), best.tokens.begin(), best.tokens.end() - 1);
  torch::NoGradGuard no_grad;
  const auto lp = m->forward(src.narrow(0, 0, 1), torch::tensor(in, torch::kLong).unsqueeze(0))[0];
  const auto gold = torch::tensor(best.tokens, torch::kLong).unsqueeze(1);
  EXPECT_NEAR(lp.gather(1, gold).sum().item<double>(), best.log_prob, 1e-5);
}

// An ensemble decodes with the mean of its members' distributions: at every step the log of
// the mean of their probabilities (worked out here from the members' own steps), each member
// on its own entries of the state; two copies of one model decode as that model.
TEST(EncoderDecoderEnsemble, StepsWithTheMeanOfTheMembersDistributions) {
  CopyModel a, b;
  {
    torch::NoGradGuard no_grad;
    b->bias.copy_(torch::tensor({0.0, 0.0, 1.5, -1.0, 0.5}));  // favours eos: another opinion
  }
  std::shared_ptr<models::EncoderDecoder> pa = a.ptr(), pb = b.ptr();
  models::EncoderDecoderEnsemble both({pa, pb});
  const auto src = torch::tensor({{3, 4, 4, 0}, {4, 0, 0, 0}}, torch::kLong);
  DecoderState state = both.start(src), sa = a->start(src), sb = b->start(src);
  EXPECT_EQ(state.names(), (std::vector<std::string>{"0/memory", "0/position", "1/memory", "1/position"}));
  auto prev = torch::full({2}, kBos, torch::kLong);
  for (int step = 0; step < 3; ++step) {
    const auto mean = both.step(prev, state);
    const auto pa_ = a->step(prev, sa).exp(), pb_ = b->step(prev, sb).exp();
    EXPECT_TRUE(torch::allclose(mean, ((pa_ + pb_) / 2).log(), 1e-5, 1e-6)) << "step " << step;
    EXPECT_TRUE(torch::allclose(mean.exp().sum(1), torch::ones({2}), 1e-5, 1e-6));
    // The attention rows: both members attend alike, so the mean is each one's.
    EXPECT_TRUE(torch::equal(both.attention(state), a->attention(sa)));
    prev = mean.argmax(1);
  }
  // Teacher forcing: the same mean, which a cross-entropy takes as logits.
  const int bos = kBos, eos = kEos;
  const auto tgt_in = torch::tensor({{bos, 3, 4}, {bos, 4, eos}}, torch::kLong);
  torch::NoGradGuard no_grad;
  const auto forced = both.forward(src, tgt_in);
  const auto by_hand = ((torch::log_softmax(a->forward(src, tgt_in), -1).exp() +
                         torch::log_softmax(b->forward(src, tgt_in), -1).exp()) / 2).log();
  EXPECT_TRUE(torch::allclose(forced, by_hand, 1e-5, 1e-6));
  // The members' modules are the ensemble's: eval() reaches both.
  both.module()->train();
  EXPECT_TRUE(a->is_training() && b->is_training());
  both.module()->eval();
  EXPECT_FALSE(a->is_training() || b->is_training());

  // Two copies of one model decode as that model, n-best and scores.
  models::EncoderDecoderEnsemble twice({pa, pa});
  GenerationOptions o = greedy(10);
  o.num_beams = 3;
  o.num_return_sequences = 2;
  const auto one = models::generate(*a, src, o), two = models::generate(twice, src, o);
  ASSERT_EQ(one.size(), two.size());
  for (size_t s = 0; s < one.size(); ++s)
    for (size_t k = 0; k < one[s].size(); ++k) {
      EXPECT_EQ(two[s][k].tokens, one[s][k].tokens);
      EXPECT_NEAR(two[s][k].log_prob, one[s][k].log_prob, 1e-5);
      EXPECT_TRUE(torch::allclose(two[s][k].attention, one[s][k].attention));
    }
  EXPECT_THROW(models::EncoderDecoderEnsemble({}), Error);
}

json seq2seq_section() {
  return models::resolve_model_config(
      {{"model_type", "seq2seq"}, {"embedding_dim", 8}, {"units", 16}, {"source_vocab_size", 11},
       {"target_vocab_size", 13}, {"bos_id", 1}, {"eos_id", 2}});
}

TEST(EncoderDecoderRegistry, BuildsSeq2SeqWithItsOwnTensorNames) {
  const json section = seq2seq_section();
  const auto model = models::build_encoder_decoder(section);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->pad_id(), 0);
  std::set<std::string> built, direct;
  for (const auto& p : model->module()->named_parameters()) built.insert(p.key());
  models::Seq2SeqOptions o;
  o.embedding_dim = 8;
  o.units = 16;
  o.source_vocab_size = 11;
  o.target_vocab_size = 13;
  for (const auto& p : models::Seq2Seq(o)->named_parameters()) direct.insert(p.key());
  EXPECT_EQ(built, direct);
  EXPECT_TRUE(built.count("decoder.attention.W1.weight"));
  // The same module either way: the interface is no copy.
  EXPECT_EQ(model->module().get(), dynamic_cast<torch::nn::Module*>(model.get()));

  const auto out = models::generate(*model, torch::tensor({{3, 4, 0}}, torch::kLong), greedy(5));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0][0].attention.size(1), 3);
}

TEST(EncoderDecoderRegistry, RefusesOtherModelTypesAndIncompleteSections) {
  const json vit = models::resolve_model_config({{"preset", "vit-tiny"}});
  try {
    models::build_encoder_decoder(vit);
    FAIL() << "a ViT is not an encoder-decoder";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'vit' is not an encoder-decoder"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("seq2seq"), std::string::npos) << e.what();
  }
  json section = seq2seq_section();
  section.erase("source_vocab_size");  // the task fills it in; without it there is no model
  try {
    models::build_encoder_decoder(section);
    FAIL() << "built without a source vocabulary size";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.source_vocab_size"), std::string::npos) << e.what();
  }
  section = seq2seq_section();
  section["eos_id"] = 13;  // outside the target vocabulary
  EXPECT_THROW(models::build_encoder_decoder(section), Error);
}

// The task table names the model types translation trains; each must be an encoder-decoder,
// since the task builds them with build_encoder_decoder().
TEST(EncoderDecoderRegistry, TranslationTrainsOnlyEncoderDecoders) {
  const std::string name = "translation";
  const TaskEntry& translation = task_entry(name);
  ASSERT_FALSE(translation.model_types.empty());
  for (const auto& type : translation.model_types) {
    EXPECT_TRUE(models::model_entry(type).is_encoder_decoder) << type;
    EXPECT_TRUE(models::model_entry(type).build) << type;
  }
  EXPECT_FALSE(models::model_entry("vit").is_encoder_decoder);
}

}  // namespace
}  // namespace zoo
