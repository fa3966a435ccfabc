#include "models/gpt.h"

#include <cmath>

#include "models/kernels/cross_entropy.h"
#include "models/kernels/dropout.h"
#include "models/kernels/linear.h"
#include "models/entry_helpers.h"

namespace zoo::models {

void GPT2Options::validate() const {
  if (n_embd % n_head != 0)
    throw Error(cat("config: model.n_embd (", n_embd, ") must be divisible by model.n_head (", n_head, ")"));
  if (vocab_size <= 0) throw Error("config: model.vocab_size must be set (or come from the data's tokenizer)");
  for (auto [name, id] : {std::pair{"bos_token_id", bos_token_id}, std::pair{"eos_token_id", eos_token_id}})
    if (id >= vocab_size)
      throw Error(cat("config: model.", name, " (", id, ") must be below model.vocab_size (", vocab_size, ")"));
}

GPT2BlockImpl::GPT2BlockImpl(const GPT2Options& o)
    : attention_block(*this, ResidualOptions(o.n_embd)
                                 .eps(o.layer_norm_epsilon)
                                 .dropout(o.resid_pdrop)
                                 .norm_name("ln_1")),
      attn(register_module("attn", MultiHeadAttention(MultiHeadAttentionOptions(o.n_embd, o.n_head)
                                                          .dropout(o.attn_pdrop)
                                                          .causal(true)
                                                          .fused_qkv_name("c_attn")
                                                          .output_name("c_proj")))),
      mlp_block(*this, ResidualOptions(o.n_embd).eps(o.layer_norm_epsilon).dropout(o.resid_pdrop).norm_name("ln_2")),
      mlp(*this, FeedForwardOptions(o.n_embd, o.inner())
                     .activation(o.activation_function)
                     .fc1_name("mlp.c_fc")
                     .fc2_name("mlp.c_proj")) {}

torch::Tensor GPT2BlockImpl::forward(const torch::Tensor& x, KVCache* cache) {
  auto h = attention_block(x, [&](const torch::Tensor& n) { return attn(n, AttentionMask(), cache); });
  return mlp_block(h, [&](const torch::Tensor& n) { return mlp(n); });
}

GPT2ModelImpl::GPT2ModelImpl(const GPT2Options& o) : o_(o) {
  o.validate();
  wte = register_module("wte", torch::nn::Embedding(o.vocab_size, o.n_embd));
  wpe.emplace(*this, LearnedPositionsOptions(o.n_positions, o.n_embd).name("wpe"));
  for (int64_t i = 0; i < o.n_layer; ++i) h->push_back(GPT2Block(o));
  register_module("h", h);
  ln_f = register_module("ln_f",
                         torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.n_embd}).eps(o.layer_norm_epsilon)));
}

torch::Tensor GPT2ModelImpl::forward(const torch::Tensor& input_ids, std::vector<KVCache>* caches) {
  TORCH_CHECK(input_ids.dim() == 2, "GPT-2 expects input_ids of shape (B, T), got ", input_ids.sizes());
  const int64_t past = caches && !caches->empty() ? caches->front().length() : 0;
  if (past + input_ids.size(1) > o_.n_positions)
    throw Error(cat("GPT-2: ", past + input_ids.size(1), " positions but the model has ", o_.n_positions,
                    " (model.n_positions); use a shorter context"));
  if (caches && caches->empty()) caches->resize(h->size());
  auto x = apply_dropout((*wpe)(wte(input_ids), past), o_.embd_pdrop, is_training());
  for (size_t i = 0; i < h->size(); ++i) {
    auto* block = h[i]->as<GPT2Block>();
    if (caches) x = block->forward(x, &(*caches)[i]);
    else x = checkpointed(is_training(), x, [block](const torch::Tensor& in) { return block->forward(in, nullptr); });
  }
  return ln_f(x);
}

GPT2LMHeadModelImpl::GPT2LMHeadModelImpl(const GPT2Options& o) : o_(o) {
  transformer = register_module("transformer", GPT2Model(o));
  reset_parameters();
}

