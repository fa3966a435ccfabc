#include "models/seq2seq.h"

#include <limits>

#include "core/error.h"
#include "models/entry_helpers.h"
#include "models/kernels/dropout.h"

namespace zoo::models {

namespace F = torch::nn::functional;

void Seq2SeqOptions::validate() const {
  if (source_vocab_size < 1)
    throw Error("config: model.source_vocab_size is required (size of the source vocabulary)");
  if (target_vocab_size < 1)
    throw Error("config: model.target_vocab_size is required (size of the target vocabulary)");
  if (embedding_dim < 1 || units < 1 || num_layers < 1 || attention_units < 0)
    throw Error(cat("config: model.embedding_dim (", embedding_dim, "), model.units (", units,
                    ") and model.num_layers (", num_layers,
                    ") must be >= 1 and model.attention_units >= 0"));
  if (dropout < 0 || dropout > 1)
    throw Error(cat("config: model.dropout must be in [0, 1], got ", dropout));
  if (pad_id < 0 || pad_id >= source_vocab_size || pad_id >= target_vocab_size)
    throw Error(cat("config: model.pad_id (", pad_id,
                    ") must be a valid id of both vocabularies (sizes ", source_vocab_size, " and ",
                    target_vocab_size, ")"));
  if (attention != "bahdanau" && attention != "dot" && attention != "general" &&
      attention != "concat")
    throw Error(cat("config: model.attention must be one of bahdanau, dot, general, concat; got '",
                    attention, "'"));
  if (attention == "dot" && encoder_output_size() != units)
    throw Error(
        cat("config: model.attention 'dot' needs encoder outputs as wide as the decoder "
            "state (",
            units, "), but model.bidirectional_encoder makes them ", encoder_output_size(),
            " wide; use 'general' or 'concat'"));
  if ((attention == "dot" || attention == "general") && attention_units != 0)
    throw Error(
        cat("config: model.attention_units is used by the bahdanau and concat scores only; "
            "remove it for '",
            attention, "'"));
}

// ---------------------------------------------------------------------------------------
// Encoder

Seq2SeqEncoderImpl::Seq2SeqEncoderImpl(const Seq2SeqOptions& o) : o_(o) {
  embedding =
      register_module("embedding", torch::nn::Embedding(o.source_vocab_size, o.embedding_dim));
  auto gru_options = torch::nn::GRUOptions(o.embedding_dim, o.units)
                         .num_layers(o.num_layers)
                         .batch_first(true)
                         .bidirectional(o.bidirectional_encoder);
  if (o.num_layers > 1) gru_options.dropout(o.dropout);  // between layers only
  gru = register_module("gru", torch::nn::GRU(gru_options));
  if (o.bidirectional_encoder)
    bridge = register_module("bridge", torch::nn::Linear(2 * o.units, o.units));
}

std::tuple<torch::Tensor, torch::Tensor> Seq2SeqEncoderImpl::forward(const torch::Tensor& src,
                                                                     const torch::Tensor& lengths) {
  namespace rnn = torch::nn::utils::rnn;
  auto x = apply_dropout(embedding(src), o_.dropout, is_training());  // (B, S, D)
  torch::Tensor outputs, hidden;     // (B, S, E), (L * dirs, B, H)
  if (lengths.defined()) {
    auto packed = rnn::pack_padded_sequence(x, lengths, /*batch_first=*/true,
                                            /*enforce_sorted=*/false);
    auto [packed_out, h] = gru->forward_with_packed_input(packed);
    outputs = std::get<0>(rnn::pad_packed_sequence(packed_out, /*batch_first=*/true,
                                                   /*padding_value=*/0.0, src.size(1)));
    hidden = h;
  } else {
    std::tie(outputs, hidden) = gru->forward(x);  // initial state: zeros
  }
  if (o_.bidirectional_encoder) {
    // (2L, B, H) ordered layer 0 forward, layer 0 backward, layer 1 forward, ... Each layer's
    // decoder state is tanh(bridge [forward final; backward final]). (Bahdanau's paper uses
    // tanh(W_s backward_1); both directions is the common variant.)
    const int64_t layers = o_.num_layers, batch = src.size(0), h = o_.units;
    auto both = hidden.view({layers, 2, batch, h})
                    .permute({0, 2, 1, 3})
                    .reshape({layers, batch, 2 * h});  // (L, B, 2H)
    hidden = torch::tanh(apply_linear(bridge, both));  // (L, B, H)
  }
  return {outputs, hidden};
}

// ---------------------------------------------------------------------------------------
// Attention

Seq2SeqAttentionImpl::Seq2SeqAttentionImpl(const Seq2SeqOptions& o) : o_(o) {
  const int64_t e = o.encoder_output_size(), h = o.units, a = o.attention_size();
  if (o.attention == "bahdanau") {
    // Document 000: W1 = nn.Linear(1024, units), W2 = nn.Linear(1024, units); the 1024 is
    // its encoder/decoder width, so here the input widths follow the real ones.
    W1 = register_module("W1", torch::nn::Linear(e, a));  // keys
    W2 = register_module("W2", torch::nn::Linear(h, a));  // query
    V = register_module("V", torch::nn::Linear(a, 1));
  } else if (o.attention == "general") {
    // Luong: score = h_t^T W_a h_s, no bias.
    Wa = register_module("Wa", torch::nn::Linear(torch::nn::LinearOptions(e, h).bias(false)));
  } else if (o.attention == "concat") {
    // Luong: score = v_a^T tanh(W_a [h_t; h_s]). W_a's h_s columns are applied once per batch.
    Wa = register_module("Wa", torch::nn::Linear(torch::nn::LinearOptions(h + e, a).bias(false)));
    va = register_module("va", torch::nn::Linear(torch::nn::LinearOptions(a, 1).bias(false)));
  }
  // dot: score = h_t^T h_s, no parameters.
}

torch::Tensor Seq2SeqAttentionImpl::keys(const torch::Tensor& values) {
  if (o_.attention == "bahdanau") return apply_linear(W1, values);  // (B, S, A)
  if (o_.attention == "general") return apply_linear(Wa, values);   // (B, S, H)
  if (o_.attention == "concat")
    return F::linear(values,
                     Wa->weight.narrow(1, o_.units, o_.encoder_output_size()));  // (B, S, A)
  return values;                                                                 // dot: (B, S, H)
}

std::tuple<torch::Tensor, torch::Tensor> Seq2SeqAttentionImpl::forward(const torch::Tensor& query,
                                                                       const torch::Tensor& keys,
                                                                       const torch::Tensor& values,
                                                                       const torch::Tensor& mask) {
  torch::Tensor score;  // (B, S)
  if (o_.attention == "bahdanau") {
    // V tanh(W1 values + W2 query), W1 values precomputed; broadcast over source positions.
    score = apply_linear(V, torch::tanh(keys + apply_linear(W2, query).unsqueeze(1))).squeeze(-1);
  } else if (o_.attention == "concat") {
    auto q = F::linear(query, Wa->weight.narrow(1, 0, o_.units));  // (B, A)
    score = apply_linear(va, torch::tanh(keys + q.unsqueeze(1))).squeeze(-1);
  } else {  // dot, general: keys . query
    score = torch::bmm(keys, query.unsqueeze(2)).squeeze(2);
  }
  if (mask.defined())
    score = score.masked_fill(mask.logical_not(), -std::numeric_limits<float>::infinity());
  auto weights = torch::softmax(score, 1);                             // (B, S)
  auto context = torch::bmm(weights.unsqueeze(1), values).squeeze(1);  // (B, E)
  return {context, weights};
}

// ---------------------------------------------------------------------------------------
// Decoder

Seq2SeqDecoderImpl::Seq2SeqDecoderImpl(const Seq2SeqOptions& o) : o_(o) {
  // Registration order = document 000's: embedding, gru, fc, attention.
  embedding =
      register_module("embedding", torch::nn::Embedding(o.target_vocab_size, o.embedding_dim));
  // Document 000: nn.GRU(embedding_dim + dec_units, ...): its context is dec_units wide.
  auto gru_options = torch::nn::GRUOptions(o.encoder_output_size() + o.embedding_dim, o.units)
                         .num_layers(o.num_layers)
                         .batch_first(true);
  if (o.num_layers > 1) gru_options.dropout(o.dropout);
  gru = register_module("gru", torch::nn::GRU(gru_options));
  fc = register_module("fc", torch::nn::Linear(o.units, o.target_vocab_size));
  attention = register_module("attention", Seq2SeqAttention(o));
}

torch::Tensor Seq2SeqDecoderImpl::embed(const torch::Tensor& prev_tokens) {
  return apply_dropout(embedding(prev_tokens), o_.dropout, is_training());  // (B, D) or (B, T, D)
}

std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> Seq2SeqDecoderImpl::step(
    const torch::Tensor& embedded, const torch::Tensor& hidden, const EncoderState& enc) {
  // The query is the previous state of the top layer (document: hidden.permute(1, 0, 2)).
  auto query = hidden.select(0, hidden.size(0) - 1);                            // (B, H)
  auto [context, weights] = attention(query, enc.keys, enc.outputs, enc.mask);  // (B, E), (B, S)
  auto x = torch::cat({context, embedded}, -1).unsqueeze(1);                    // (B, 1, E + D)
  auto [output, next] = gru->forward(x, hidden);  // (B, 1, H), (L, B, H)
  return {output.squeeze(1), next, weights};
}

// ---------------------------------------------------------------------------------------
// Seq2Seq

Seq2SeqImpl::Seq2SeqImpl(const Seq2SeqOptions& o) : o_(o) {
  o.validate();
  encoder = register_module("encoder", Seq2SeqEncoder(o));
  decoder = register_module("decoder", Seq2SeqDecoder(o));
}

EncoderState Seq2SeqImpl::encode(const torch::Tensor& src) {
  TORCH_CHECK(src.dim() == 2 && src.scalar_type() == torch::kLong,
              "Seq2Seq expects src of shape (B, S) int64, got ", src.sizes(), " ",
              src.scalar_type());
  EncoderState enc;
  torch::Tensor lengths;  // (B) on the CPU, for packing
  if (o_.mask_source_padding) {
    const int64_t len = src.size(1);
    auto real = src.ne(o_.pad_id);  // (B, S)
    // A source of padding only still gets one position (its first) to attend to.
    auto n = real.sum(1).clamp_min(1);                                           // (B)
    enc.mask = torch::arange(len, src.options()).unsqueeze(0) < n.unsqueeze(1);  // (B, S)
    TORCH_CHECK(!(real & enc.mask.logical_not()).any().item<bool>(),
                "Seq2Seq: sources must be right-padded with pad_id ", o_.pad_id);
    lengths = n.to(torch::kCPU);
  }
  std::tie(enc.outputs, enc.hidden) = encoder(src, lengths);  // (B, S, E), (L, B, H)
  // Step-independent part of the score, once per batch (W1 values in document 000's
  // BahdanauAttention, which recomputes it on every decoder step).
  enc.keys = decoder->attention_module()->keys(enc.outputs);  // (B, S, K)
  return enc;
}

DecoderStepOutput Seq2SeqImpl::decode_step(const torch::Tensor& prev_tokens,
                                           const torch::Tensor& hidden, const EncoderState& enc) {
  auto [output, next, weights] = decoder->step(decoder->embed(prev_tokens), hidden, enc);
  return {decoder->project(output), next, weights};  // (B, V), (L, B, H), (B, S)
}

torch::Tensor Seq2SeqImpl::forward(const torch::Tensor& src, const torch::Tensor& tgt_in,
                                   double teacher_forcing_ratio, torch::Generator* generator) {
  TORCH_CHECK(tgt_in.dim() == 2 && tgt_in.size(0) == src.size(0) && tgt_in.size(1) > 0,
              "Seq2Seq expects tgt_in of shape (B, T) with the batch of src, got ", tgt_in.sizes(),
              " for src ", src.sizes());
  const EncoderState enc = encode(src);
  torch::Tensor hidden = enc.hidden;  // (L, B, H)
  const int64_t steps = tgt_in.size(1);

  if (teacher_forcing_ratio >= 1.0) {
    // Every input is known: embed them at once, and run the output layer once at the end.
    auto embedded = decoder->embed(tgt_in);  // (B, T, D)
    std::vector<torch::Tensor> outputs;
    for (int64_t t = 0; t < steps; ++t) {
      auto [output, next, weights] = decoder->step(embedded.select(1, t), hidden, enc);
      hidden = next;
      outputs.push_back(output);  // (B, H)
    }
    return decoder->project(torch::stack(outputs, 1));  // (B, T, V)
  }

  c10::optional<torch::Generator> gen;
  if (generator) gen = *generator;
  std::vector<torch::Tensor> logits;
  torch::Tensor prev = tgt_in.select(1, 0);  // (B)
  for (int64_t t = 0; t < steps; ++t) {
    if (t > 0) {
      const bool teacher = torch::rand({1}, gen).item<double>() < teacher_forcing_ratio;
      prev = teacher ? tgt_in.select(1, t) : logits.back().argmax(-1);
    }
    auto out = decode_step(prev, hidden, enc);
    hidden = out.hidden;
    logits.push_back(out.logits);  // (B, V)
  }
  return torch::stack(logits, 1);  // (B, T, V)
}

// ---------------------------------------------------------------------------------------
// EncoderDecoder: decoding through a DecoderState

DecoderState Seq2SeqImpl::start(const torch::Tensor& src) {
  using Scope = DecoderState::Scope;
  EncoderState enc = encode(src);
  DecoderState state;
  state.set("outputs", enc.outputs, 0, Scope::kSentence);                    // (B, S, E)
  state.set("keys", enc.keys, 0, Scope::kSentence);                          // (B, S, K)
  if (enc.mask.defined()) state.set("mask", enc.mask, 0, Scope::kSentence);  // (B, S)
  state.set("hidden", enc.hidden, 1, Scope::kHypothesis);                    // (L, B, H)
  return state;
}

torch::Tensor Seq2SeqImpl::step(const torch::Tensor& prev_tokens, DecoderState& state) {
  EncoderState enc;
  enc.outputs = state.get("outputs");
  enc.keys = state.get("keys");
  if (state.has("mask")) enc.mask = state.get("mask");
  auto out = decode_step(prev_tokens, state.get("hidden"), enc);
  state.set("hidden", out.hidden, 1);         // (L, N, H)
  state.set("attention", out.attention, 0);   // (N, S)
  return torch::log_softmax(out.logits, -1);  // (N, V)
}

torch::Tensor Seq2SeqImpl::attention(const DecoderState& state) const {
  return state.has("attention") ? state.get("attention") : torch::Tensor();
}

// The registry entry (models/registry.h).
namespace {
json seq2seq_from_hf(const json& hf) {  // what seq2seq_to_hf writes
  json model = entry::same_named_fields<Seq2SeqOptions>(hf, "seq2seq");
  if (hf.contains("decoder_start_token_id")) model["bos_id"] = hf["decoder_start_token_id"];
  if (hf.contains("eos_token_id")) model["eos_id"] = hf["eos_token_id"];
  return model;
}

// No transformers class implements this GRU model; the file records the architecture and
// the special ids under Hugging Face's encoder-decoder names (zoo loads it back).
json seq2seq_to_hf(const json& model, const std::string& architecture) {
  json hf = model;
  hf.erase("bos_id");
  hf.erase("eos_id");
  hf["architectures"] = {architecture};
  hf["is_encoder_decoder"] = true;
  hf["vocab_size"] = model.value("target_vocab_size", 0);
  hf["hidden_size"] = model.value("units", 0);
  hf["pad_token_id"] = model.value("pad_id", 0);
  hf["bos_token_id"] = model.value("bos_id", -1);
  hf["decoder_start_token_id"] = model.value("bos_id", -1);
  hf["eos_token_id"] = model.value("eos_id", -1);
  hf["torch_dtype"] = "float32";
  return hf;
}
}  // namespace

ModelEntry seq2seq_entry() {
  ModelEntry e;
  e.model_type = "seq2seq";
  e.default_task = "translation";
  e.resolve = [](const json& merged) { return entry::resolve_translation_section<Seq2SeqOptions>(merged, "seq2seq"); };
  e.describe = entry::translation_docs<Seq2SeqOptions>;
  e.from_hf = seq2seq_from_hf;
  e.to_hf = seq2seq_to_hf;
  e.architectures = {{"translation", "Seq2SeqGRUAttention"}};
  e.fact_keys = entry::translation_fact_keys();
  e.architecture_keys = {"embedding_dim", "units", "attention", "attention_units", "bidirectional_encoder", "num_layers"};
  e.build = [](const json& section, const std::string&) {
    return Seq2Seq(read_options<Seq2SeqOptions>(section, "model", entry::translation_extra_keys())).ptr();
  };
  e.is_encoder_decoder = true;
  return e;
}

}  // namespace zoo::models
