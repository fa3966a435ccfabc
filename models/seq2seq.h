#pragma once
// GRU encoder-decoder with attention (Bahdanau et al. 2015), as document 000 writes it in
// PyTorch (Encoder, BahdanauAttention, Decoder; ~l.375-460), with Luong et al. (2015)'s
// dot / general / concat scores (documents 001-003) as alternatives. Registered names are
// the document's, so the state dicts of its modules load unchanged (prefixed encoder. and
// decoder.):
//
//   encoder.embedding.weight                 (source_vocab_size, embedding_dim)
//   encoder.gru.{weight,bias}_{ih,hh}_lN     GRU(embedding_dim, units), batch_first
//   encoder.gru.*_reverse, encoder.bridge    only with bidirectional_encoder
//   decoder.embedding.weight                 (target_vocab_size, embedding_dim)
//   decoder.gru.*                            GRU(context width + embedding_dim, units)
//   decoder.fc.{weight,bias}                 units -> target_vocab_size
//   decoder.attention.W1/W2/V                bahdanau: V tanh(W1 values + W2 query)
//   decoder.attention.Wa                     general: query . Wa values
//   decoder.attention.Wa, decoder.attention.va   concat: va tanh(Wa [query; values])
//
// One decoder step, in the document's order: attention(query = previous decoder state,
// values = encoder outputs) -> context; embed the previous token; GRU over
// [context; embedding]; fc -> logits. Luong's scores plug into this same step (Luong's
// attentional hidden state and input feeding are not part of document 000's model).
//
// Deviations from document 000 (mask_source_padding = false, bidirectional_encoder = false,
// num_layers = 1, dropout = 0 reproduce it exactly; tests/seq2seq_test.cc checks that):
//   - BahdanauAttention hard-codes nn.Linear(1024, units) for W1 and W2; here W1's input
//     width is the encoder output width and W2's the decoder state width.
//   - With mask_source_padding (the default), padded source positions get attention weight
//     exactly 0, and the encoder GRU skips them (packed sequences), so a padded sentence
//     encodes as it would alone. Sources are right-padded with pad_id. The document feeds
//     the padding through the GRU and lets the decoder attend to it.
//   - The key side of the score (W1 values) does not depend on the decoder step; encode()
//     computes it once per batch, not once per step as the document's module does.
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "core/options.h"
#include "models/encoder_decoder.h"
#include "models/generation.h"
#include "models/kernels/linear.h"

namespace zoo::models {

/// Options; defaults are document 000's hyper-parameters (embedding 256, GRU units 1024).
struct Seq2SeqOptions {
  int64_t source_vocab_size = 0;  // required
  int64_t target_vocab_size = 0;  // required
  int64_t embedding_dim = 256;
  int64_t units = 1024;
  std::string attention = "bahdanau";
  int64_t attention_units = 0;  // 0: same as units
  bool bidirectional_encoder = false;
  int64_t num_layers = 1;
  double dropout = 0.0;
  bool mask_source_padding = true;
  int64_t pad_id = 0;

  template <class V>
  void fields(V& v) {
    v("source_vocab_size", source_vocab_size, "source vocabulary size, padding included (required)",
      at_least(1));
    v("target_vocab_size", target_vocab_size, "target vocabulary size, padding included (required)",
      at_least(1));
    v("embedding_dim", embedding_dim, "width of the source and target embeddings", at_least(1));
    v("units", units, "hidden size of the encoder and decoder GRUs", at_least(1));
    v("attention", attention,
      "score: bahdanau = V tanh(W1 values + W2 query); Luong's dot, general, concat",
      one_of({"bahdanau", "dot", "general", "concat"}));
    v("attention_units", attention_units, "hidden width of the bahdanau/concat scores; 0 = units",
      at_least(0));
    v("bidirectional_encoder", bidirectional_encoder,
      "bidirectional encoder GRU (Bahdanau's paper); its outputs are 2 * units wide");
    v("num_layers", num_layers, "GRU layers in the encoder and in the decoder", at_least(1));
    v("dropout", dropout, "dropout on embeddings and between GRU layers", between(0, 1));
    v("mask_source_padding", mask_source_padding,
      "ignore source padding (attention mask + packed encoder); false = document 000 exactly");
    v("pad_id", pad_id, "padding token id of the source (and target) vocabulary", at_least(0));
  }
  /// Cross-field checks; throws zoo::Error naming the keys.
  void validate() const;
  /// Width of the encoder outputs, i.e. of the attention values and the context vector.
  int64_t encoder_output_size() const { return bidirectional_encoder ? 2 * units : units; }
  /// Hidden width of the bahdanau / concat scores.
  int64_t attention_size() const { return attention_units > 0 ? attention_units : units; }
};

/// What the decoder needs from the encoder, computed once per batch by Seq2Seq::encode().
struct EncoderState {
  torch::Tensor outputs;  // (B, S, E) encoder outputs: the attention values
  torch::Tensor keys;     // (B, S, K) key side of the score, precomputed (W1 values + b)
  torch::Tensor mask;     // (B, S) bool, true on real tokens; undefined: attend everywhere
  torch::Tensor hidden;   // (L, B, H) initial decoder state (document: dec_hidden = enc_hidden)
};

/// One decoder step's results.
struct DecoderStepOutput {
  torch::Tensor logits;     // (B, V)
  torch::Tensor hidden;     // (L, B, H)
  torch::Tensor attention;  // (B, S) attention weights over the source
};

/// Embedding + GRU (document 000's Encoder), optionally bidirectional with a bridge to the
/// decoder's initial state.
class Seq2SeqEncoderImpl : public torch::nn::Module {
 public:
  explicit Seq2SeqEncoderImpl(const Seq2SeqOptions& o);
  /// src (B, S) int64 -> {outputs (B, S, E), final state for the decoder (L, B, H)}.
  /// `lengths` (B) int64 on the CPU packs the sequences; undefined runs over every position.
  /// The initial state is zeros (document: initialize_hidden_state).
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& src,
                                                   const torch::Tensor& lengths = {});

