#include "models/bert_electra.h"

#include <algorithm>

#include <ATen/CPUGeneratorImpl.h>

#include "models/kernels/gelu.h"
#include "models/module_path.h"

namespace zoo::models {

BertOptions electra_generator_options(const BertOptions& o) {
  BertOptions g = o;
  g.hidden_size = o.generator_hidden_size;
  g.num_attention_heads = std::max<int64_t>(1, o.generator_hidden_size / 64);
  g.intermediate_size = 4 * o.generator_hidden_size;
  return g;
}

BertForReplacedTokenDetectionImpl::BertForReplacedTokenDetectionImpl(const BertOptions& o) : o_(o) {
  const BertOptions g = electra_generator_options(o);
  g.validate();
  bert = register_module("bert", BertModel(o));
  discriminator_dense = register_at(*this, "discriminator_predictions.dense", torch::nn::Linear(o.hidden_size, o.hidden_size));
  discriminator_prediction =
      register_at(*this, "discriminator_predictions.dense_prediction", torch::nn::Linear(o.hidden_size, 1));
  generator_project = register_at(*this, "generator.embeddings_project", torch::nn::Linear(o.hidden_size, g.hidden_size));
  for (int64_t i = 0; i < g.num_hidden_layers; ++i) generator_layers->push_back(BertLayer(g));
  register_at(*this, "generator.encoder.layer", generator_layers);
  generator_dense = register_at(*this, "generator_predictions.dense", torch::nn::Linear(g.hidden_size, o.hidden_size));
  generator_norm = register_at(*this, "generator_predictions.LayerNorm",
                               torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size}).eps(o.layer_norm_eps)));
  generator_bias = register_parameter_at(*this, "generator_lm_head.bias", torch::zeros({o.vocab_size}));
  bert->init_weights(*this);
}

torch::Tensor BertForReplacedTokenDetectionImpl::generate(const torch::Tensor& input_ids, const torch::Tensor& selected,
                                                          const torch::Tensor& token_type_ids,
                                                          const torch::Tensor& attention_mask, int64_t position_offset) {
  auto embedded = bert->embed(input_ids, token_type_ids, position_offset);
  // The layers take what the embedding layer gives (fp32 under autocast), as the model's own do.
  auto h = bert->encode(*generator_layers, generator_project(embedded).to(embedded.scalar_type()), attention_mask);
  auto t = activation(o_.hidden_act, generator_dense(h.index({selected})));
  t = generator_norm(t.to(embedded.scalar_type()));  // under autocast the dense gives bf16; the norm's weights are fp32
  return torch::nn::functional::linear(t, bert->word_embeddings->weight, generator_bias);
}

torch::Tensor BertForReplacedTokenDetectionImpl::discriminate(const torch::Tensor& input_ids,
                                                              const torch::Tensor& token_type_ids,
                                                              const torch::Tensor& attention_mask,
                                                              int64_t position_offset) {
  auto h = bert(input_ids, token_type_ids, attention_mask, position_offset);
  return discriminator_prediction(activation(o_.hidden_act, discriminator_dense(h))).squeeze(-1);
}

torch::Tensor sample_tokens(const torch::Tensor& logits, uint64_t seed) {
  torch::NoGradGuard no_grad;
  auto generator = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto uniforms = torch::rand({logits.size(0), 1}, generator, torch::kFloat).to(logits.device());
  auto cdf = torch::softmax(logits.to(torch::kFloat), -1).cumsum(-1);
  return torch::searchsorted(cdf, uniforms).squeeze(-1).clamp_max(logits.size(1) - 1);  // the sum may end below 1
}

ReplacedTokenOutput BertForReplacedTokenDetectionImpl::forward(const torch::Tensor& input_ids,
                                                                const torch::Tensor& originals,
                                                                const torch::Tensor& selected, uint64_t seed,
                                                                const torch::Tensor& token_type_ids,
                                                                const torch::Tensor& attention_mask,
                                                                int64_t position_offset) {
  ReplacedTokenOutput out;
  out.generator_logits = generate(input_ids, selected, token_type_ids, attention_mask, position_offset);
  auto corrupted = originals.index_put({selected}, sample_tokens(out.generator_logits, seed));
  out.replaced = corrupted.ne(originals);
  out.discriminator_logits = discriminate(corrupted, token_type_ids, attention_mask, position_offset);
  return out;
}

}  // namespace zoo::models
