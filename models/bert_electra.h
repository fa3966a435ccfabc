#pragma once
// ELECTRA's replaced-token detection (Clark et al. 2020) as a BERT pretraining head
// (model.pretraining_head "electra"): a small masked-language-model generator fills the
// masked positions in with tokens sampled from its own predictions, and the BERT (the
// discriminator) learns, at every position, whether the token there is the original. The
// discriminator learns from every token instead of the 15% that MLM scores, which is what
// makes ELECTRA several times cheaper than MLM at small budgets. Registered names:
//
//   bert.*                                          the discriminator: fine-tuning starts here
//   discriminator_predictions.dense, .dense_prediction   the replaced-or-not head (as Hugging
//                                                   Face's ElectraForPreTraining)
//   generator.embeddings_project                    hidden_size -> generator_hidden_size
//   generator.encoder.layer.N.*                     BertLayers generator_hidden_size wide
//   generator_predictions.dense, .LayerNorm         back to hidden_size (ElectraGeneratorPredictions)
//   generator_lm_head.bias                          the decoder is bert's word embedding, tied
//
// The generator shares the discriminator's embedding layer (ELECTRA's tied embeddings), so
// the word vectors learn from the generator's softmax over the whole vocabulary too.
#include <torch/torch.h>

#include "models/bert.h"

namespace zoo::models {

struct ReplacedTokenOutput {
  torch::Tensor generator_logits;      // (N, V): the generator's scores at the N masked positions
  torch::Tensor discriminator_logits;  // (B, T): > 0 where the discriminator says "replaced"
  torch::Tensor replaced;              // (B, T) bool: where the sampled token differs from the original
};

class BertForReplacedTokenDetectionImpl : public torch::nn::Module {
 public:
  explicit BertForReplacedTokenDetectionImpl(const BertOptions& o);
  /// input_ids (B, T) with the selected positions masked, originals (B, T) the uncorrupted
  /// tokens, selected (B, T) bool the positions the generator fills in. The generator's
  /// samples (from the softmax of its scores, by inverse CDF from uniforms of a CPU generator
  /// seeded with `seed`: the same on any device and on a resumed run; no gradient flows
  /// through them) replace the selected tokens of `originals` in the discriminator's input.
  ReplacedTokenOutput forward(const torch::Tensor& input_ids, const torch::Tensor& originals,
                              const torch::Tensor& selected, uint64_t seed, const torch::Tensor& token_type_ids = {},
                              const torch::Tensor& attention_mask = {}, int64_t position_offset = 0);
  /// The discriminator's replaced-or-not scores for `input_ids` as they are: (B, T).
  torch::Tensor discriminate(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids = {},
                             const torch::Tensor& attention_mask = {}, int64_t position_offset = 0);
  BertModel bert{nullptr};

 private:
  /// The generator's scores at the selected positions: (N, V).
  torch::Tensor generate(const torch::Tensor& input_ids, const torch::Tensor& selected,
                         const torch::Tensor& token_type_ids, const torch::Tensor& attention_mask,
                         int64_t position_offset);

  BertOptions o_;
  torch::nn::Linear discriminator_dense{nullptr}, discriminator_prediction{nullptr};
  torch::nn::Linear generator_project{nullptr}, generator_dense{nullptr};
  torch::nn::LayerNorm generator_norm{nullptr};
  torch::nn::ModuleList generator_layers;
  torch::Tensor generator_bias;
};
TORCH_MODULE(BertForReplacedTokenDetection);

/// The generator's options: `o` at generator_hidden_size wide, one head per 64 (at least
/// one), feed-forward four times as wide.
BertOptions electra_generator_options(const BertOptions& o);

/// One token per row of `logits` (N, V), drawn from softmax(logits) with uniforms from a CPU
/// generator seeded with `seed` -> (N,) int64 on the logits' device.
torch::Tensor sample_tokens(const torch::Tensor& logits, uint64_t seed);

}  // namespace zoo::models
