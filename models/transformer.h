#pragma once
// The Transformer encoder-decoder of "Attention Is All You Need" (Vaswani et al. 2017;
// documents 001/002), on the shared blocks (models/attention.h, models/blocks.h), in
// Hugging Face's MarianMTModel layout so that `zoo export` writes a directory transformers
// loads. Registered names:
//
//   model.shared                                   joint source/target embedding (shared only)
//   model.encoder.embed_tokens, model.decoder.embed_tokens      (separate embeddings only)
//   model.{encoder,decoder}.embed_positions.weight sinusoidal table (buffer; sines, then cosines)
//   model.encoder.layers.N.self_attn.{q,k,v,out}_proj, .self_attn_layer_norm, .fc1, .fc2,
//       .final_layer_norm
//   model.decoder.layers.N.self_attn.*, .self_attn_layer_norm, .encoder_attn.*,
//       .encoder_attn_layer_norm, .fc1, .fc2, .final_layer_norm
//   model.{encoder,decoder}.layer_norm             final LayerNorms (pre-norm only: not Marian)
//   lm_head                                        output projection (untied only)
//   final_logits_bias                              (1, target_vocab_size) buffer, as Marian's
//
// Embeddings are scaled by sqrt(d_model); post-norm layers (the paper, Marian) or pre-norm
// (normalize_before, fairseq's name). The output projection is tied to the decoder's
// embedding by default (the paper, Marian).
//
// Decoding keeps a key/value cache per layer in the DecoderState: the decoder's
// self-attention keys and values grow by one step per call (per hypothesis), the
// cross-attention's are computed once from the encoder output (per sentence).
#include <map>
#include <string>

#include <torch/torch.h>

#include "core/options.h"
#include "models/attention.h"
#include "models/blocks.h"
#include "models/encoder_decoder.h"
#include "models/quantize.h"
#include "models/recompute.h"

namespace zoo::models {

/// Options, with Hugging Face MarianConfig names where Marian has the field. Vocabulary
/// sizes and the special ids come from the translation task's vocabularies.
struct TransformerOptions {
  int64_t source_vocab_size = 0;  // required (Marian's vocab_size)
  int64_t target_vocab_size = 0;  // required (Marian's decoder_vocab_size)
  int64_t d_model = 512;
  int64_t encoder_layers = 6;
  int64_t decoder_layers = 6;
  int64_t encoder_attention_heads = 8;
  int64_t decoder_attention_heads = 8;
  int64_t encoder_ffn_dim = 2048;
  int64_t decoder_ffn_dim = 2048;
  std::string activation_function = "relu";
  double dropout = 0.1;
  double attention_dropout = 0.0;
  double activation_dropout = 0.0;
  int64_t max_position_embeddings = 512;
  bool scale_embedding = true;
  bool normalize_before = false;
  bool share_encoder_decoder_embeddings = false;
  bool tie_word_embeddings = true;
  double layer_norm_eps = 1e-5;
  double init_std = 0.02;
  int64_t pad_id = 0;

  template <class V>
  void fields(V& v) {
    v("source_vocab_size", source_vocab_size, "source vocabulary size, padding included (required)",
      at_least(1));
    v("target_vocab_size", target_vocab_size, "target vocabulary size, padding included (required)",
      at_least(1));
    v("d_model", d_model, "width of the embeddings and of every layer", at_least(1));
    v("encoder_layers", encoder_layers, "encoder layers", at_least(1));
    v("decoder_layers", decoder_layers, "decoder layers", at_least(1));
    v("encoder_attention_heads", encoder_attention_heads, "encoder attention heads (divide d_model)",
      at_least(1));
    v("decoder_attention_heads", decoder_attention_heads, "decoder attention heads (divide d_model)",
      at_least(1));
    v("encoder_ffn_dim", encoder_ffn_dim, "width of the encoder's feed-forward layers", at_least(1));
    v("decoder_ffn_dim", decoder_ffn_dim, "width of the decoder's feed-forward layers", at_least(1));
    v("activation_function", activation_function, "feed-forward activation (the paper: relu; Marian: swish)",
      one_of({"relu", "gelu", "gelu_new", "silu", "swish"}));
    v("dropout", dropout, "dropout on the embeddings and on every sub-layer's output", between(0, 1));
    v("attention_dropout", attention_dropout, "dropout on the attention weights", between(0, 1));
    v("activation_dropout", activation_dropout, "dropout after the feed-forward activation", between(0, 1));
    v("max_position_embeddings", max_position_embeddings,
      "rows of the sinusoidal position table: the longest source or target in tokens", at_least(1));
    v("scale_embedding", scale_embedding, "multiply the embeddings by sqrt(d_model) (the paper)");
    v("normalize_before", normalize_before,
      "pre-norm layers with a final LayerNorm (fairseq's name); false = post-norm (the paper, Marian)");
    v("share_encoder_decoder_embeddings", share_encoder_decoder_embeddings,
      "one embedding for source and target (a joint vocabulary: equal sizes)");
    v("tie_word_embeddings", tie_word_embeddings,
      "the output projection is the decoder's embedding (the paper); false = a separate lm_head");
    v("layer_norm_eps", layer_norm_eps, "LayerNorm epsilon", between(0, 1));
    v("init_std", init_std, "std of the normal init of weights and embeddings (Marian's init_std)",
      between(0, 10));
    v("pad_id", pad_id, "padding token id of the source (and target) vocabulary", at_least(0));
  }
  /// Cross-field checks; throws zoo::Error naming the keys.
  void validate() const;
};

/// x -> LN(x + drop(self_attn(x))) -> LN(. + drop(ffn(.))) (post-norm), or the pre-norm form.
class TransformerEncoderLayerImpl : public torch::nn::Module {
 public:
  explicit TransformerEncoderLayerImpl(const TransformerOptions& o);
  /// x (B, S, d), source mask (B, S) true on tokens -> (B, S, d).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& src_mask);

