// The Transformer (models/transformer.h): Hugging Face MarianMTModel names and export, the
// same logits as an independent plain-PyTorch Marian (tests/py/hf_marian.py), decoding with
// the key/value cache equal to recomputing the prefix, and its bad-input errors.
#include <gtest/gtest.h>

#include "models/registry.h"
#include "models/transformer.h"
#include "test_util.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "io/safetensors.h"

namespace zoo {
namespace {

models::TransformerOptions tiny(bool shared) {
  models::TransformerOptions o;
  o.source_vocab_size = shared ? 41 : 37;
  o.target_vocab_size = 41;
  o.d_model = 32;
  o.encoder_layers = 2;
  o.decoder_layers = 2;
  o.encoder_attention_heads = o.decoder_attention_heads = 4;
  o.encoder_ffn_dim = o.decoder_ffn_dim = 64;
  o.max_position_embeddings = 24;
  o.dropout = 0;
  o.share_encoder_decoder_embeddings = shared;
  return o;
}

json section_of(const models::TransformerOptions& o) {
  json section = to_json(o);
  section["model_type"] = "transformer";
  section["bos_id"] = 1;
  section["eos_id"] = 2;
  return models::resolve_model_config(section);
}

models::Transformer perturbed(const models::TransformerOptions& o, int seed) {
  torch::manual_seed(seed);
  models::Transformer m(o);
  torch::NoGradGuard g;
  for (auto& p : m->parameters()) p.add_(torch::randn_like(p) * 0.1);  // non-trivial LayerNorms and biases
  m->eval();
  return m;
}

// Sources right-padded with 0: rows of 9, 6 and 3 tokens.
torch::Tensor padded_sources(int64_t vocab) {
  auto src = torch::randint(3, vocab, {3, 9}, torch::kLong);
  src.index_put_({1, torch::indexing::Slice(6)}, 0);
  src.index_put_({2, torch::indexing::Slice(3)}, 0);
  return src;
}

TEST(Transformer, RegisteredNamesAreMarians) {
  for (bool shared : {true, false}) {
    auto m = perturbed(tiny(shared), 1);
    std::set<std::string> names;
    for (const auto& [k, v] : state_dict(*m)) names.insert(k);
    for (const char* k :
         {"model.encoder.embed_positions.weight", "model.decoder.embed_positions.weight",
          "model.encoder.layers.0.self_attn.q_proj.weight", "model.encoder.layers.1.self_attn.out_proj.bias",
          "model.encoder.layers.0.self_attn_layer_norm.weight", "model.encoder.layers.0.fc1.weight",
          "model.encoder.layers.0.fc2.bias", "model.encoder.layers.0.final_layer_norm.bias",
          "model.decoder.layers.1.self_attn.k_proj.weight", "model.decoder.layers.1.encoder_attn.v_proj.bias",
          "model.decoder.layers.0.encoder_attn_layer_norm.weight", "model.decoder.layers.1.final_layer_norm.weight",
          "final_logits_bias"})
      EXPECT_TRUE(names.count(k)) << k;
    EXPECT_EQ(names.count("model.shared.weight"), shared ? 1u : 0u);
    EXPECT_EQ(names.count("model.encoder.embed_tokens.weight"), shared ? 0u : 1u);
    EXPECT_EQ(names.count("lm_head.weight"), 0u);  // tied to the decoder's embedding
  }
}

torch::Tensor python_logits(const test::TempDir& dir, const std::string& model_dir, const torch::Tensor& src,
                            const torch::Tensor& tgt) {
  safetensors::save(dir / "in.safetensors", {{"input_ids", src}, {"decoder_input_ids", tgt}});
  auto r = test::run_python("hf_marian.py", "logits " + model_dir + " " + (dir / "in.safetensors") + " " +
                                                (dir / "out.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return torch::Tensor();
  return safetensors::load(dir / "out.safetensors").tensors.at("logits");
}

// What `zoo export` writes (model.safetensors in Marian's layout + config.json) gives the
// plain-PyTorch MarianMTModel the same logits, with a shared and with separate embeddings,
// and loads back into zoo.
TEST(Transformer, MarianExportGivesThePythonReferenceTheSameLogits) {
  for (bool shared : {true, false}) {
    test::TempDir dir;
    auto m = perturbed(tiny(shared), 3);
    const json section = section_of(tiny(shared));
    save_model(*m, dir / "model.safetensors", json{{"model", section}});
    const json hf = models::to_hf_config(section);
    EXPECT_EQ(hf["model_type"], "marian");
    EXPECT_EQ(hf["decoder_start_token_id"], 1);
    write_json_file(dir / "config.json", hf);
    auto src = padded_sources(tiny(shared).source_vocab_size);
    auto tgt = torch::randint(1, 41, {3, 7}, torch::kLong);
    auto py = python_logits(dir, dir.path().string(), src, tgt);
    ASSERT_TRUE(py.defined());
    torch::NoGradGuard g;
    EXPECT_LE((m->forward(src, tgt) - py).abs().max().item<double>(), 1e-4) << "shared " << shared;
    // The directory is also a checkpoint zoo reads back (config.json of type marian).
    const json back_section = models::from_hf_config(hf);
    EXPECT_EQ(back_section["model_type"], "transformer");
    auto back = std::dynamic_pointer_cast<models::TransformerImpl>(models::build_model(back_section));
    ASSERT_TRUE(back);
    load_model(*back, dir / "model.safetensors", "transformer");
    back->eval();
    EXPECT_TRUE(torch::equal(back->forward(src, tgt), m->forward(src, tgt)));
  }
}

// Document 002's PyTorch Transformer (tests/py/doc002_transformer.py: its Encoder, Decoder and
// Transformer, with the document's defects fixed) is zoo's Transformer with these options:
// post-norm, ReLU, embeddings neither scaled nor shared, an untied output projection without
// bias, and the document's interleaved position table, which the weights carry as the
// embed_positions buffers. Logits at every target position that is not padding, within 1e-5.
TEST(Transformer, IsTheTransformerOfDocument002) {
  test::TempDir dir;
  const auto r = test::run_python("doc002_transformer.py", dir.path().string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto file = safetensors::load(dir / "doc002.safetensors").tensors;
  const auto io = safetensors::load(dir / "io002.safetensors").tensors;
  models::TransformerOptions o;
  o.source_vocab_size = 21;  // the document's vocab_size + 1 (its padding row)
  o.target_vocab_size = 19;
  o.d_model = 32;
  o.encoder_layers = o.decoder_layers = 2;
  o.encoder_attention_heads = o.decoder_attention_heads = 4;
  o.encoder_ffn_dim = o.decoder_ffn_dim = 48;
  o.max_position_embeddings = 16;
  o.dropout = 0;
  o.activation_function = "relu";
  o.scale_embedding = false;
  o.normalize_before = false;
  o.share_encoder_decoder_embeddings = false;
  o.tie_word_embeddings = false;
  models::Transformer m(o);
  size_t copied = 0;
  {
    torch::NoGradGuard no_grad;  // every tensor of the model from the file, none of the file left over
    for (auto& p : m->named_parameters()) p.value().copy_(file.at(p.key())), ++copied;
    for (auto& b : m->named_buffers()) b.value().copy_(file.at(b.key())), ++copied;
  }
  EXPECT_EQ(copied, file.size());
  m->eval();
  torch::NoGradGuard no_grad;
  const auto& tgt = io.at("tgt");
  auto logits = m->forward(io.at("src"), tgt).narrow(-1, 0, io.at("logits").size(-1));  // no logit for padding
  const auto error = (logits - io.at("logits")).abs().amax(-1).masked_select(tgt.ne(0));
  ASSERT_EQ(error.numel(), 9);  // 6 + 3 target tokens
  EXPECT_LE(error.max().item<double>(), 1e-5);
}

TEST(Transformer, APreNormModelSaysWhyItHasNoMarianExport) {
  auto o = tiny(true);
  o.normalize_before = true;
  EXPECT_THROW(
      {
        try {
          models::to_hf_config(section_of(o));
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("normalize_before"), std::string::npos) << e.what();
          throw;
        }
      },
      Error);
}

// A padded source decodes as it would alone: padding is masked in every attention.
TEST(Transformer, PaddingDoesNotChangeASentencesLogits) {
  auto m = perturbed(tiny(false), 4);
  auto src = padded_sources(37);
  auto tgt = torch::randint(1, 41, {3, 5}, torch::kLong);
  torch::NoGradGuard g;
  auto batch = m->forward(src, tgt);
  auto alone = m->forward(src.narrow(0, 2, 1).narrow(1, 0, 3), tgt.narrow(0, 2, 1));
  EXPECT_LE((batch.narrow(0, 2, 1) - alone).abs().max().item<double>(), 1e-5);
}

// Teacher-forced logits equal step-by-step decoding with the cache (the decoder is causal).
TEST(Transformer, CachedStepsGiveTheTeacherForcedLogProbs) {
  auto m = perturbed(tiny(true), 5);
  auto src = padded_sources(41);
  auto tgt = torch::randint(3, 41, {3, 6}, torch::kLong);
  torch::NoGradGuard g;
  auto full = m->forward(src, tgt).log_softmax(-1);
  auto state = m->start(src);
  for (int64_t t = 0; t < 6; ++t) {
    auto step = m->step(tgt.select(1, t), state);
    EXPECT_LE((step - full.select(1, t)).abs().max().item<double>(), 1e-5) << "step " << t;
  }
  auto attention = m->attention(state);
  ASSERT_TRUE(attention.defined());
  EXPECT_EQ(attention.sizes(), (std::vector<int64_t>{3, 9}));
  EXPECT_LE((attention.sum(-1) - 1).abs().max().item<double>(), 1e-5);
  EXPECT_EQ(attention[2].narrow(0, 3, 6).abs().max().item<double>(), 0.0);  // padding gets no weight
  // The mean of the heads is the mean of the heads one by one.
  auto replay = [&](int64_t head) {
    m->select_attention_head(head);
    auto s = m->start(src);
    for (int64_t t = 0; t < 6; ++t) m->step(tgt.select(1, t), s);
    return m->attention(s);
  };
  auto sum = torch::zeros_like(attention);
  for (int64_t h = 0; h < 4; ++h) sum += replay(h);
  EXPECT_LE((sum / 4 - attention).abs().max().item<double>(), 1e-6);
  EXPECT_FALSE(torch::allclose(replay(0), replay(1)));
  EXPECT_THROW(m->select_attention_head(4), Error);
}

TEST(Transformer, GreedyAndBeamSearchGiveTheSameOutputWithAndWithoutTheCache) {
  auto m = perturbed(tiny(false), 6);
  auto src = padded_sources(37);
  for (int64_t beams : {1, 4}) {
    models::GenerationOptions g;
    g.bos_id = 1;
    g.eos_id = 2;
    g.max_new_tokens = 12;
    g.num_beams = beams;
    m->set_use_cache(true);
    auto cached = models::generate(*m, src, g);
    m->set_use_cache(false);
    auto recomputed = models::generate(*m, src, g);
    ASSERT_EQ(cached.size(), recomputed.size());
    for (size_t i = 0; i < cached.size(); ++i) {
      EXPECT_EQ(cached[i][0].tokens, recomputed[i][0].tokens) << "beams " << beams << " sentence " << i;
      EXPECT_NEAR(cached[i][0].log_prob, recomputed[i][0].log_prob, 1e-4);
    }
  }
}

// The cross-attention rows are computed only when a search asks for them (heat maps): the same
// tokens and scores either way, and without them no rows in the state or the hypotheses.
TEST(Transformer, AttentionRowsOnlyWhenTheSearchAsks) {
  auto m = perturbed(tiny(false), 7);
  auto src = padded_sources(37);
  for (int64_t beams : {1, 4}) {
    SCOPED_TRACE("beams " + std::to_string(beams));
    models::GenerationOptions g;
    g.bos_id = 1;
    g.eos_id = 2;
    g.max_new_tokens = 12;
    g.num_beams = beams;
    const auto plain = models::generate(*m, src, g);
    g.attention = true;
    const auto shown = models::generate(*m, src, g);
    ASSERT_EQ(plain.size(), shown.size());
    for (size_t i = 0; i < plain.size(); ++i) {
      EXPECT_EQ(plain[i][0].tokens, shown[i][0].tokens) << i;
      EXPECT_DOUBLE_EQ(plain[i][0].log_prob, shown[i][0].log_prob) << i;
      EXPECT_FALSE(plain[i][0].attention.defined()) << i;
      ASSERT_TRUE(shown[i][0].attention.defined()) << i;
      EXPECT_EQ(shown[i][0].attention.size(0), static_cast<int64_t>(shown[i][0].tokens.size()));
      EXPECT_LE((shown[i][0].attention.sum(-1) - 1).abs().max().item<double>(), 1e-5);
    }
  }
  torch::NoGradGuard no_grad;
  auto state = m->start(src);
  state.set_wants_attention(false);
  m->step(torch::full({src.size(0)}, 1, torch::kLong), state);
  EXPECT_FALSE(m->attention(state).defined());
}

TEST(Transformer, ASourceLongerThanThePositionTableNamesTheLimit) {
  auto m = perturbed(tiny(false), 7);
  auto src = torch::randint(3, 37, {1, 30}, torch::kLong);
  try {
    m->start(src);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("max_position_embeddings"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("24"), std::string::npos) << e.what();
  }
}

TEST(Transformer, SharedEmbeddingsNeedOneVocabulary) {
  auto o = tiny(true);
  o.target_vocab_size = 40;
  EXPECT_THROW(models::Transformer{o}, Error);
}

}  // namespace
}  // namespace zoo
