#include "models/transformer.h"

#include <cmath>

#include "models/kernels/dropout.h"
#include "models/kernels/linear.h"
#include "models/kernels/softmax_rows.h"
#include "models/module_path.h"
#include "models/entry_helpers.h"

namespace zoo::models {

void TransformerOptions::validate() const {
  for (auto [key, heads] : {std::pair{"encoder_attention_heads", encoder_attention_heads},
                            std::pair{"decoder_attention_heads", decoder_attention_heads}})
    if (d_model % heads != 0)
      throw Error(cat("config: model.d_model (", d_model, ") must be divisible by model.", key, " (", heads, ")"));
  if (share_encoder_decoder_embeddings && source_vocab_size != target_vocab_size)
    throw Error(cat("config: model.share_encoder_decoder_embeddings needs one joint vocabulary, but the source has ",
                    source_vocab_size, " tokens and the target ", target_vocab_size,
                    " (train a joint tokenizer, or set it to false)"));
  for (auto [key, size] : {std::pair{"source_vocab_size", source_vocab_size},
                           std::pair{"target_vocab_size", target_vocab_size}})
    if (pad_id >= size)
      throw Error(cat("config: model.pad_id (", pad_id, ") must be below model.", key, " (", size, ")"));
}

namespace {
std::string activation_of(const TransformerOptions& o) {
  return o.activation_function == "swish" ? "silu" : o.activation_function;  // Marian's name for SiLU
}

MultiHeadAttentionOptions attention_options(const TransformerOptions& o, int64_t heads, bool causal) {
  return MultiHeadAttentionOptions(o.d_model, heads).dropout(o.attention_dropout).causal(causal);
}

ResidualOptions residual(const TransformerOptions& o, const std::string& norm) {
  return ResidualOptions(o.d_model).pre_norm(o.normalize_before).eps(o.layer_norm_eps).dropout(o.dropout).norm_name(norm);
}

FeedForwardOptions ffn_options(const TransformerOptions& o, int64_t width) {
  return FeedForwardOptions(o.d_model, width).activation(activation_of(o)).activation_dropout(o.activation_dropout);
}

// (B, S) true on tokens -> the attention mask (undefined when nothing is padded).
AttentionMask key_mask(const torch::Tensor& src_mask) { return AttentionMask(src_mask); }
}  // namespace

TransformerEncoderLayerImpl::TransformerEncoderLayerImpl(const TransformerOptions& o)
    : self_attn(register_module("self_attn",
                                MultiHeadAttention(attention_options(o, o.encoder_attention_heads, false)))),
      self_attn_block(*this, residual(o, "self_attn_layer_norm")),
      ffn_block(*this, residual(o, "final_layer_norm")),
      ffn(*this, ffn_options(o, o.encoder_ffn_dim)) {}

torch::Tensor TransformerEncoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& src_mask) {
  auto h = self_attn_block(x, [&](const torch::Tensor& n) { return self_attn(n, key_mask(src_mask)); });
  return ffn_block(h, [&](const torch::Tensor& n) { return ffn(n); });
}

TransformerDecoderLayerImpl::TransformerDecoderLayerImpl(const TransformerOptions& o)
    : self_attn(register_module("self_attn",
                                MultiHeadAttention(attention_options(o, o.decoder_attention_heads, true)))),
      encoder_attn(register_module("encoder_attn",
                                   MultiHeadAttention(attention_options(o, o.decoder_attention_heads, false)))),
      self_attn_block(*this, residual(o, "self_attn_layer_norm")),
      cross_block(*this, residual(o, "encoder_attn_layer_norm")),
      ffn_block(*this, residual(o, "final_layer_norm")),
      ffn(*this, ffn_options(o, o.decoder_ffn_dim)) {}

