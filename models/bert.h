#pragma once
// BERT (Devlin et al. 2019; documents 000/003/004) on the shared blocks, laid out like Hugging
// Face's BertForPreTraining / BertForSequenceClassification so that their model.safetensors
// load unchanged:
//
//   bert.embeddings.{word,position,token_type}_embeddings, bert.embeddings.LayerNorm
//   bert.encoder.layer.N.attention.self.{query,key,value}
//   bert.encoder.layer.N.attention.output.dense, .attention.output.LayerNorm   (post-norm)
//   bert.encoder.layer.N.intermediate.dense, .output.dense, .output.LayerNorm
//   bert.pooler.dense                                   tanh on the first token ([CLS])
//   cls.predictions.transform.dense, .transform.LayerNorm, cls.predictions.bias
//       (the MLM decoder is the word embedding, tied: cls.predictions.decoder.weight is not
//       stored)
//   cls.seq_relationship                                next-sentence head, 2 ways
//   classifier                                          sequence classification head
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/options.h"
#include "models/attention.h"
#include "models/blocks.h"
#include "models/recompute.h"

namespace zoo::models {

/// Hugging Face BertConfig field names and defaults (bert-base-uncased).
struct BertOptions {
  int64_t vocab_size = 0;  // 0: from the data's vocabulary (bert-base-uncased: 30522)
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  int64_t max_position_embeddings = 512;
  int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t pad_token_id = 0;
  int64_t num_labels = 2;
  std::vector<std::string> labels;
  std::string position_embedding_init = "normal";  // zoo's, not BertConfig's (only how training starts)
  std::string pretraining_head = "mlm";  // zoo's: which heads bert_pretraining trains (models/bert_electra.h)
  int64_t generator_hidden_size = 64;    // zoo's: the ELECTRA generator's width
  std::string classifier_pooling = "cls";  // zoo's: what the sequence classifier's pooler reads

  template <class V>
  void fields(V& v) {
    v("vocab_size", vocab_size, "tokens in the vocabulary (0: from the data)", at_least(0));
    v("hidden_size", hidden_size, "width of the token vectors", at_least(1));
    v("num_hidden_layers", num_hidden_layers, "encoder layers", at_least(1));
    v("num_attention_heads", num_attention_heads, "attention heads (must divide hidden_size)", at_least(1));
    v("intermediate_size", intermediate_size, "width of the feed-forward layer", at_least(1));
    v("hidden_act", hidden_act, "feed-forward activation", one_of({"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu"}));
    v("hidden_dropout_prob", hidden_dropout_prob, "dropout on embeddings and sub-layer outputs", between(0, 1));
    v("attention_probs_dropout_prob", attention_probs_dropout_prob, "dropout on attention weights", between(0, 1));
    v("max_position_embeddings", max_position_embeddings, "longest input (learned positions)", at_least(1));
    v("type_vocab_size", type_vocab_size, "segment ids (sentence A / B)", at_least(1));
    v("initializer_range", initializer_range, "std of the normal init", between(0, 10));
    v("layer_norm_eps", layer_norm_eps, "LayerNorm epsilon", between(0, 1));
    v("pad_token_id", pad_token_id, "padding id (its embedding row starts at 0)", at_least(0));
    v("num_labels", num_labels, "classes of the sequence classification head", at_least(1));
    v("labels", labels, "class names by index (id2label; text classification fills them in from data.labels)");
    v("position_embedding_init", position_embedding_init,
      "how a new model's learned position table starts: normal (Hugging Face's N(0, initializer_range)) or "
      "sinusoidal (the sinusoidal table of \"Attention Is All You Need\" scaled to that std, so that neighbouring "
      "positions start alike); the table is trained either way, and a loaded checkpoint replaces it",
      one_of({"normal", "sinusoidal"}));
    v("pretraining_head", pretraining_head,
      "what bert_pretraining trains: mlm (Hugging Face's BertForPreTraining: the masked-language-model head, and "
      "the next-sentence head when data.next_sentence_prediction) or electra (ELECTRA's replaced-token detection: "
      "a small generator fills the masked tokens in, and the BERT learns which tokens of every position were "
      "replaced; models/bert_electra.h)",
      one_of({"mlm", "electra"}));
    v("generator_hidden_size", generator_hidden_size,
      "pretraining_head electra: the generator's width (its layers as many as the model's, one head per 64, "
      "feed-forward 4x); ELECTRA's paper: a quarter to a half of hidden_size",
      at_least(1));
    v("classifier_pooling", classifier_pooling,
      "text classification: what the pooler (tanh of a dense layer) reads: cls (the first token's last hidden "
      "state, as Hugging Face's BertForSequenceClassification) or mean (the mean of every unpadded token's; such "
      "a model has no Hugging Face form, so zoo export refuses it)",
      one_of({"cls", "mean"}));
  }
  /// Cross-field checks; throws zoo::Error naming the field.
  void validate() const;
};

/// Post-norm encoder layer: LN(x + drop(attn(x))), then LN(. + drop(ffn(.))).
class BertLayerImpl : public torch::nn::Module {
 public:
  explicit BertLayerImpl(const BertOptions& o);
  /// x (B, T, H), attention_mask (B, T) 1 = token, or undefined -> (B, T, H).
  torch::Tensor forward(const torch::Tensor& x, const torch::Tensor& attention_mask);

