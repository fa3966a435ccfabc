#pragma once
// Document 000's own BERT (~l.1546-1700: JointEmbedding, AttentionHead, MultiHeadAttention,
// Encoder, BERT), reproduced exactly for parity with its PyTorch code, defects included (see
// ../shared/seeds/README.md): each attention head projects to the full dim_out and scales its
// scores by sqrt(sequence length), the encoder has no residual connections, the segment
// embedding has a row per vocabulary word, the segment split is at T // 2 + 1, and the
// positions are sin/cos of p / 10000^(2d/dim) for every column d. zoo's standard BERT is
// models/bert.h. Registered names are the document's:
//
//   embedding.{token_emb,segment_emb,norm}
//   encoder.attention.heads.N.{q,k,v}, encoder.attention.linear, encoder.attention.norm
//   encoder.feed_forward.0 (dim_inp -> dim_out), encoder.feed_forward.3 (dim_out -> dim_inp)
//   encoder.norm, token_prediction_layer, classification_layer
#include <torch/torch.h>

namespace zoo::models {

struct Doc000BertOptions {
  int64_t vocab_size = 0;
  int64_t dim_inp = 64;
  int64_t dim_out = 36;
  int64_t attention_heads = 4;
  double dropout = 0.1;
};

/// The document's BERT: input ids (B, T), attention_mask (B, 1, T) true at [PAD] keys ->
/// {MLM log-probabilities (B, T, V), NSP logits of the first token (B, 2)}.
class Doc000BertImpl : public torch::nn::Module {
 public:
  explicit Doc000BertImpl(const Doc000BertOptions& o);
  std::pair<torch::Tensor, torch::Tensor> forward(const torch::Tensor& input_ids, const torch::Tensor& attention_mask);
  /// The encoder's output (B, T, dim_inp), before the two heads.
  torch::Tensor encode(const torch::Tensor& input_ids, const torch::Tensor& attention_mask);
  /// The heads on it: MLM log-probabilities of the rows of `hidden` (..., dim_inp) -> (..., V),
  /// and NSP logits of the first tokens of `encoded` (B, T, dim_inp) -> (B, 2). Training needs
  /// the MLM scores of the selected tokens only (the document's loss zeroes the others).
  torch::Tensor token_log_probs(const torch::Tensor& hidden) { return token_prediction(hidden).log_softmax(-1); }
  torch::Tensor nsp_logits(const torch::Tensor& encoded) { return classification(encoded.select(1, 0)); }

 private:
  torch::Tensor embed(const torch::Tensor& ids);
  torch::Tensor attend(const torch::Tensor& x, const torch::Tensor& mask);
  Doc000BertOptions o_;
  torch::nn::Embedding token_emb{nullptr}, segment_emb{nullptr};
  torch::nn::LayerNorm embedding_norm{nullptr}, attention_norm{nullptr}, encoder_norm{nullptr};
  std::vector<torch::nn::Linear> q_, k_, v_;
  torch::nn::Linear attention_linear{nullptr}, ff1{nullptr}, ff2{nullptr}, token_prediction{nullptr},
      classification{nullptr};
};
TORCH_MODULE(Doc000Bert);

}  // namespace zoo::models