namespace {
// softmax(q k^T / sqrt(d)) of the cross-attention (the kernel does not return it): (B, heads, T, S).
torch::Tensor cross_weights(MultiHeadAttentionImpl& attn, const torch::Tensor& x, const KVCache& cache,
                            const torch::Tensor& src_mask) {
  auto q = split_heads(attn.query(x), attn.options.num_heads());
  auto scores = torch::matmul(q, cache.key.transpose(-2, -1)) / std::sqrt(static_cast<double>(q.size(-1)));
  if (src_mask.defined())
    scores = scores.masked_fill(src_mask.logical_not().view({src_mask.size(0), 1, 1, -1}),
                                -std::numeric_limits<float>::infinity());
  return scores.softmax(-1);
}
}  // namespace

torch::Tensor TransformerDecoderLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& memory,
                                                   const torch::Tensor& src_mask, KVCache* self_cache,
                                                   KVCache* cross_cache, torch::Tensor* weights) {
  auto h = self_attn_block(x, [&](const torch::Tensor& n) { return self_attn(n, AttentionMask(), self_cache); });
  h = cross_block(h, [&](const torch::Tensor& n) {
    auto out = encoder_attn->cross(n, memory, key_mask(src_mask), cross_cache);
    if (weights && cross_cache) *weights = cross_weights(*encoder_attn, n, *cross_cache, src_mask);
    return out;
  });
  return ffn_block(h, [&](const torch::Tensor& n) { return ffn(n); });
}

TransformerImpl::TransformerImpl(const TransformerOptions& o) : o_(o) {
  o.validate();
  embed_scale_ = o.scale_embedding ? std::sqrt(static_cast<double>(o.d_model)) : 1.0;
  auto table = [&](int64_t rows) {
    return torch::nn::Embedding(torch::nn::EmbeddingOptions(rows, o.d_model).padding_idx(o.pad_id));
  };
  if (o.share_encoder_decoder_embeddings) {
    source_embedding = target_embedding = register_at(*this, "model.shared", table(o.source_vocab_size));
  } else {
    source_embedding = register_at(*this, "model.encoder.embed_tokens", table(o.source_vocab_size));
    target_embedding = register_at(*this, "model.decoder.embed_tokens", table(o.target_vocab_size));
  }
  const bool interleaved = false;  // Marian's table: all sines, then all cosines
  encoder_positions = register_at(*this, "model.encoder.embed_positions",
                                  SinusoidalPositions(o.max_position_embeddings, o.d_model, interleaved));
  decoder_positions = register_at(*this, "model.decoder.embed_positions",
                                  SinusoidalPositions(o.max_position_embeddings, o.d_model, interleaved));
  for (int64_t i = 0; i < o.encoder_layers; ++i) encoder_layers->push_back(TransformerEncoderLayer(o));
  for (int64_t i = 0; i < o.decoder_layers; ++i) decoder_layers->push_back(TransformerDecoderLayer(o));
  register_at(*this, "model.encoder.layers", encoder_layers);
  register_at(*this, "model.decoder.layers", decoder_layers);
  if (o.normalize_before) {
    auto norm = [&] { return torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.d_model}).eps(o.layer_norm_eps)); };
    encoder_norm = register_at(*this, "model.encoder.layer_norm", norm());
    decoder_norm = register_at(*this, "model.decoder.layer_norm", norm());
  }
  if (!o.tie_word_embeddings)
    lm_head = register_module("lm_head", torch::nn::Linear(torch::nn::LinearOptions(o.d_model, o.target_vocab_size).bias(false)));
  final_logits_bias = register_buffer("final_logits_bias", torch::zeros({1, o.target_vocab_size}));
  reset_parameters();
}

void TransformerImpl::reset_parameters() {
  torch::NoGradGuard no_grad;
  for (auto& m : modules(/*include_self=*/false)) {
    if (auto* lin = m->as<torch::nn::Linear>()) {
      lin->weight.normal_(0.0, o_.init_std);
      if (lin->bias.defined()) lin->bias.zero_();
    } else if (auto* emb = m->as<torch::nn::Embedding>()) {
      emb->weight.normal_(0.0, o_.init_std);
      emb->weight[o_.pad_id].zero_();
    } else if (auto* ln = m->as<torch::nn::LayerNorm>()) {
      ln->weight.fill_(1.0);
      ln->bias.zero_();
    }
  }
  for (auto& m : modules(false))
    if (auto* attn = m->as<MultiHeadAttention>()) attn->pack();
}

