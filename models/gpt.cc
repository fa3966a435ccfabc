#include "models/gpt.h"

#include <algorithm>
#include <cmath>

#include "models/kernels/cross_entropy.h"
#include "models/kernels/dropout.h"
#include "models/kernels/kv_append.h"
#include "models/kernels/linear.h"
#include "models/kernels/softmax_rows.h"
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

torch::Tensor GPT2BlockImpl::forward(const torch::Tensor& x, KVCache* cache, const AttentionMask& mask) {
  auto h = attention_block(x, [&](const torch::Tensor& n) { return attn(n, mask, cache); });
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

torch::Tensor GPT2ModelImpl::forward(const torch::Tensor& input_ids, std::vector<KVCache>* caches,
                                     const torch::Tensor& attention_mask) {
  TORCH_CHECK(input_ids.dim() == 2, "GPT-2 expects input_ids of shape (B, T), got ", input_ids.sizes());
  const int64_t past = caches && !caches->empty() ? caches->front().length() : 0, t = input_ids.size(1);
  if (past + t > o_.n_positions)
    throw Error(cat("GPT-2: ", past + t, " positions but the model has ", o_.n_positions,
                    " (model.n_positions); use a shorter context"));
  if (attention_mask.defined())
    TORCH_CHECK(attention_mask.dim() == 2 && attention_mask.size(0) == input_ids.size(0) &&
                    attention_mask.size(1) == past + t,
                "GPT-2: attention_mask must be (B, cached + new) = (", input_ids.size(0), ", ", past + t, "), got ",
                attention_mask.sizes());
  if (caches && caches->empty()) caches->resize(h->size());
  torch::Tensor x;
  AttentionMask mask;
  if (attention_mask.defined()) {  // each row's positions count its tokens (Hugging Face's position_ids)
    const auto positions = (attention_mask.to(torch::kLong).cumsum(1) - 1).clamp_min(0).narrow(1, past, t);
    x = (*wpe)(wte(input_ids), positions);
    // Tokens see no padding; a padding position sees the padding before it, so that no row of
    // scores is masked whole (what it computes is never read).
    const auto valid = attention_mask.to(torch::kBool);
    mask = AttentionMask(valid.unsqueeze(1).logical_or(valid.narrow(1, past, t).logical_not().unsqueeze(2)));
  } else {
    x = (*wpe)(wte(input_ids), past);
  }
  x = apply_dropout(x, o_.embd_pdrop, is_training());
  for (size_t i = 0; i < h->size(); ++i) {
    auto* block = h[i]->as<GPT2Block>();
    if (caches) x = block->forward(x, &(*caches)[i], mask);
    else if (mask.key_padding.defined()) x = block->forward(x, nullptr, mask);
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

torch::Tensor GPT2LMHeadModelImpl::forward(const torch::Tensor& input_ids, std::vector<KVCache>* caches,
                                           const torch::Tensor& attention_mask) {
  auto hidden = transformer(input_ids, caches, attention_mask);
  if (const auto* q = int8_weights(*this)) return linear_int8(hidden, *q);  // quantized (models/quantize.h)
  return models::linear(hidden, transformer->wte->weight);  // tied output projection
}

torch::Tensor GPT2LMHeadModelImpl::loss(const torch::Tensor& input_ids, const torch::Tensor& labels) {
  if (const auto* q = int8_weights(*this))  // quantized (models/quantize.h): evaluation only
    return torch::nn::functional::cross_entropy(linear_int8(transformer(input_ids), *q).flatten(0, -2),
                                                labels.flatten(),
                                                torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
  return linear_cross_entropy(transformer(input_ids), transformer->wte->weight, labels);
}

// --- decoding ---------------------------------------------------------------------------

namespace {
std::string cache_name(size_t layer, char kind) { return cat("cache.", layer, ".", kind); }
}  // namespace

GPT2Decoder::GPT2Decoder(GPT2LMHeadModel model, bool use_cache) : model_(std::move(model)), use_cache_(use_cache) {}

DecoderState GPT2Decoder::start(const std::vector<int64_t>& prompt) {
  if (prompt.empty()) throw Error("generation needs a prompt of at least one token");
  return start(std::vector<std::vector<int64_t>>{prompt}, /*pad_id=*/0);  // one row: nothing padded
}

DecoderState GPT2Decoder::start(const std::vector<std::vector<int64_t>>& prompts, int64_t pad_id) {
  if (prompts.empty()) throw Error("generation needs at least one prompt");
  const int64_t context = model_->options().n_positions;
  int64_t longest = 0;
  for (const auto& p : prompts) {
    if (p.empty()) throw Error("generation needs prompts of at least one token");
    longest = std::max(longest, std::min<int64_t>(p.size(), context));
  }
  const auto n = static_cast<int64_t>(prompts.size());
  auto tokens = torch::full({n, longest}, pad_id, torch::kLong), mask = torch::zeros({n, longest}, torch::kLong);
  for (int64_t r = 0; r < n; ++r) {
    const auto& p = prompts[r];
    const int64_t keep = std::min<int64_t>(p.size(), context);
    tokens[r].narrow(0, longest - keep, keep).copy_(torch::tensor(std::vector<int64_t>(p.end() - keep, p.end())));
    mask[r].narrow(0, longest - keep, keep).fill_(1);
  }
  const auto device = model_->parameters().front().device();
  DecoderState state;
  state.set("tokens", tokens.narrow(1, 0, longest - 1).to(device));  // all but the last: fed first
  state.set("first", tokens.select(1, longest - 1).to(device));
  if (mask.min().item<int64_t>() == 0) state.set("mask", mask.narrow(1, 0, longest - 1).to(device));
  if (use_cache_ && longest > 1)
    prefill(state.get("tokens"), state.has("mask") ? state.get("mask") : torch::Tensor(), state);
  return state;
}

// Runs `tokens` (N, T) through the model with fresh caches, stored in `state`; returns the
// log-probabilities after the last token. `mask`: the tokens' attention mask (undefined: no
// padding).
torch::Tensor GPT2Decoder::prefill(const torch::Tensor& tokens, const torch::Tensor& mask, DecoderState& state) {
  std::vector<KVCache> caches;
  auto logits = model_(tokens, &caches, mask);
  for (size_t i = 0; i < caches.size(); ++i) {
    state.set(cache_name(i, 'k'), caches[i].key);
    state.set(cache_name(i, 'v'), caches[i].value);
  }
  return log_softmax_rows(logits.select(1, -1).to(torch::kFloat));
}

torch::Tensor GPT2Decoder::step(const torch::Tensor& prev_tokens, DecoderState& state) {
  const int64_t window = model_->options().n_positions;
  torch::Tensor prev = prev_tokens.view({-1, 1});
  if (state.has("first")) {  // a batch's first step: each row's own last prompt token
    prev = state.get("first").view({-1, 1});
    state.erase("first");
  }
  auto tokens = torch::cat({state.get("tokens"), prev}, 1);  // (N, t + 1)
  state.set("tokens", tokens);
  torch::Tensor mask;  // (N, t + 1) where the rows are padded
  if (state.has("mask")) {
    mask = torch::cat({state.get("mask"), torch::ones_like(prev)}, 1);
    state.set("mask", mask);
  }
  auto last = [&](const torch::Tensor& t, int64_t n) { return t.defined() ? t.narrow(1, t.size(1) - n, n) : t; };
  if (!use_cache_) {  // recompute the window
    const int64_t n = std::min(tokens.size(1), window);
    return log_softmax_rows(model_(last(tokens, n), nullptr, last(mask, n)).select(1, -1).to(torch::kFloat));
  }
  const size_t layers = model_->options().n_layer;
  const int64_t cached = state.has(cache_name(0, 'k')) ? state.get(cache_name(0, 'k')).size(2) : 0;
  if (cached + 1 > window) {  // the context is full: rebuild from the last half of the window
    const int64_t keep = std::max<int64_t>(1, window / 2);
    return prefill(last(tokens, keep), last(mask, keep), state);
  }
  std::vector<KVCache> caches(layers);
  if (cached > 0)
    for (size_t i = 0; i < layers; ++i) caches[i] = {state.get(cache_name(i, 'k')), state.get(cache_name(i, 'v'))};
  auto logits = model_(prev, &caches, last(mask, cached + 1));
  for (size_t i = 0; i < layers; ++i) {
    state.set(cache_name(i, 'k'), caches[i].key);
    state.set(cache_name(i, 'v'), caches[i].value);
  }
  return log_softmax_rows(logits.select(1, -1).to(torch::kFloat));
}

namespace {
// Entry `name` of `state` (N, ..., t, ...) left-padded with `value` to `columns` along `dim`.
torch::Tensor left_padded(const torch::Tensor& t, int64_t dim, int64_t columns, double value) {
  const int64_t missing = columns - t.size(dim);
  if (missing == 0) return t;
  auto sizes = t.sizes().vec();
  sizes[dim] = missing;
  return torch::cat({torch::full(sizes, value, t.options()), t}, dim);
}

bool is_cache(const std::string& name) { return name.rfind("cache.", 0) == 0; }
}  // namespace

int64_t GPT2Decoder::columns(const DecoderState& state) { return state.has("tokens") ? state.get("tokens").size(1) : 0; }

void GPT2Decoder::join(DecoderState& running, DecoderState added) {
  if (running.rows() == 0) {
    running = std::move(added);
    return;
  }
  const int64_t columns = std::max(GPT2Decoder::columns(running), GPT2Decoder::columns(added));
  // A row without padding has no mask: give it one of ones, so that both sides have it.
  for (DecoderState* s : {&running, &added})
    if (!s->has("mask") && columns > 0) s->set("mask", torch::ones_like(s->get("tokens")));
  // A state with one token of history or none has no caches yet: zeros of the other's shape.
  for (size_t layer = 0;; ++layer) {
    const std::string k = cache_name(layer, 'k'), v = cache_name(layer, 'v');
    if (!running.has(k) && !added.has(k)) break;
    for (auto [from, to] : {std::pair{&running, &added}, std::pair{&added, &running}})
      if (!to->has(k))
        for (const auto& name : {k, v}) {
          auto sizes = from->get(name).sizes().vec();
          sizes[0] = to->rows(), sizes[2] = 0;
          to->set(name, torch::zeros(sizes, from->get(name).options()));
        }
  }
  DecoderState joined;  // every entry holds one column per token of history
  for (const auto& name : running.names()) {
    if (is_cache(name)) {  // into a buffer with room for the next steps
      joined.set(name, stack_left_padded({running.get(name), added.get(name)}, columns));
      continue;
    }
    joined.set(name, torch::cat({left_padded(running.get(name), 1, columns, 0),
                                 left_padded(added.get(name), 1, columns, 0)},
                                0));
  }
  running = std::move(joined);
}

void GPT2Decoder::trim(DecoderState& state) {
  if (!state.has("mask") || state.rows() == 0) return;
  const auto used = state.get("mask").to(torch::kBool).any(0);  // (t): a column some row uses
  const int64_t t = used.size(0);
  const int64_t first = t == 0 || !used.any().item<bool>() ? t : used.to(torch::kLong).argmax().item<int64_t>();
  if (first == 0) return;
  for (const auto& name : state.names()) {
    const int64_t dim = is_cache(name) ? 2 : 1;
    const auto& e = state.get(name);
    state.set(name, e.narrow(dim, first, e.size(dim) - first));
  }
  if (state.get("mask").all().item<bool>()) state.erase("mask");
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
  e.fact_keys = {{"vocab_size", "vocab_size"}, {"bos_id", "bos_token_id"}, {"eos_id", "eos_token_id"}};
  e.architecture_keys = {"n_positions", "n_embd", "n_layer", "n_head", "n_inner", "activation_function",
                         "layer_norm_epsilon"};
  e.build = [](const json& section, const std::string&) {
    return GPT2LMHeadModel(read_options<GPT2Options>(section, "model", {"model_type"})).ptr();
  };
  e.from_hf_tensors = gpt2_from_hf_tensors;
  e.to_hf_tensors = gpt2_to_hf_tensors;
  return e;
}

}  // namespace zoo::models