void GPT2LMHeadModelImpl::reset_parameters() {
  init_weights_hf(*this, o_.initializer_range);
  torch::NoGradGuard no_grad;
  const double residual_std = o_.initializer_range / std::sqrt(2.0 * o_.n_layer);
  for (auto& p : named_parameters()) {
    const auto& name = p.key();
    if (name.size() > 13 && name.compare(name.size() - 13, 13, "c_proj.weight") == 0)
      p.value().normal_(0.0, residual_std);
  }
}

torch::Tensor GPT2LMHeadModelImpl::forward(const torch::Tensor& input_ids, std::vector<KVCache>* caches) {
  auto hidden = transformer(input_ids, caches);
  return models::linear(hidden, transformer->wte->weight);  // tied output projection
}

torch::Tensor GPT2LMHeadModelImpl::loss(const torch::Tensor& input_ids, const torch::Tensor& labels) {
  return linear_cross_entropy(transformer(input_ids), transformer->wte->weight, labels);
}

// --- decoding ---------------------------------------------------------------------------

namespace {
std::string cache_name(size_t layer, char kind) { return cat("cache.", layer, ".", kind); }
}  // namespace

GPT2Decoder::GPT2Decoder(GPT2LMHeadModel model, bool use_cache) : model_(std::move(model)), use_cache_(use_cache) {}

DecoderState GPT2Decoder::start(const std::vector<int64_t>& prompt) {
  if (prompt.empty()) throw Error("generation needs a prompt of at least one token");
  const int64_t keep = std::min<int64_t>(prompt.size(), model_->options().n_positions);
  std::vector<int64_t> window(prompt.end() - keep, prompt.end() - 1);  // all but the last: it is fed first
  const auto device = model_->parameters().front().device();
  DecoderState state;
  state.set("tokens", torch::tensor(window, torch::kLong).view({1, -1}).to(device));
  if (use_cache_ && !window.empty()) prefill(state.get("tokens"), state);
  return state;
}

// Runs `tokens` (N, T) through the model with fresh caches, stored in `state`; returns the
// log-probabilities after the last token.
torch::Tensor GPT2Decoder::prefill(const torch::Tensor& tokens, DecoderState& state) {
  std::vector<KVCache> caches;
  auto logits = model_(tokens, &caches);
  for (size_t i = 0; i < caches.size(); ++i) {
    state.set(cache_name(i, 'k'), caches[i].key);
    state.set(cache_name(i, 'v'), caches[i].value);
  }
  return logits.select(1, -1).to(torch::kFloat).log_softmax(-1);
}

torch::Tensor GPT2Decoder::step(const torch::Tensor& prev_tokens, DecoderState& state) {
  const int64_t window = model_->options().n_positions;
  auto tokens = torch::cat({state.get("tokens"), prev_tokens.view({-1, 1})}, 1);  // (N, t + 1)
  state.set("tokens", tokens);
  if (!use_cache_) {  // recompute the window
    auto context = tokens.size(1) > window ? tokens.narrow(1, tokens.size(1) - window, window) : tokens;
    return model_(context).select(1, -1).to(torch::kFloat).log_softmax(-1);
  }
  const size_t layers = model_->options().n_layer;
  const int64_t cached = state.has(cache_name(0, 'k')) ? state.get(cache_name(0, 'k')).size(2) : 0;
  if (cached + 1 > window) {  // the context is full: rebuild from the last half of the window
    const int64_t keep = std::max<int64_t>(1, window / 2);
    return prefill(tokens.narrow(1, tokens.size(1) - keep, keep), state);
  }
  std::vector<KVCache> caches(layers);
  if (cached > 0)
    for (size_t i = 0; i < layers; ++i) caches[i] = {state.get(cache_name(i, 'k')), state.get(cache_name(i, 'v'))};
  auto logits = model_(prev_tokens.view({-1, 1}), &caches);
  for (size_t i = 0; i < layers; ++i) {
    state.set(cache_name(i, 'k'), caches[i].key);
    state.set(cache_name(i, 'v'), caches[i].value);
  }
  return logits.select(1, -1).to(torch::kFloat).log_softmax(-1);
}