torch::Tensor TransformerImpl::embed(torch::nn::Embedding& table, const torch::Tensor& ids,
                                     SinusoidalPositions& positions, int64_t offset) {
  if (offset + ids.size(1) > o_.max_position_embeddings)
    throw Error(cat("Transformer: a sequence of ", offset + ids.size(1), " tokens is longer than the position table (",
                    o_.max_position_embeddings, " = model.max_position_embeddings); shorten it or truncate it"));
  auto x = positions(table(ids) * embed_scale_, offset);
  return apply_dropout(x, o_.dropout, is_training());
}

torch::Tensor TransformerImpl::encode(const torch::Tensor& src) {
  TORCH_CHECK(src.dim() == 2, "Transformer expects src of shape (B, S), got ", src.sizes());
  auto mask = src.ne(o_.pad_id);
  auto x = embed(source_embedding, src, encoder_positions, 0);
  for (const auto& layer : *encoder_layers) {
    auto* block = layer->as<TransformerEncoderLayer>();
    x = checkpointed(is_training(), x, [block, mask](const torch::Tensor& in) { return block->forward(in, mask); });
  }
  return encoder_norm ? encoder_norm(x) : x;
}

torch::Tensor TransformerImpl::decode(const torch::Tensor& tgt_in, const torch::Tensor& memory,
                                      const torch::Tensor& src_mask, std::vector<KVCache>* caches,
                                      torch::Tensor* last_weights) {
  const size_t layers = decoder_layers->size();
  if (caches && caches->empty()) caches->resize(2 * layers);
  const int64_t offset = caches ? (*caches)[0].length() : 0;
  auto x = embed(target_embedding, tgt_in, decoder_positions, offset);
  for (size_t i = 0; i < layers; ++i) {
    auto* block = decoder_layers[i]->as<TransformerDecoderLayer>();
    torch::Tensor* weights = i + 1 == layers ? last_weights : nullptr;
    if (caches || weights || !gradient_checkpointing() || !is_training()) {
      x = block->forward(x, memory, src_mask, caches ? &(*caches)[2 * i] : nullptr,
                         caches ? &(*caches)[2 * i + 1] : nullptr, weights);
      continue;
    }
    // The encoder's output is an input of the recomputed block, so its gradient flows back
    // through the return value (not through a second pass over the encoder).
    x = recompute_in_backward(
        [block, src_mask](const std::vector<torch::Tensor>& in) {
          return block->forward(in[0], in[1], src_mask, nullptr, nullptr, nullptr);
        },
        {x, memory});
  }
  return decoder_norm ? decoder_norm(x) : x;
}

torch::Tensor TransformerImpl::project(const torch::Tensor& hidden) {
  const auto* shared = lm_head ? nullptr : int8_weights(*this);  // quantized (models/quantize.h)
  auto logits = lm_head ? models::linear(hidden, lm_head)
                        : shared ? linear_int8(hidden, *shared) : models::linear(hidden, target_embedding->weight);
  return logits + final_logits_bias;
}

torch::Tensor TransformerImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt_in,
                                       double teacher_forcing_ratio, torch::Generator* /*generator*/) {
  if (teacher_forcing_ratio < 1.0)
    throw Error("the Transformer trains with teacher forcing only (data.teacher_forcing_ratio must be 1)");
  auto memory = encode(src);
  return project(decode(tgt_in, memory, src.ne(o_.pad_id)));
}

// --- decoding -----------------------------------------------------------------------------

namespace {
std::string cache_name(size_t i, const char* kind) { return cat("cache.", i, ".", kind); }
}  // namespace