 private:
  Seq2SeqOptions o_;
  torch::nn::Embedding embedding{nullptr};
  torch::nn::GRU gru{nullptr};
  torch::nn::Linear bridge{nullptr};
};
TORCH_MODULE(Seq2SeqEncoder);

/// The attention scores (document 000's BahdanauAttention and Luong's three).
class Seq2SeqAttentionImpl : public torch::nn::Module {
 public:
  explicit Seq2SeqAttentionImpl(const Seq2SeqOptions& o);
  /// The step-independent key side of the score: values (B, S, E) -> keys (B, S, K).
  torch::Tensor keys(const torch::Tensor& values);
  /// query (B, H), precomputed keys, values (B, S, E), mask (B, S) or undefined
  /// -> {context (B, E), weights (B, S)}; softmax over the source positions.
  std::tuple<torch::Tensor, torch::Tensor> forward(const torch::Tensor& query,
                                                   const torch::Tensor& keys,
                                                   const torch::Tensor& values,
                                                   const torch::Tensor& mask);

 private:
  Seq2SeqOptions o_;
  torch::nn::Linear W1{nullptr}, W2{nullptr}, V{nullptr};  // bahdanau
  torch::nn::Linear Wa{nullptr}, va{nullptr};              // general, concat
};
TORCH_MODULE(Seq2SeqAttention);

/// Embedding + attention + GRU + fc (document 000's Decoder).
class Seq2SeqDecoderImpl : public torch::nn::Module {
 public:
  explicit Seq2SeqDecoderImpl(const Seq2SeqOptions& o);
  /// prev_tokens (B) -> embedded (B, D), dropout applied.
  torch::Tensor embed(const torch::Tensor& prev_tokens);
  /// One step without the output layer: embedded previous token (B, D), hidden (L, B, H)
  /// -> {GRU output (B, H), new hidden (L, B, H), attention weights (B, S)}.
  std::tuple<torch::Tensor, torch::Tensor, torch::Tensor> step(const torch::Tensor& embedded,
                                                               const torch::Tensor& hidden,
                                                               const EncoderState& enc);
  /// The output layer: (..., H) -> logits (..., V).
  torch::Tensor project(const torch::Tensor& output) { return apply_linear(fc, output); }
  Seq2SeqAttention& attention_module() { return attention; }

 private:
  Seq2SeqOptions o_;
  torch::nn::Embedding embedding{nullptr};
  torch::nn::GRU gru{nullptr};
  torch::nn::Linear fc{nullptr};
  Seq2SeqAttention attention{nullptr};
};
TORCH_MODULE(Seq2SeqDecoder);

/// The encoder-decoder. It implements EncoderDecoder (models/encoder_decoder.h), so the
/// translation task and the searches use it without naming it: the DecoderState holds the
/// encoder memory per sentence ("outputs", "keys", "mask") and the GRU state per hypothesis
/// ("hidden"), plus the last step's attention weights ("attention").
class Seq2SeqImpl : public torch::nn::Module, public EncoderDecoder {
 public:
  explicit Seq2SeqImpl(const Seq2SeqOptions& o);
  /// Encodes src (B, S) int64 once: outputs, precomputed attention keys, padding mask and
  /// the decoder's initial state.
  EncoderState encode(const torch::Tensor& src);
  /// One decoder step: previous tokens (B), state (L, B, H) -> logits, new state, attention.
  DecoderStepOutput decode_step(const torch::Tensor& prev_tokens, const torch::Tensor& hidden,
                                const EncoderState& enc);
  /// Teacher-forced decoding: src (B, S), tgt_in (B, T) (bos + target without its last
  /// token) -> logits (B, T, V). With teacher_forcing_ratio < 1, each step t > 0 feeds the
  /// previous step's argmax instead of tgt_in[:, t] with probability 1 - ratio (one draw per
  /// step for the whole batch, from `generator`, or the default generator when null).
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in,
                        double teacher_forcing_ratio = 1.0,
                        torch::Generator* generator = nullptr) override;
  const Seq2SeqOptions& options() const { return o_; }
  Seq2SeqEncoder& encoder_module() { return encoder; }
  Seq2SeqDecoder& decoder_module() { return decoder; }

  // EncoderDecoder: encode() as a DecoderState for B rows; decode_step() on its rows.
  DecoderState start(const torch::Tensor& src) override;
  torch::Tensor step(const torch::Tensor& prev_tokens, DecoderState& state) override;
  torch::Tensor attention(const DecoderState& state) const override;
  std::shared_ptr<torch::nn::Module> module() override { return shared_from_this(); }
  int64_t pad_id() const override { return o_.pad_id; }
  /// torch::nn::GRU's dropout between layers draws from the default generator itself.
  bool random_only_in_dropout() const override { return o_.num_layers == 1 || o_.dropout == 0; }

 private:
  Seq2SeqOptions o_;
  Seq2SeqEncoder encoder{nullptr};
  Seq2SeqDecoder decoder{nullptr};
};
TORCH_MODULE(Seq2Seq);

}  // namespace zoo::models
