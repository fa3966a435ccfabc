// BERT (models/bert.h): Hugging Face's names, and the same outputs as an independent
// plain-PyTorch BertForPreTraining / BertForSequenceClassification (tests/py/hf_bert.py) on the
// same weights, with padding and segment ids; the tied MLM decoder written out and dropped
// again as transformers' files hold it.
#include "models/bert.h"
#include "models/bert_doc000.h"
#include "models/registry.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

#include "test_util.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "train/device.h"
#include "train/precision.h"
#include "io/safetensors.h"

namespace zoo {
namespace {

models::BertOptions tiny() {
  models::BertOptions o;
  o.vocab_size = 53;
  o.hidden_size = 32;
  o.num_hidden_layers = 2;
  o.num_attention_heads = 4;
  o.intermediate_size = 64;
  o.max_position_embeddings = 20;
  o.hidden_dropout_prob = o.attention_probs_dropout_prob = 0;
  o.num_labels = 3;
  return o;
}

template <class M>
void perturb(M& m) {
  torch::NoGradGuard g;
  for (auto& p : m->parameters()) p.add_(torch::randn_like(p) * 0.1);
  m->eval();
}

// Writes the model as a Hugging Face directory (config.json + model.safetensors).
void write_hf(const torch::nn::Module& m, const std::string& dir) {
  std::map<std::string, torch::Tensor> tensors;
  for (const auto& [name, t] : state_dict(m)) tensors[name] = t;
  models::bert_to_hf_tensors(tensors);
  safetensors::save(dir + "/model.safetensors", {tensors.begin(), tensors.end()});
  json config = to_json(tiny());
  config["model_type"] = "bert";
  write_json_file(dir + "/config.json", config);
}

struct Inputs {
  torch::Tensor ids, types, mask;
};
Inputs inputs() {
  auto ids = torch::randint(5, 53, {3, 11}, torch::kLong);
  auto types = torch::zeros({3, 11}, torch::kLong);
  types.narrow(1, 6, 5).fill_(1);
  auto mask = torch::ones({3, 11}, torch::kLong);
  mask[1].narrow(0, 7, 4).zero_();  // padded rows
  mask[2].narrow(0, 4, 7).zero_();
  ids.masked_fill_(mask.eq(0), 0);
  return {ids, types, mask};
}

std::map<std::string, torch::Tensor> python(const test::TempDir& dir, const std::string& head, const Inputs& in) {
  safetensors::save(dir / "in.safetensors", {{"input_ids", in.ids}, {"token_type_ids", in.types}, {"attention_mask", in.mask}});
  auto r = test::run_python("hf_bert.py", "logits " + dir.path().string() + " " + head + " " + (dir / "in.safetensors") +
                                              " " + (dir / "out.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return {};
  return safetensors::load(dir / "out.safetensors").tensors;
}

TEST(Bert, RegisteredNamesAreHuggingFaces) {
  torch::manual_seed(1);
  models::BertForPreTraining m(tiny());
  std::set<std::string> names;
  for (const auto& [k, v] : state_dict(*m)) names.insert(k);
  for (const char* k :
       {"bert.embeddings.word_embeddings.weight", "bert.embeddings.position_embeddings.weight",
        "bert.embeddings.token_type_embeddings.weight", "bert.embeddings.LayerNorm.weight",
        "bert.encoder.layer.0.attention.self.query.weight", "bert.encoder.layer.1.attention.self.value.bias",
        "bert.encoder.layer.0.attention.output.dense.weight", "bert.encoder.layer.0.attention.output.LayerNorm.bias",
        "bert.encoder.layer.1.intermediate.dense.weight", "bert.encoder.layer.1.output.dense.bias",
        "bert.encoder.layer.1.output.LayerNorm.weight", "bert.pooler.dense.weight",
        "cls.predictions.transform.dense.weight", "cls.predictions.transform.LayerNorm.bias", "cls.predictions.bias",
        "cls.seq_relationship.weight"})
    EXPECT_TRUE(names.count(k)) << k;
  EXPECT_EQ(names.count("cls.predictions.decoder.weight"), 0u);  // tied to the word embedding
}

// model.position_embedding_init: normal is Hugging Face's N(0, 0.02) (neighbouring rows
// unrelated); sinusoidal is the sinusoidal table at that scale (neighbouring rows alike), in
// both heads.
TEST(Bert, PositionTableStartsAsConfigured) {
  const auto positions = [](const torch::nn::Module& m) {
    for (const auto& [name, t] : state_dict(m))
      if (name == "bert.embeddings.position_embeddings.weight") return t;
    ADD_FAILURE() << "no position table";
    return torch::Tensor();
  };
  const auto neighbour_cosine = [](const torch::Tensor& t) {
    return torch::cosine_similarity(t.narrow(0, 0, t.size(0) - 1), t.narrow(0, 1, t.size(0) - 1), 1).mean().item<double>();
  };
  torch::manual_seed(3);
  auto o = tiny();
  const auto normal = positions(*models::BertForPreTraining(o));
  EXPECT_NEAR(normal.std().item<double>(), 0.02, 0.004);
  EXPECT_LT(std::abs(neighbour_cosine(normal)), 0.2);
  o.position_embedding_init = "sinusoidal";
  const auto table = models::sinusoidal_positions(20, 32) * (0.02 * std::sqrt(2.0));
  for (const torch::Tensor& p :
       {positions(*models::BertForPreTraining(o)), positions(*models::BertForSequenceClassification(o))}) {
    EXPECT_TRUE(torch::allclose(p, table, 0, 1e-7));
    EXPECT_GT(neighbour_cosine(p), 0.5);
  }
  // zoo's own field stays out of the Hugging Face config.json
  json section = to_json(o);
  section["model_type"] = "bert";
  const json hf = models::to_hf_config(section);
  EXPECT_EQ(hf.count("position_embedding_init"), 0u) << hf.dump();
  EXPECT_EQ(hf.at("position_embedding_type"), "absolute");
  o.position_embedding_init = "zeros";
  EXPECT_THROW(read_options<models::BertOptions>(to_json(o), "model"), Error);
}

TEST(Bert, PretrainingHeadsGiveThePythonReferencesOutputs) {
  test::TempDir dir;
  torch::manual_seed(2);
  models::BertForPreTraining m(tiny());
  perturb(m);
  write_hf(*m, dir.path().string());
  const Inputs in = inputs();
  auto py = python(dir, "pretraining", in);
  ASSERT_FALSE(py.empty());
  torch::NoGradGuard g;
  const auto ours = m->forward(in.ids, in.types, in.mask);
  // Padded positions' MLM scores are compared too: both attend over the unpadded keys only.
  EXPECT_LE((ours.prediction_logits - py.at("prediction_logits")).abs().max().item<double>(), 1e-4);
  EXPECT_LE((ours.seq_relationship_logits - py.at("seq_relationship_logits")).abs().max().item<double>(), 1e-4);

  // The file, as transformers writes it (tied decoder included), loads back.
  auto file = safetensors::load(dir / "model.safetensors").tensors;
  EXPECT_TRUE(file.count("cls.predictions.decoder.weight"));
  models::bert_from_hf_tensors(file);
  torch::manual_seed(3);
  models::BertForPreTraining back(tiny());
  back->eval();
  {
    auto params = back->named_parameters();
    for (auto& [name, t] : file) params[name].copy_(t);
  }
  EXPECT_TRUE(torch::equal(back->forward(in.ids, in.types, in.mask).prediction_logits, ours.prediction_logits));
}

// Given the selected tokens' words, the pretraining model's MLM loss (output layer and softmax
// in one kernel) is the cross-entropy of its scores, and every parameter's gradient is the
// same, the tied word embedding's and the decoder bias's included; an ignored label counts
// for nothing.
TEST(Bert, MlmLossWithLabelsEqualsTheCrossEntropyOfTheScores) {
  torch::manual_seed(4);
  models::BertForPreTraining m(tiny());
  perturb(m);
  const Inputs in = inputs();
  auto selected = torch::rand(in.ids.sizes()).lt(0.4).logical_and(in.mask.to(torch::kBool));
  selected[0][1] = true;
  auto labels = torch::randint(0, tiny().vocab_size, {selected.sum().item<int64_t>()});
  labels[0] = -100;
  auto grads = [&](bool with_labels) {
    m->zero_grad();
    auto out = m->forward(in.ids, in.types, in.mask, selected, 0, with_labels ? labels : torch::Tensor());
    auto loss = with_labels ? out.mlm_loss : torch::nn::functional::cross_entropy(out.prediction_logits, labels);
    EXPECT_EQ(out.prediction_logits.defined(), !with_labels);
    loss.backward();
    std::map<std::string, torch::Tensor> g{{"loss", loss.detach()}};
    for (const auto& p : m->named_parameters())
      if (p.value().grad().defined()) g[p.key()] = p.value().grad().clone();
    return g;
  };
  const auto want = grads(false), got = grads(true);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(want.count("cls.predictions.bias") && want.count("bert.embeddings.word_embeddings.weight"));
  for (const auto& [name, w] : want)
    EXPECT_TRUE(torch::allclose(got.at(name), w, 1e-4, 1e-6))
        << name << ": largest difference " << (got.at(name) - w).abs().max().item<double>();
}

TEST(Bert, SequenceClassificationGivesThePythonReferencesLogits) {
  test::TempDir dir;
  torch::manual_seed(4);
  models::BertForSequenceClassification m(tiny());
  perturb(m);
  write_hf(*m, dir.path().string());
  const Inputs in = inputs();
  auto py = python(dir, "classification", in);
  ASSERT_FALSE(py.empty());
  torch::NoGradGuard g;
  EXPECT_LE((m->forward(in.ids, in.types, in.mask) - py.at("logits")).abs().max().item<double>(), 1e-4);
  // A padded row gives what it gives alone.
  auto alone = m->forward(in.ids.narrow(0, 2, 1).narrow(1, 0, 4), in.types.narrow(0, 2, 1).narrow(1, 0, 4));
  EXPECT_LE((alone - m->forward(in.ids, in.types, in.mask).narrow(0, 2, 1)).abs().max().item<double>(), 1e-5);
}

// classifier_pooling mean: the pooler reads the mean of the unpadded tokens' last hidden
// states (padding changes nothing), and such a model has no Hugging Face form to export to.
TEST(Bert, MeanPoolingReadsTheMeanOfTheUnpaddedTokens) {
  torch::manual_seed(5);
  auto o = tiny();
  o.classifier_pooling = "mean";
  models::BertForSequenceClassification m(o);
  perturb(m);
  const Inputs in = inputs();
  torch::NoGradGuard g;
  const auto logits = m->forward(in.ids, in.types, in.mask);
  const auto hidden = m->bert(in.ids, in.types, in.mask);
  const auto keep = in.mask.unsqueeze(-1).to(torch::kFloat);
  auto params = m->named_parameters();
  const auto pooled = torch::tanh(torch::nn::functional::linear((hidden * keep).sum(1) / keep.sum(1),
                                                                params["bert.pooler.dense.weight"],
                                                                params["bert.pooler.dense.bias"]));
  const auto want = torch::nn::functional::linear(pooled, params["classifier.weight"], params["classifier.bias"]);
  EXPECT_LE((logits - want).abs().max().item<double>(), 1e-5);
  auto cls = o;
  cls.classifier_pooling = "cls";
  models::BertForSequenceClassification first(cls);
  first->eval();
  for (auto& p : first->named_parameters()) p.value().copy_(params[p.key()]);
  EXPECT_GT((first->forward(in.ids, in.types, in.mask) - logits).abs().max().item<double>(), 1e-3);
  auto alone = m->forward(in.ids.narrow(0, 2, 1).narrow(1, 0, 4), in.types.narrow(0, 2, 1).narrow(1, 0, 4));
  EXPECT_LE((alone - logits.narrow(0, 2, 1)).abs().max().item<double>(), 1e-5);
  json section = to_json(o);
  section["model_type"] = "bert";
  EXPECT_THROW(models::to_hf_config(section, "text_classification"), Error);
  section["classifier_pooling"] = "cls";
  EXPECT_EQ(models::to_hf_config(section, "text_classification").count("classifier_pooling"), 0u);
}

// Document 000's own BERT, defects included, against its PyTorch code (tests/py/bert_doc000.py)
// with the same weights: the same MLM log-probabilities and NSP logits within 1e-5.
TEST(BertDoc000, MatchesTheDocumentsPyTorchCode) {
  test::TempDir dir;
  auto r = test::run_python("bert_doc000.py", "run 57 24 18 3 5 " + (dir / "doc.safetensors"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto t = safetensors::load(dir / "doc.safetensors").tensors;
  models::Doc000BertOptions o;
  o.vocab_size = 57, o.dim_inp = 24, o.dim_out = 18, o.attention_heads = 3;
  models::Doc000Bert m(o);
  m->eval();
  torch::NoGradGuard g;
  size_t loaded = 0;
  for (auto& p : m->named_parameters()) {
    ASSERT_TRUE(t.count(p.key())) << p.key();
    p.value().copy_(t.at(p.key()));
    ++loaded;
  }
  EXPECT_EQ(loaded + 4, t.size()) << "every tensor of the document's state dict is a parameter here";
  auto [tokens, nsp] = m->forward(t.at("input_ids"), t.at("attention_mask"));
  EXPECT_LE((tokens - t.at("token_predictions")).abs().max().item<double>(), 1e-5);
  EXPECT_LE((nsp - t.at("nsp")).abs().max().item<double>(), 1e-5);
}

// Under bf16 autocast (on a CPU with native bf16, or CUDA) document 000's BERT runs forward and
// backward (its LayerNorms get fp32 inputs: LibTorch 1.x's CPU layer_norm refused bf16 ones),
// close to its fp32 outputs.
TEST(BertDoc000, RunsUnderBf16Autocast) {
  std::vector<torch::Device> devices;
  if (!cpu_bf16_support().empty()) devices.emplace_back(torch::kCPU);
  if (torch::cuda::is_available() && cuda_bf16_support(0)) devices.emplace_back(torch::kCUDA);
  if (devices.empty()) GTEST_SKIP() << "neither this CPU nor a GPU computes in bf16";  // reported, not passed
  for (const auto& device : devices) {
    models::Doc000BertOptions o;
    o.vocab_size = 57, o.dim_inp = 24, o.dim_out = 18, o.attention_heads = 3;
    torch::manual_seed(2);
    models::Doc000Bert m(o);
    m->to(device);
    m->eval();
    const auto ids = torch::randint(5, 57, {3, 11}, torch::kLong).to(device);
    const auto mask = (ids == 7).unsqueeze(1);
    auto [want_tokens, want_nsp] = m->forward(ids, mask);
    torch::Tensor tokens, nsp;
    {
      AutocastGuard autocast(true, device);
      std::tie(tokens, nsp) = m->forward(ids, mask);
    }
    (tokens.to(torch::kFloat).sum() + nsp.to(torch::kFloat).sum()).backward();
    EXPECT_LE((tokens.to(torch::kFloat) - want_tokens).abs().max().item<double>(), 0.1) << device;
    EXPECT_TRUE(m->parameters().front().grad().defined()) << device;
  }
}

// The MLM loss over the selected tokens' scores only equals the document's loss over all
// positions with the others zeroed (masked_fill + NLLLoss(ignore_index=0)), gradients too.
TEST(BertDoc000, SelectedTokenLossEqualsTheDocumentsMaskedLoss) {
  models::Doc000BertOptions o;
  o.vocab_size = 41, o.dim_inp = 16, o.dim_out = 12, o.attention_heads = 2, o.dropout = 0;
  torch::manual_seed(8);
  models::Doc000Bert m(o);
  auto ids = torch::randint(5, 41, {3, 9}, torch::kLong);
  auto selected = torch::rand({3, 9}).lt(0.3);
  selected[0][2] = true;
  auto target = ids.masked_fill(selected.logical_not(), 0);
  auto mask = ids.eq(1).unsqueeze(1);
  auto grads = [&](bool selected_only) {
    m->zero_grad();
    auto encoded = m->encode(ids, mask);
    torch::Tensor loss;
    if (selected_only) {
      loss = torch::nn::functional::nll_loss(m->token_log_probs(encoded.index({selected})), target.index({selected}),
                                             torch::nn::functional::NLLLossFuncOptions().ignore_index(0));
    } else {
      auto token = m->token_log_probs(encoded);
      token = token.masked_fill(selected.logical_not().unsqueeze(-1).expand_as(token), 0);
      loss = torch::nn::functional::nll_loss(token.transpose(1, 2), target,
                                             torch::nn::functional::NLLLossFuncOptions().ignore_index(0));
    }
    loss.backward();
    std::vector<torch::Tensor> out{loss.detach()};
    for (auto& p : m->parameters()) out.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return out;
  };
  const auto a = grads(true), b = grads(false);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_LE((a[i] - b[i]).abs().max().item<double>(), 1e-6) << i;
}

}  // namespace
}  // namespace zoo