DecoderState TransformerImpl::start(const torch::Tensor& src) {
  using Scope = DecoderState::Scope;
  DecoderState state;
  auto mask = src.ne(o_.pad_id);
  state.set("memory", encode(src), 0, Scope::kSentence);  // (B, S, d)
  state.set("src_mask", mask, 0, Scope::kSentence);       // (B, S)
  if (!use_cache_) state.set("prefix", torch::empty({src.size(0), 0}, src.options()));  // (B, 0)
  return state;
}

torch::Tensor TransformerImpl::step(const torch::Tensor& prev_tokens, DecoderState& state) {
  using Scope = DecoderState::Scope;
  const auto& memory = state.get("memory");
  const auto& mask = state.get("src_mask");
  torch::Tensor weights, hidden;
  if (!use_cache_) {  // the whole prefix again
    auto prefix = torch::cat({state.get("prefix"), prev_tokens.view({-1, 1})}, 1);
    state.set("prefix", prefix);
    hidden = decode(prefix, memory, mask, nullptr).select(1, -1);
  } else {
    const size_t layers = decoder_layers->size();
    std::vector<KVCache> caches(2 * layers);
    if (state.has(cache_name(0, "k")))
      for (size_t i = 0; i < 2 * layers; ++i) caches[i] = {state.get(cache_name(i, "k")), state.get(cache_name(i, "v"))};
    const bool keep = state.wants_attention();
    hidden = decode(prev_tokens.view({-1, 1}), memory, mask, &caches, keep ? &weights : nullptr).select(1, 0);
    for (size_t i = 0; i < 2 * layers; ++i) {  // odd entries: cross-attention, the same for a sentence's rows
      const auto scope = i % 2 ? Scope::kSentence : Scope::kHypothesis;
      state.set(cache_name(i, "k"), caches[i].key, 0, scope);
      state.set(cache_name(i, "v"), caches[i].value, 0, scope);
    }
    if (keep) {
      const auto last = weights.select(2, 0);  // (N, heads, S)
      state.set("attention", attention_head_ >= 0 ? last.select(1, attention_head_) : last.mean(1), 0);
    } else {
      state.erase("attention");
    }
  }
  return log_softmax_rows(project(hidden).to(torch::kFloat));
}

void TransformerImpl::select_attention_head(int64_t head) {
  if (head < -1 || head >= o_.decoder_attention_heads)
    throw Error(cat("attention head ", head, ": the decoder's cross-attention has ", o_.decoder_attention_heads,
                    " heads (0-", o_.decoder_attention_heads - 1, "); -1 = their mean"));
  attention_head_ = head;
}

torch::Tensor TransformerImpl::attention(const DecoderState& state) const {
  return state.has("attention") ? state.get("attention") : torch::Tensor();
}

}  // namespace zoo::models