 private:
  MultiHeadAttention attention{nullptr};
  Residual attention_block, output_block;
  FeedForward feed_forward;
};
TORCH_MODULE(BertLayer);

/// Embeddings, encoder and pooler (Hugging Face's BertModel), registered under the owner's
/// "bert." prefix by the heads.
class BertModelImpl : public torch::nn::Module, public GradientCheckpointing {
 public:
  explicit BertModelImpl(const BertOptions& o);
  /// input_ids (B, T), token_type_ids (B, T) or undefined (all 0), attention_mask (B, T) or
  /// undefined (all 1) -> the last hidden states (B, T, H). The tokens sit at positions
  /// position_offset .. position_offset+T-1 of the position table (Hugging Face's
  /// position_ids = arange(offset, offset+T)).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                        const torch::Tensor& attention_mask = {}, int64_t position_offset = 0);
  /// The embedding layer alone: word + position + token type, LayerNorm, dropout -> (B, T, H).
  torch::Tensor embed(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                      int64_t position_offset = 0);
  /// x through the BertLayers `blocks` in turn as through the model's own (recomputed in
  /// backward when gradient checkpointing is on): the encoder is encode(layers, embed(...)).
  torch::Tensor encode(torch::nn::ModuleListImpl& blocks, torch::Tensor x, const torch::Tensor& attention_mask);
  /// tanh(dense(hidden[:, 0])): (B, H).
  torch::Tensor pool(const torch::Tensor& hidden);
  /// tanh(dense(mean of hidden over the positions where attention_mask is 1, or all of them
  /// when it is undefined)): (B, H).
  torch::Tensor pool_mean(const torch::Tensor& hidden, const torch::Tensor& attention_mask);
  /// Hugging Face's init of every weight (init_weights_hf), then the position table as
  /// position_embedding_init says. The heads call it on themselves once built.
  void init_weights(torch::nn::Module& owner) const;
  torch::nn::Embedding word_embeddings{nullptr};

 private:
  BertOptions o_;
  torch::nn::Embedding token_type_embeddings{nullptr};
  std::optional<LearnedPositions> positions;
  torch::nn::LayerNorm embeddings_norm{nullptr};
  torch::nn::ModuleList layers;
  torch::nn::Linear pooler{nullptr};
};
TORCH_MODULE(BertModel);

/// The pretraining heads' outputs.
struct BertPreTrainingOutput {
  torch::Tensor prediction_logits;        // (B, T, V) masked-language-model scores
  torch::Tensor seq_relationship_logits;  // (B, 2) is-next scores (index 0: is next, as Hugging Face)
  torch::Tensor mlm_loss;                 // given labels: their mean cross-entropy (no prediction_logits then)
};

/// BERT with the MLM head (tied to the word embedding) and the next-sentence head.
class BertForPreTrainingImpl : public torch::nn::Module {
 public:
  explicit BertForPreTrainingImpl(const BertOptions& o);
  /// With `selected` (B, T) bool, prediction_logits holds only the selected positions'
  /// scores, (N, V) in row-major order: the MLM loss needs no others, and the vocabulary
  /// projection is most of the head's cost. With `labels` (one word per selected position, -100:
  /// ignored) mlm_loss is their mean cross-entropy instead, the vocabulary projection and the
  /// softmax in one kernel (models/kernels/cross_entropy.h), and prediction_logits is not made.
  BertPreTrainingOutput forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                                const torch::Tensor& attention_mask = {}, const torch::Tensor& selected = {},
                                int64_t position_offset = 0, const torch::Tensor& labels = {});
  const BertOptions& options() const { return o_; }
  BertModel bert{nullptr};

 private:
  BertOptions o_;
  torch::nn::Linear transform{nullptr}, seq_relationship{nullptr};
  torch::nn::LayerNorm transform_norm{nullptr};
  torch::Tensor bias;
};
TORCH_MODULE(BertForPreTraining);

/// BERT + dropout + a linear classifier on the pooled first token (or, with
/// classifier_pooling mean, on the pooled mean of the tokens).
class BertForSequenceClassificationImpl : public torch::nn::Module {
 public:
  explicit BertForSequenceClassificationImpl(const BertOptions& o);
  /// -> logits (B, num_labels).
  torch::Tensor forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                        const torch::Tensor& attention_mask = {});
  const BertOptions& options() const { return o_; }
  BertModel bert{nullptr};

 private:
  BertOptions o_;
  torch::nn::Linear classifier{nullptr};
};
TORCH_MODULE(BertForSequenceClassification);

/// Hugging Face tensors -> ours: the tied copies (cls.predictions.decoder.weight/.bias) and
/// position_ids buffers dropped.
void bert_from_hf_tensors(std::map<std::string, torch::Tensor>& tensors);
/// Ours -> Hugging Face's: the tied decoder weight and bias written out as transformers
/// expects them.
void bert_to_hf_tensors(std::map<std::string, torch::Tensor>& tensors);

}  // namespace zoo::models
