#include "models/bert_doc000.h"

#include <cmath>

#include "core/error.h"
#include "models/kernels/dropout.h"
#include "models/module_path.h"

namespace zoo::models {

Doc000BertImpl::Doc000BertImpl(const Doc000BertOptions& o) : o_(o) {
  token_emb = register_at(*this, "embedding.token_emb", torch::nn::Embedding(o.vocab_size, o.dim_inp));
  segment_emb = register_at(*this, "embedding.segment_emb", torch::nn::Embedding(o.vocab_size, o.dim_inp));
  embedding_norm = register_at(*this, "embedding.norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.dim_inp})));
  for (int64_t h = 0; h < o.attention_heads; ++h) {
    const std::string head = cat("encoder.attention.heads.", h, ".");
    q_.push_back(register_at(*this, head + "q", torch::nn::Linear(o.dim_inp, o.dim_out)));
    k_.push_back(register_at(*this, head + "k", torch::nn::Linear(o.dim_inp, o.dim_out)));
    v_.push_back(register_at(*this, head + "v", torch::nn::Linear(o.dim_inp, o.dim_out)));
  }
  attention_linear =
      register_at(*this, "encoder.attention.linear", torch::nn::Linear(o.dim_out * o.attention_heads, o.dim_inp));
  attention_norm = register_at(*this, "encoder.attention.norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.dim_inp})));
  ff1 = register_at(*this, "encoder.feed_forward.0", torch::nn::Linear(o.dim_inp, o.dim_out));
  ff2 = register_at(*this, "encoder.feed_forward.3", torch::nn::Linear(o.dim_out, o.dim_inp));
  encoder_norm = register_at(*this, "encoder.norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.dim_inp})));
  token_prediction = register_module("token_prediction_layer", torch::nn::Linear(o.dim_inp, o.vocab_size));
  classification = register_module("classification_layer", torch::nn::Linear(o.dim_inp, 2));
}

// JointEmbedding: token + segment (1 from T // 2 + 1 on) + the document's positions, then LayerNorm.
torch::Tensor Doc000BertImpl::embed(const torch::Tensor& ids) {
  const int64_t t = ids.size(1), dim = o_.dim_inp;
  auto opts = torch::TensorOptions().device(ids.device());
  auto pos = torch::arange(t, opts.dtype(torch::kLong)).unsqueeze(1).to(torch::kFloat);
  auto d = 2 * torch::arange(dim, opts.dtype(torch::kLong)).to(torch::kFloat) / static_cast<double>(dim);
  auto table = pos / torch::pow(1e4, d);  // (T, dim)
  table.slice(1, 0, dim, 2).sin_();
  table.slice(1, 1, dim, 2).cos_();
  auto segment = torch::zeros_like(ids);
  if (t / 2 + 1 < t) segment.slice(1, t / 2 + 1, t).fill_(1);
  return embedding_norm(token_emb(ids) + segment_emb(segment) + table.unsqueeze(0));
}

// MultiHeadAttention: every head the whole dim_out, scores scaled by sqrt(T); concatenated,
// projected back, LayerNorm (no residual).
torch::Tensor Doc000BertImpl::attend(const torch::Tensor& x, const torch::Tensor& mask) {
  const double scale = std::sqrt(static_cast<double>(x.size(1)));
  std::vector<torch::Tensor> heads;
  for (size_t h = 0; h < q_.size(); ++h) {
    auto scores = torch::bmm(q_[h](x), k_[h](x).transpose(1, 2)) / scale;
    if (mask.defined()) scores = scores.masked_fill(mask, -1e9);
    heads.push_back(torch::bmm(scores.softmax(-1), v_[h](x)));
  }
  // fp32 into the LayerNorm: under CPU bf16 autocast the projection is bf16, and LibTorch 1.x's
  // CPU layer_norm refuses a bf16 input with fp32 weights (a no-op in fp32 and on CUDA, where
  // autocast runs layer_norm in fp32 anyway).
  return attention_norm(attention_linear(torch::cat(heads, -1)).to(torch::kFloat));
}

std::pair<torch::Tensor, torch::Tensor> Doc000BertImpl::forward(const torch::Tensor& input_ids,
                                                                const torch::Tensor& attention_mask) {
  auto encoded = encode(input_ids, attention_mask);
  return {token_log_probs(encoded), nsp_logits(encoded)};
}

torch::Tensor Doc000BertImpl::encode(const torch::Tensor& input_ids, const torch::Tensor& attention_mask) {
  auto context = attend(embed(input_ids), attention_mask);
  auto h = ff1(context);  // Linear, Dropout, GELU, Linear, Dropout: the document's order
  h = apply_dropout(h, o_.dropout, is_training());
  h = ff2(torch::gelu(h));
  h = apply_dropout(h, o_.dropout, is_training());
  return encoder_norm(h.to(torch::kFloat));  // no residual, as the document; fp32 as in attend()
}

}  // namespace zoo::models