namespace zoo::models {

void transformer_from_hf_tensors(std::map<std::string, torch::Tensor>& tensors) {
  auto drop_copy = [&](const std::string& name, const std::string& of) {
    auto it = tensors.find(name), original = tensors.find(of);
    if (it != tensors.end() && original != tensors.end() && it->second.sizes() == original->second.sizes() &&
        torch::equal(it->second, original->second))
      tensors.erase(it);
  };
  drop_copy("model.encoder.embed_tokens.weight", "model.shared.weight");
  drop_copy("model.decoder.embed_tokens.weight", "model.shared.weight");
  drop_copy("lm_head.weight", "model.shared.weight");
  drop_copy("lm_head.weight", "model.decoder.embed_tokens.weight");
}

void transformer_to_hf_tensors(std::map<std::string, torch::Tensor>& tensors) {
  auto shared = tensors.find("model.shared.weight");
  if (shared != tensors.end()) {
    for (const char* name : {"model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"})
      tensors[name] = shared->second.clone();
  }
  if (!tensors.count("lm_head.weight") && tensors.count("model.decoder.embed_tokens.weight"))
    tensors["lm_head.weight"] = tensors["model.decoder.embed_tokens.weight"].clone();
}

// The registry entry (models/registry.h).
namespace {
// Our Transformer section <-> Hugging Face's MarianConfig. Marian is post-norm with no final
// LayerNorms, so a pre-norm model has no Marian form.
const std::vector<std::pair<const char*, const char*>>& transformer_marian_names() {
  static const std::vector<std::pair<const char*, const char*>> names{
      {"source_vocab_size", "vocab_size"}, {"target_vocab_size", "decoder_vocab_size"},
      {"pad_id", "pad_token_id"},          {"bos_id", "decoder_start_token_id"},
      {"eos_id", "eos_token_id"}};
  return names;
}

json transformer_from_hf(const json& hf) {
  json model = entry::same_named_fields<TransformerOptions>(hf, "transformer");
  for (const auto& [ours, theirs] : transformer_marian_names())
    if (hf.contains(theirs) && !hf[theirs].is_null()) model[ours] = hf[theirs];
  if (!model.contains("target_vocab_size") && hf.contains("vocab_size")) model["target_vocab_size"] = hf["vocab_size"];
  if (hf.contains("normalize_before") && hf["normalize_before"].is_boolean() && hf["normalize_before"].get<bool>())
    throw Error("Hugging Face config: normalize_before is true; Marian models are post-norm");
  return model;
}

json transformer_to_hf(const json& model, const std::string& architecture) {
  if (model.value("normalize_before", false))
    throw Error("this Transformer is pre-norm (model.normalize_before = true): Hugging Face's MarianMTModel is "
                "post-norm only, so it has no Marian export; train with normalize_before false to export");
  json hf = model;
  hf.erase("normalize_before");
  hf.erase("model_type");
  for (const auto& [ours, theirs] : transformer_marian_names()) {
    hf.erase(ours);
    if (model.contains(ours)) hf[theirs] = model[ours];
  }
  hf["model_type"] = "marian";
  hf["architectures"] = {architecture};
  hf["is_encoder_decoder"] = true;
  hf["forced_eos_token_id"] = hf.value("eos_token_id", 0);
  hf["bos_token_id"] = hf.value("decoder_start_token_id", 0);
  hf["num_hidden_layers"] = model.value("encoder_layers", 6);
  hf["encoder_layerdrop"] = 0.0;
  hf["decoder_layerdrop"] = 0.0;
  hf["use_cache"] = true;
  hf["torch_dtype"] = "float32";
  return hf;
}
}  // namespace

ModelEntry transformer_entry() {
  ModelEntry e;
  e.model_type = "transformer";
  e.default_task = "translation";
  e.resolve = [](const json& merged) {
    return entry::resolve_translation_section<TransformerOptions>(merged, "transformer");
  };
  e.describe = entry::translation_docs<TransformerOptions>;
  e.from_hf = transformer_from_hf;
  e.to_hf = transformer_to_hf;
  e.architectures = {{"translation", "MarianMTModel"}};
  e.fact_keys = entry::translation_fact_keys();
  e.architecture_keys = {"d_model", "encoder_layers", "decoder_layers", "encoder_attention_heads",
                         "decoder_attention_heads", "encoder_ffn_dim", "decoder_ffn_dim", "activation_function",
                         "max_position_embeddings", "scale_embedding", "normalize_before",
                         "share_encoder_decoder_embeddings", "tie_word_embeddings", "layer_norm_eps"};
  e.build = [](const json& section, const std::string&) {
    return Transformer(read_options<TransformerOptions>(section, "model", entry::translation_extra_keys())).ptr();
  };
  e.is_encoder_decoder = true;
  e.from_hf_tensors = transformer_from_hf_tensors;
  e.to_hf_tensors = transformer_to_hf_tensors;
  e.hf_model_type = "marian";
  return e;
}

}  // namespace zoo::models
