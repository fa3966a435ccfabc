// Seq2Seq (GRU encoder-decoder with attention): options, the exact state-dict names,
// parity with document 000's PyTorch modules (tests/py/seq2seq_doc000.py), shapes and
// gradients for every score, source padding masks, and the once-per-batch key projection.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "models/seq2seq.h"
#include "test_util.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"

namespace zoo {
namespace {

using models::Seq2Seq;
using models::Seq2SeqOptions;

Seq2SeqOptions tiny(const std::string& attention = "bahdanau", bool bidirectional = false) {
  Seq2SeqOptions o;
  o.source_vocab_size = 11;
  o.target_vocab_size = 13;
  o.embedding_dim = 4;
  o.units = 6;
  o.attention = attention;
  o.bidirectional_encoder = bidirectional;
  return o;
}

std::vector<std::string> sorted_keys(const torch::nn::Module& m) {
  std::vector<std::string> keys;
  for (const auto& [k, v] : state_dict(m)) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  return keys;
}

void expect_close(const torch::Tensor& ours, const torch::Tensor& ref, double tol,
                  const std::string& what) {
  ASSERT_EQ(ours.sizes(), ref.sizes()) << what;
  EXPECT_TRUE(torch::allclose(ours, ref, tol, tol))
      << what << ": max |diff| " << (ours - ref).abs().max().item<double>();
}

// Right-padded sources (pad 0): lengths 5, 2, 7 in a batch of length 7.
torch::Tensor padded_source(int64_t vocab) {
  auto src = torch::randint(1, vocab, {3, 7}, torch::kLong);
  src.index_put_({0, torch::indexing::Slice(5)}, 0);
  src.index_put_({1, torch::indexing::Slice(2)}, 0);
  return src;
}

TEST(Seq2SeqOptions, DefaultsAreTheDocumentsAndValidationNamesTheKey) {
  Seq2SeqOptions o;
  EXPECT_EQ(o.embedding_dim, 256);
  EXPECT_EQ(o.units, 1024);
  EXPECT_EQ(o.attention_size(), 1024);
  EXPECT_THROW(o.validate(), Error);  // vocabulary sizes are required
  try {
    o.validate();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.source_vocab_size"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(tiny().validate());
  EXPECT_THROW(tiny("dot", /*bidirectional=*/true).validate(), Error);  // widths 12 vs 6
  EXPECT_NO_THROW(tiny("general", true).validate());
  auto o2 = tiny("dot");
  o2.attention_units = 5;  // unused by dot: refused rather than ignored
  EXPECT_THROW(o2.validate(), Error);
  auto o3 = tiny();
  o3.pad_id = 11;  // not a source id
  EXPECT_THROW(o3.validate(), Error);
  EXPECT_THROW(Seq2Seq bad(Seq2SeqOptions{}), Error);

  // JSON round trip through the fields() list; unknown keys and choices are rejected.
  const json j = to_json(tiny("concat", true));
  const auto back = read_options<Seq2SeqOptions>(j, "model");
  EXPECT_EQ(to_json(back), j);
  EXPECT_THROW(read_options<Seq2SeqOptions>(json{{"atention", "dot"}}, "model"), Error);
  EXPECT_THROW(read_options<Seq2SeqOptions>(json{{"attention", "cosine"}}, "model"), Error);
}

TEST(Seq2Seq, ExactStateDictKeysAreTheDocuments) {
  Seq2Seq m(tiny());
  const std::vector<std::string> expected = {
      "decoder.attention.V.bias",  "decoder.attention.V.weight",
      "decoder.attention.W1.bias", "decoder.attention.W1.weight",
      "decoder.attention.W2.bias", "decoder.attention.W2.weight",
      "decoder.embedding.weight",  "decoder.fc.bias",
      "decoder.fc.weight",         "decoder.gru.bias_hh_l0",
      "decoder.gru.bias_ih_l0",    "decoder.gru.weight_hh_l0",
      "decoder.gru.weight_ih_l0",  "encoder.embedding.weight",
      "encoder.gru.bias_hh_l0",    "encoder.gru.bias_ih_l0",
      "encoder.gru.weight_hh_l0",  "encoder.gru.weight_ih_l0",
  };
  EXPECT_EQ(sorted_keys(*m), expected);
  for (const auto& [k, v] : state_dict(*m)) {
    if (k == "decoder.gru.weight_ih_l0") {
      EXPECT_EQ(v.sizes(), (std::vector<int64_t>{18, 6 + 4}));
    }
    if (k == "decoder.attention.W1.weight") {
      EXPECT_EQ(v.sizes(), (std::vector<int64_t>{6, 6}));
    }
    if (k == "decoder.fc.weight") {
      EXPECT_EQ(v.sizes(), (std::vector<int64_t>{13, 6}));
    }
  }

  // Bidirectional encoder + Luong general: reverse GRU weights, the bridge, Wa (no bias);
  // the decoder GRU reads the 2 * units context.
  Seq2Seq g(tiny("general", true));
  const std::vector<std::string> expected_g = {
      "decoder.attention.Wa.weight",
      "decoder.embedding.weight",
      "decoder.fc.bias",
      "decoder.fc.weight",
      "decoder.gru.bias_hh_l0",
      "decoder.gru.bias_ih_l0",
      "decoder.gru.weight_hh_l0",
      "decoder.gru.weight_ih_l0",
      "encoder.bridge.bias",
      "encoder.bridge.weight",
      "encoder.embedding.weight",
      "encoder.gru.bias_hh_l0",
      "encoder.gru.bias_hh_l0_reverse",
      "encoder.gru.bias_ih_l0",
      "encoder.gru.bias_ih_l0_reverse",
      "encoder.gru.weight_hh_l0",
      "encoder.gru.weight_hh_l0_reverse",
      "encoder.gru.weight_ih_l0",
      "encoder.gru.weight_ih_l0_reverse",
  };
  EXPECT_EQ(sorted_keys(*g), expected_g);
  for (const auto& [k, v] : state_dict(*g)) {
    if (k == "decoder.attention.Wa.weight") {
      EXPECT_EQ(v.sizes(), (std::vector<int64_t>{6, 12}));
    }
    if (k == "decoder.gru.weight_ih_l0") {
      EXPECT_EQ(v.sizes(), (std::vector<int64_t>{18, 12 + 4}));
    }
  }

  auto keys_of = [](const Seq2SeqOptions& o) {
    std::vector<std::string> att;
    for (const auto& k : sorted_keys(*Seq2Seq(o)))
      if (k.rfind("decoder.attention.", 0) == 0) att.push_back(k);
    return att;
  };
  EXPECT_EQ(keys_of(tiny("concat")), (std::vector<std::string>{"decoder.attention.Wa.weight",
                                                               "decoder.attention.va.weight"}));
  EXPECT_TRUE(keys_of(tiny("dot")).empty());
}

// Document 000's Encoder/BahdanauAttention/Decoder in PyTorch vs. ours with the document's
// state dict loaded strictly (every name and shape must match).
TEST(Seq2Seq, MatchesDocument000sPyTorchModules) {
  test::TempDir dir;
  auto r = test::run_python("seq2seq_doc000.py", dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;

  Seq2SeqOptions o;
  o.source_vocab_size = 50;
  o.target_vocab_size = 60;
  o.embedding_dim = 16;
  o.units = 1024;
  o.mask_source_padding = false;  // the document attends to padding
  Seq2Seq m(o);
  load_model(*m, dir / "weights.safetensors");
  m->eval();
  const auto io = safetensors::load(dir / "io.safetensors").tensors;
  const auto& src = io.at("src");    // (3, 7), right-padded with 0
  const auto& targ = io.at("targ");  // (3, 5), targ[:, 0] = <start>

  torch::NoGradGuard no_grad;
  const auto enc = m->encode(src);
  EXPECT_FALSE(enc.mask.defined());
  expect_close(enc.outputs, io.at("enc_output"), 1e-5, "encoder output");
  expect_close(enc.hidden, io.at("enc_state"), 1e-5, "encoder state");

  torch::Tensor hidden = enc.hidden;
  std::vector<torch::Tensor> step_logits;
  for (int64_t t = 0; t < 4; ++t) {
    const std::string s = std::to_string(t);
    auto out = m->decode_step(targ.select(1, t), hidden, enc);  // gold token, as train_step
    expect_close(out.logits, io.at("logits." + s), 1e-5, "logits at step " + s);
    expect_close(out.hidden, io.at("state." + s), 1e-5, "state at step " + s);
    expect_close(out.attention, io.at("attention." + s).squeeze(-1), 1e-5,
                 "attention at step " + s);
    hidden = out.hidden;
    step_logits.push_back(out.logits);
  }
  // forward() with full teacher forcing = the same four steps.
  auto logits = m->forward(src, targ.narrow(1, 0, 4));  // (3, 4, 60)
  expect_close(logits, torch::stack(step_logits, 1), 1e-5, "forward logits");

  // With the mask on, the padded sentences differ (and the full-length one does not).
  Seq2SeqOptions masked = o;
  masked.mask_source_padding = true;
  Seq2Seq mm(masked);
  load_model(*mm, dir / "weights.safetensors");
  auto logits_masked = mm->forward(src, targ.narrow(1, 0, 4));
  EXPECT_GT((logits_masked[0] - logits[0]).abs().max().item<double>(), 1e-4);
  // (packed and unpacked GRU kernels round differently)
  expect_close(logits_masked[2], logits[2], 1e-4, "unpadded sentence with the mask on");
}

TEST(Seq2Seq, ShapesAndBackwardForEveryScore) {
  struct Case {
    std::string attention;
    bool bidirectional;
    int64_t layers;
  };
  const std::vector<Case> cases = {
      {"bahdanau", false, 1}, {"bahdanau", true, 2}, {"dot", false, 2},   {"general", true, 1},
      {"general", false, 1},  {"concat", true, 2},   {"concat", false, 1}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.attention + (c.bidirectional ? " bidirectional" : "") + " layers " +
                 std::to_string(c.layers));
    torch::manual_seed(0);
    auto o = tiny(c.attention, c.bidirectional);
    o.num_layers = c.layers;
    o.dropout = c.layers > 1 ? 0.1 : 0.0;
    Seq2Seq m(o);
    auto src = padded_source(11);
    auto tgt = torch::randint(1, 13, {3, 5}, torch::kLong);
    auto logits = m->forward(src, tgt);
    ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{3, 5, 13}));
    const auto enc = m->encode(src);
    EXPECT_EQ(enc.outputs.sizes(), (std::vector<int64_t>{3, 7, c.bidirectional ? 12 : 6}));
    EXPECT_EQ(enc.hidden.sizes(), (std::vector<int64_t>{c.layers, 3, 6}));
    torch::nn::functional::cross_entropy(logits.reshape({-1, 13}), tgt.reshape({-1})).backward();
    for (const auto& p : m->named_parameters()) {
      ASSERT_TRUE(p.value().grad().defined()) << p.key();
      EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key() << " got no gradient";
    }
  }
  Seq2Seq m(tiny());
  EXPECT_THROW(m->forward(torch::zeros({2, 3}), torch::zeros({2, 2}, torch::kLong)), c10::Error);
}

TEST(Seq2Seq, PaddedSourcePositionsGetExactlyZeroAttention) {
  for (const bool bidirectional : {false, true}) {
    SCOPED_TRACE(bidirectional ? "bidirectional" : "unidirectional");
    torch::manual_seed(1);
    Seq2Seq m(tiny("bahdanau", bidirectional));
    m->eval();
    torch::NoGradGuard no_grad;
    auto src = padded_source(11);
    const auto enc = m->encode(src);
    ASSERT_TRUE(enc.mask.defined());
    EXPECT_TRUE(torch::equal(enc.mask, src.ne(0)));
    auto out = m->decode_step(torch::full({3}, 1, torch::kLong), enc.hidden, enc);
    EXPECT_TRUE(torch::all(out.attention.masked_select(src.eq(0)) == 0).item<bool>())
        << out.attention;
    EXPECT_TRUE(torch::all(out.attention.masked_select(src.ne(0)) > 0).item<bool>());
    expect_close(out.attention.sum(1), torch::ones({3}), 1e-6, "attention row sums");

    // The padded sentence alone, without its padding, decodes to the same logits: the
    // packed encoder never reads the padding (in either direction).
    auto tgt = torch::randint(1, 13, {3, 4}, torch::kLong);
    auto batched = m->forward(src, tgt);
    auto alone = m->forward(src.narrow(0, 1, 1).narrow(1, 0, 2), tgt.narrow(0, 1, 1));
    expect_close(batched.narrow(0, 1, 1), alone, 1e-5, "padded vs unpadded sentence");

    // Without the mask (document 000) the padding gets attention.
    auto o = tiny("bahdanau", bidirectional);
    o.mask_source_padding = false;
    Seq2Seq doc(o);
    doc->eval();
    const auto enc_doc = doc->encode(src);
    auto out_doc = doc->decode_step(torch::full({3}, 1, torch::kLong), enc_doc.hidden, enc_doc);
    EXPECT_GT(out_doc.attention.masked_select(src.eq(0)).min().item<double>(), 0);
  }
  // Left padding would silently break packing: refused.
  Seq2Seq m(tiny());
  auto left = torch::tensor({0, 0, 3, 4}, torch::kLong).unsqueeze(0);
  EXPECT_THROW(m->encode(left), c10::Error);
}

// The key side of the score is computed by encode(), once per batch: decode_step uses the
// cached keys (changing W1 afterwards changes nothing) and equals the naive formula.
TEST(Seq2Seq, KeyProjectionIsComputedOncePerBatch) {
  torch::manual_seed(2);
  Seq2Seq m(tiny());
  m->eval();
  torch::NoGradGuard no_grad;
  auto src = padded_source(11);
  auto prev = torch::tensor({1, 5, 7}, torch::kLong);
  const auto enc = m->encode(src);
  const auto out = m->decode_step(prev, enc.hidden, enc);

  // Naive document-style recomputation: V tanh(W1 values + W2 query), masked softmax.
  auto params = m->named_parameters();
  auto lin = [&](const std::string& name, const torch::Tensor& x) {
    return torch::nn::functional::linear(x, params["decoder.attention." + name + ".weight"],
                                         params["decoder.attention." + name + ".bias"]);
  };
  auto query = enc.hidden[0].unsqueeze(1);  // (B, 1, H)
  auto score = lin("V", torch::tanh(lin("W1", enc.outputs) + lin("W2", query))).squeeze(-1);
  auto naive = torch::softmax(score.masked_fill(src.eq(0), -INFINITY), 1);  // (B, S)
  expect_close(out.attention, naive, 1e-6, "attention vs naive recomputation");
  expect_close(enc.keys, lin("W1", enc.outputs), 1e-6, "precomputed keys");

  // Scramble W1: steps on the old EncoderState do not see it; a new encode() does.
  params["decoder.attention.W1.weight"].mul_(-3).add_(0.5);
  const auto again = m->decode_step(prev, enc.hidden, enc);
  EXPECT_TRUE(torch::equal(again.logits, out.logits));
  EXPECT_TRUE(torch::equal(again.attention, out.attention));
  const auto enc2 = m->encode(src);
  const auto changed = m->decode_step(prev, enc2.hidden, enc2);
  EXPECT_GT((changed.attention - out.attention).abs().max().item<double>(), 1e-4);
}

TEST(Seq2Seq, TeacherForcingRatioFeedsPredictionsReproducibly) {
  torch::manual_seed(3);
  Seq2Seq m(tiny("general"));
  m->eval();
  torch::NoGradGuard no_grad;
  auto src = padded_source(11);
  auto tgt = torch::randint(1, 13, {3, 6}, torch::kLong);

  // Ratio 0: every step after the first feeds the previous argmax, as a manual loop does.
  auto enc = m->encode(src);
  auto hidden = enc.hidden;
  auto prev = tgt.select(1, 0);
  std::vector<torch::Tensor> manual;
  for (int64_t t = 0; t < 6; ++t) {
    auto out = m->decode_step(prev, hidden, enc);
    hidden = out.hidden;
    prev = out.logits.argmax(-1);
    manual.push_back(out.logits);
  }
  expect_close(m->forward(src, tgt, 0.0), torch::stack(manual, 1), 1e-6, "ratio 0");

  // Ratio 0.5: the same generator seed gives the same mixture, which differs from both
  // extremes (for this seed some steps are forced and some are not).
  auto g1 = at::detail::createCPUGenerator(42);
  auto g2 = at::detail::createCPUGenerator(42);
  auto a = m->forward(src, tgt, 0.5, &g1);
  auto b = m->forward(src, tgt, 0.5, &g2);
  EXPECT_TRUE(torch::equal(a, b));
  auto forced = m->forward(src, tgt, 1.0);
  auto predicted = m->forward(src, tgt, 0.0);
  EXPECT_FALSE(torch::allclose(a, forced));
  EXPECT_FALSE(torch::allclose(a, predicted));
  // Step 0 always reads tgt_in[:, 0].
  expect_close(a.select(1, 0), forced.select(1, 0), 1e-6, "first step");
}

}  // namespace
}  // namespace zoo
