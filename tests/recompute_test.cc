// Gradient checkpointing (models/recompute.h, train.gradient_checkpointing): the same loss and
// gradients as the plain forward pass, dropout on, for GPT, BERT, ViT and the Transformer.
#include <gtest/gtest.h>

#include "fixtures.h"
#include "models/bert.h"
#include "models/gpt.h"
#include "models/transformer.h"
#include "models/vit.h"
#include "train_fixtures.h"

namespace zoo {
namespace {

using models::set_gradient_checkpointing;

// loss() from the same random state with and without recomputation: the same loss and the same
// gradient for every parameter, to 1e-6.
void expect_same_gradients(torch::nn::Module& model, const std::function<torch::Tensor()>& loss,
                           const std::string& what) {
  model.train();
  auto run = [&](bool on) {
    EXPECT_GT(set_gradient_checkpointing(model, on), 0) << what;
    for (auto& p : model.parameters()) p.mutable_grad() = torch::Tensor();
    torch::manual_seed(5);  // the same dropout masks, if they are replayed
    const auto l = loss();
    l.backward();
    std::vector<torch::Tensor> grads{l.detach().clone()};
    for (const auto& p : model.parameters()) grads.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return grads;
  };
  const auto plain = run(false), recomputed = run(true);
  ASSERT_EQ(plain.size(), recomputed.size());
  EXPECT_TRUE(torch::allclose(plain[0], recomputed[0], 1e-6, 1e-6)) << what << ": loss";
  int nonzero = 0;
  for (size_t i = 1; i < plain.size(); ++i) {
    EXPECT_TRUE(torch::allclose(plain[i], recomputed[i], 1e-6, 1e-6))
        << what << ": gradient " << i << ", max |diff| " << (plain[i] - recomputed[i]).abs().max().item<double>();
    nonzero += plain[i].abs().sum().item<double>() > 0;
  }
  EXPECT_GT(nonzero, static_cast<int>(plain.size()) / 2) << what;
  set_gradient_checkpointing(model, false);
}

TEST(GradientCheckpointing, GptGivesTheSameGradients) {
  models::GPT2Options o;
  o.vocab_size = 50, o.n_positions = 16, o.n_embd = 32, o.n_layer = 3, o.n_head = 4;
  o.resid_pdrop = o.embd_pdrop = o.attn_pdrop = 0.2;
  torch::manual_seed(0);
  models::GPT2LMHeadModel model(o);
  const auto ids = torch::randint(0, 50, {4, 16}, torch::kLong);
  expect_same_gradients(*model, [&] {
    return torch::nn::functional::cross_entropy(model(ids).flatten(0, 1), ids.roll(-1, 1).flatten());
  }, "GPT");
}

TEST(GradientCheckpointing, BertGivesTheSameGradients) {
  models::BertOptions o;
  o.vocab_size = 60, o.hidden_size = 32, o.num_hidden_layers = 3, o.num_attention_heads = 4, o.intermediate_size = 64;
  o.max_position_embeddings = 32;
  torch::manual_seed(0);
  models::BertForSequenceClassification model(o);
  const auto ids = torch::randint(1, 60, {4, 12}, torch::kLong);
  auto mask = torch::ones({4, 12}, torch::kLong);
  mask.narrow(1, 9, 3).zero_();  // padding at the end of every row
  const auto labels = torch::tensor({0, 1, 1, 0}, torch::kLong);
  expect_same_gradients(*model, [&] {
    return torch::nn::functional::cross_entropy(model->forward(ids, torch::Tensor(), mask), labels);
  }, "BERT");
}

TEST(GradientCheckpointing, VitGivesTheSameGradients) {
  models::ViTOptions o;
  o.hidden_size = 32, o.num_hidden_layers = 3, o.num_attention_heads = 4, o.intermediate_size = 64;
  o.image_size = 8, o.patch_size = 4, o.num_channels = 1, o.num_labels = 3;
  o.hidden_dropout_prob = o.attention_probs_dropout_prob = 0.2;
  torch::manual_seed(0);
  models::ViTForImageClassification model(o);
  const auto x = torch::randn({4, 1, 8, 8});
  const auto labels = torch::tensor({0, 1, 2, 0}, torch::kLong);
  expect_same_gradients(*model, [&] { return torch::nn::functional::cross_entropy(model(x), labels); }, "ViT");
}

TEST(GradientCheckpointing, TransformerGivesTheSameGradients) {
  models::TransformerOptions o;
  o.source_vocab_size = 40, o.target_vocab_size = 30, o.d_model = 32, o.encoder_layers = 2, o.decoder_layers = 2;
  o.encoder_attention_heads = o.decoder_attention_heads = 4, o.encoder_ffn_dim = o.decoder_ffn_dim = 64;
  o.dropout = 0.2, o.attention_dropout = 0.1;
  torch::manual_seed(0);
  models::Transformer model(o);
  auto src = torch::randint(1, 40, {4, 9}, torch::kLong), tgt = torch::randint(1, 30, {4, 7}, torch::kLong);
  src.narrow(1, 7, 2).zero_();  // source padding
  expect_same_gradients(*model, [&] {
    return torch::nn::functional::cross_entropy(model(src, tgt).flatten(0, 1), tgt.roll(-1, 1).flatten());
  }, "Transformer");
}

// Through the trainer (train.gradient_checkpointing): the same per-step losses as without it,
// dropout and augmentation on; and the options it cannot run with are refused.
TEST(GradientCheckpointing, TrainsLikeThePlainRun) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 160, 40);
  auto config = resolve_config(json::parse(test::tiny_vit_config(dir.path().string())), "tiny.json");
  test::run_training(config, dir / "plain");
  config["train"]["gradient_checkpointing"] = true;
  test::run_training(config, dir / "recomputed");
  const auto plain = test::train_losses(dir / "plain"), recomputed = test::train_losses(dir / "recomputed");
  ASSERT_EQ(plain.size(), 8u);
  ASSERT_EQ(recomputed.size(), 8u);
  for (const auto& [step, loss] : plain) EXPECT_NEAR(recomputed.at(step), loss, 1e-6) << "step " << step;
}

}  // namespace
}  // namespace zoo