// --- Hugging Face layout ----------------------------------------------------------------

namespace {
// The weights Hugging Face keeps as Conv1D (in, out) rather than Linear (out, in).
bool conv1d_weight(const std::string& name) {
  for (const char* s : {".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight", ".mlp.c_proj.weight"})
    if (ends_with(name, s)) return true;
  return false;
}
void transpose_conv1d(std::map<std::string, torch::Tensor>& tensors) {
  for (auto& [name, t] : tensors)
    if (conv1d_weight(name) && t.dim() == 2) t = t.t().contiguous();
}
}  // namespace

void gpt2_from_hf_tensors(std::map<std::string, torch::Tensor>& tensors) {
  std::map<std::string, torch::Tensor> out;
  for (auto& [name, t] : tensors) {
    if (name == "lm_head.weight" || ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias")) continue;
    const bool body = name.rfind("transformer.", 0) != 0 &&
                      (name.rfind("h.", 0) == 0 || name.rfind("wte.", 0) == 0 || name.rfind("wpe.", 0) == 0 ||
                       name.rfind("ln_f.", 0) == 0);
    out[body ? "transformer." + name : name] = t;
  }
  transpose_conv1d(out);
  tensors = std::move(out);
}

void gpt2_to_hf_tensors(std::map<std::string, torch::Tensor>& tensors) { transpose_conv1d(tensors); }

// The registry entry (models/registry.h).
namespace {
json resolve_gpt2(const json& merged) {
  auto o = read_options<GPT2Options>(merged, "model", {"model_type"});
  GPT2Options check = o;  // vocab_size 0 means "from the data": the task fills it in
  if (check.vocab_size == 0) check.vocab_size = std::max<int64_t>({1, o.bos_token_id + 1, o.eos_token_id + 1});
  check.validate();
  json out = {{"model_type", "gpt2"}};
  out.update(to_json(o));
  return out;
}

json gpt2_from_hf(const json& hf) {
  json model = {{"model_type", "gpt2"}};
  for (const auto& doc : describe_options<GPT2Options>())
    if (hf.contains(doc.key) && !hf[doc.key].is_null()) model[doc.key] = hf[doc.key];
  if (!hf.contains("n_positions") && hf.contains("n_ctx")) model["n_positions"] = hf["n_ctx"];  // older configs
  return model;
}

json gpt2_to_hf(const json& model, const std::string& architecture) {
  json hf = model;
  if (model.value("n_inner", 0) == 0) hf["n_inner"] = nullptr;
  for (const char* id : {"bos_token_id", "eos_token_id"})
    if (model.value(id, -1) < 0) hf[id] = nullptr;
  hf["architectures"] = {architecture};
  hf["n_ctx"] = model.value("n_positions", 1024);
  hf["tie_word_embeddings"] = true;
  hf["scale_attn_weights"] = true;
  hf["use_cache"] = true;
  hf["torch_dtype"] = "float32";
  return hf;
}
}  // namespace

ModelEntry gpt2_entry() {
  ModelEntry e;
  e.model_type = "gpt2";
  e.default_task = "language_modeling";
  e.resolve = resolve_gpt2;
  e.describe = describe_options<GPT2Options>;
  e.from_hf = gpt2_from_hf;
  e.to_hf = gpt2_to_hf;
  e.architectures = {{"language_modeling", "GPT2LMHeadModel"}};
  e.build = [](const json& section, const std::string&) {
    return GPT2LMHeadModel(read_options<GPT2Options>(section, "model", {"model_type"})).ptr();
  };
  e.from_hf_tensors = gpt2_from_hf_tensors;
  e.to_hf_tensors = gpt2_to_hf_tensors;
  return e;
}

}  // namespace zoo::models