 private:
  MultiHeadAttention self_attn{nullptr};
  Residual self_attn_block, ffn_block;
  FeedForward ffn;
};
TORCH_MODULE(TransformerEncoderLayer);

/// Masked self-attention, cross-attention over the encoder output, feed-forward.
class TransformerDecoderLayerImpl : public torch::nn::Module {
 public:
  explicit TransformerDecoderLayerImpl(const TransformerOptions& o);
  /// x (B, T, d) over memory (B, S, d). With caches, x holds the new steps only; the cross
  /// cache, once filled, replaces the memory (which may then be undefined). With `weights`,
  /// the cross-attention weights of x's queries, (B, heads, T, S), are written there.
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& memory, const torch::Tensor& src_mask,
                        KVCache* self_cache = nullptr, KVCache* cross_cache = nullptr,
                        torch::Tensor* weights = nullptr);

 private:
  MultiHeadAttention self_attn{nullptr}, encoder_attn{nullptr};
  Residual self_attn_block, cross_block, ffn_block;
  FeedForward ffn;
};
TORCH_MODULE(TransformerDecoderLayer);

/// The encoder-decoder (Hugging Face's MarianMTModel). Implements EncoderDecoder, so the
/// translation task, the searches and `zoo translate` use it without naming it.
class TransformerImpl : public torch::nn::Module,
                        public EncoderDecoder,
                        public GradientCheckpointing,
                        public SharedOutputWeight {
 public:
  explicit TransformerImpl(const TransformerOptions& o);

  /// src (B, S) right-padded with pad_id -> encoder output (B, S, d). Throws zoo::Error when S
  /// exceeds max_position_embeddings.
  torch::Tensor encode(const torch::Tensor& src);
  /// Decoder hidden states (B, T, d) of tgt_in (B, T) positions offset.., over memory.
  /// `caches`: 2 * decoder_layers (self, cross per layer) or null.
  torch::Tensor decode(const torch::Tensor& tgt_in, const torch::Tensor& memory, const torch::Tensor& src_mask,
                       std::vector<KVCache>* caches = nullptr, torch::Tensor* last_weights = nullptr);
  /// Hidden states -> logits over the target vocabulary.
  torch::Tensor project(const torch::Tensor& hidden);
  /// The decoder's embedding when the output projection is tied to it, else undefined (lm_head).
  torch::Tensor shared_output_weight() const override { return lm_head ? torch::Tensor() : target_embedding->weight; }

  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in, double teacher_forcing_ratio = 1.0,
                        torch::Generator* generator = nullptr) override;
  DecoderState start(const torch::Tensor& src) override;
  torch::Tensor step(const torch::Tensor& prev_tokens, DecoderState& state) override;
  /// The last step's cross-attention of the last decoder layer (N, S): the mean over its
  /// heads, or the head select_attention_head() chose.
  torch::Tensor attention(const DecoderState& state) const override;
  std::shared_ptr<torch::nn::Module> module() override { return shared_from_this(); }
  int64_t pad_id() const override { return o_.pad_id; }
  int64_t max_positions() const override { return o_.max_position_embeddings; }
  /// The last decoder layer's cross-attention heads.
  int64_t attention_heads() const override { return o_.decoder_attention_heads; }
  void select_attention_head(int64_t head) override;
  const TransformerOptions& options() const { return o_; }
  /// Decoding without the key/value cache: every step runs the decoder over the whole
  /// prefix (for the benchmark and the test that both give the same output).
  void set_use_cache(bool use_cache) { use_cache_ = use_cache; }
  /// Marian's init: weights and embeddings N(0, init_std), biases 0, padding rows 0.
  void reset_parameters();

 private:
  torch::Tensor embed(torch::nn::Embedding& table, const torch::Tensor& ids,
                      SinusoidalPositions& positions, int64_t offset);
  TransformerOptions o_;
  double embed_scale_ = 1.0;
  bool use_cache_ = true;
  int64_t attention_head_ = -1;  // -1: the mean of the heads
  torch::nn::Embedding source_embedding{nullptr}, target_embedding{nullptr};
  SinusoidalPositions encoder_positions{nullptr}, decoder_positions{nullptr};
  torch::nn::ModuleList encoder_layers, decoder_layers;
  torch::nn::LayerNorm encoder_norm{nullptr}, decoder_norm{nullptr};
  torch::nn::Linear lm_head{nullptr};
  torch::Tensor final_logits_bias;
};
TORCH_MODULE(Transformer);

/// A MarianMTModel's tensors -> ours: the copies of a tied or shared embedding
/// (model.encoder/decoder.embed_tokens beside model.shared, lm_head.weight equal to the
/// decoder's embedding) are dropped.
void transformer_from_hf_tensors(std::map<std::string, torch::Tensor>& tensors);
/// Ours -> MarianMTModel's: the shared embedding also under the encoder's and decoder's
/// names, and lm_head.weight when tied, as transformers expects them.
void transformer_to_hf_tensors(std::map<std::string, torch::Tensor>& tensors);

}  // namespace zoo::models
