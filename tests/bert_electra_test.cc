// ELECTRA's replaced-token detection head (models/bert_electra.h): the generator's samples
// follow its softmax and repeat with their seed, only masked positions are replaced, the
// discriminator's body is registered as bert.* (what fine-tuning loads), and both halves and
// the shared word embedding learn from the combined loss.
#include "models/bert_electra.h"

#include <gtest/gtest.h>

#include <set>

#include "io/checkpoint.h"

namespace zoo {
namespace {

models::BertOptions tiny() {
  models::BertOptions o;
  o.vocab_size = 50;
  o.hidden_size = 32;
  o.num_hidden_layers = 2;
  o.num_attention_heads = 4;
  o.intermediate_size = 64;
  o.max_position_embeddings = 16;
  o.hidden_dropout_prob = o.attention_probs_dropout_prob = 0;
  o.pretraining_head = "electra";
  o.generator_hidden_size = 8;
  return o;
}

TEST(BertElectra, SamplesFollowTheSoftmaxAndRepeatWithTheirSeed) {
  // Two tokens at odds 1:3 in every row, a third never.
  auto logits = torch::tensor({0.0, std::log(3.0), -1e4}).repeat({20000, 1});
  const auto a = models::sample_tokens(logits, 7);
  EXPECT_TRUE(torch::equal(a, models::sample_tokens(logits, 7)));
  EXPECT_FALSE(torch::equal(a, models::sample_tokens(logits, 8)));
  EXPECT_EQ(a.eq(2).sum().item<int64_t>(), 0);
  EXPECT_NEAR(a.eq(1).to(torch::kDouble).mean().item<double>(), 0.75, 0.015);
  // A row sure of its token always gives it.
  auto sure = torch::full({5, 50}, -1e4);
  for (int64_t r = 0; r < 5; ++r) sure[r][r * 7] = 0;
  EXPECT_TRUE(torch::equal(models::sample_tokens(sure, 1), torch::tensor({0, 7, 14, 21, 28}, torch::kLong)));
}

TEST(BertElectra, ReplacesOnlyMaskedTokensAndTrainsBothHalves) {
  torch::manual_seed(5);
  models::BertForReplacedTokenDetection m(tiny());
  std::set<std::string> names;
  for (const auto& [k, v] : state_dict(*m)) names.insert(k);
  for (const char* k : {"bert.embeddings.word_embeddings.weight", "bert.encoder.layer.1.output.LayerNorm.weight",
                        "discriminator_predictions.dense.weight", "discriminator_predictions.dense_prediction.bias",
                        "generator.embeddings_project.weight", "generator.encoder.layer.1.attention.self.query.weight",
                        "generator_predictions.dense.weight", "generator_predictions.LayerNorm.bias",
                        "generator_lm_head.bias"})
    EXPECT_TRUE(names.count(k)) << k;
  for (const auto& k : names) EXPECT_NE(k.rfind("cls.", 0), 0u) << k << ": MLM's head has no place here";

  const auto originals = torch::randint(5, 50, {4, 12}, torch::kLong);
  const auto selected = torch::rand({4, 12}).lt(0.3);
  const auto masked = originals.masked_fill(selected, 2);
  auto out = m->forward(masked, originals, selected, 11);
  ASSERT_EQ(out.generator_logits.size(0), selected.sum().item<int64_t>());
  EXPECT_EQ(out.discriminator_logits.sizes(), originals.sizes());
  EXPECT_EQ(out.replaced.logical_and(selected.logical_not()).sum().item<int64_t>(), 0) << "only masked tokens change";
  EXPECT_GT(out.replaced.sum().item<int64_t>(), selected.sum().item<int64_t>() / 2)
      << "an untrained generator rarely guesses the original among 50 tokens";
  EXPECT_TRUE(torch::equal(out.replaced, m->forward(masked, originals, selected, 11).replaced)) << "same seed, same samples";

  auto loss = torch::nn::functional::cross_entropy(out.generator_logits, originals.index({selected})) +
              torch::nn::functional::binary_cross_entropy_with_logits(out.discriminator_logits,
                                                                      out.replaced.to(torch::kFloat));
  loss.backward();
  for (const auto& item : m->named_parameters()) {
    const std::string& k = item.key();
    if (k.find("pooler") != std::string::npos) continue;  // not used in pretraining
    ASSERT_TRUE(item.value().grad().defined()) << k;
    EXPECT_GT(item.value().grad().abs().sum().item<double>(), 0.0) << k;
  }
}

}  // namespace
}  // namespace zoo
