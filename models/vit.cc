#include "models/vit.h"

#include "models/layers.h"

namespace zoo::models {

void ViTOptions::validate() const {
  if (hidden_size % num_attention_heads != 0)
    throw Error(cat("config: model.hidden_size (", hidden_size, ") must be divisible by model.num_attention_heads (",
                    num_attention_heads, ")"));
  if (image_size % patch_size != 0)
    throw Error(cat("config: model.image_size (", image_size, ") must be divisible by model.patch_size (",
                    patch_size, ")"));
  if (!labels.empty() && static_cast<int64_t>(labels.size()) != num_labels)
    throw Error(cat("config: model.labels has ", labels.size(), " names but model.num_labels is ", num_labels));
}

// Submodule names are the Hugging Face checkpoint names; nested holders give the dotted
// paths (attention.attention.query, attention.output.dense, ...).
ViTLayerImpl::ViTLayerImpl(const ViTOptions& o) : o_(o) {
  const auto ln = torch::nn::LayerNormOptions({o.hidden_size}).eps(o.layer_norm_eps);
  layernorm_before = register_module("layernorm_before", torch::nn::LayerNorm(ln));
  auto attention = register_module("attention", std::make_shared<torch::nn::Module>());
  auto self = attention->register_module("attention", std::make_shared<torch::nn::Module>());
  auto qkv = torch::nn::LinearOptions(o.hidden_size, o.hidden_size).bias(o.qkv_bias);
  query = self->register_module("query", torch::nn::Linear(qkv));
  key = self->register_module("key", torch::nn::Linear(qkv));
  value = self->register_module("value", torch::nn::Linear(qkv));
  auto self_out = attention->register_module("output", std::make_shared<torch::nn::Module>());
  attn_out = self_out->register_module("dense", torch::nn::Linear(o.hidden_size, o.hidden_size));
  layernorm_after = register_module("layernorm_after", torch::nn::LayerNorm(ln));
  auto inter = register_module("intermediate", std::make_shared<torch::nn::Module>());
  intermediate = inter->register_module("dense", torch::nn::Linear(o.hidden_size, o.intermediate_size));
  auto out = register_module("output", std::make_shared<torch::nn::Module>());
  output = out->register_module("dense", torch::nn::Linear(o.intermediate_size, o.hidden_size));
  dropout = register_module("dropout", torch::nn::Dropout(o.hidden_dropout_prob));
}

torch::Tensor ViTLayerImpl::forward(torch::Tensor x) {
  // Pre-norm, as document 004's TransformerEncoderLayer: x + Attn(LN(x)), x + FF(LN(x)).
  auto h = layernorm_before(x);  // (B, T, H)
  // One matrix product for q, k and v: the three projections stay separate parameters
  // (checkpoint names) but run as a single GEMM.
  auto w = torch::cat({query->weight, key->weight, value->weight}, 0);  // (3H, H)
  auto b = o_.qkv_bias ? torch::cat({query->bias, key->bias, value->bias}, 0) : torch::Tensor();
  auto qkv = torch::nn::functional::linear(h, w, b).chunk(3, -1);
  const int64_t heads = o_.num_attention_heads;
  auto ctx = scaled_dot_product_attention(split_heads(qkv[0], heads), split_heads(qkv[1], heads),
                                          split_heads(qkv[2], heads), torch::Tensor(),
                                          o_.attention_probs_dropout_prob, is_training());
  x = x + dropout(attn_out(merge_heads(ctx)));
  h = activation(o_.hidden_act, intermediate(layernorm_after(x)));  // (B, T, I)
  return x + dropout(output(h));
}

ViTModelImpl::ViTModelImpl(const ViTOptions& o) : o_(o) {
  o.validate();
  auto emb = register_module("embeddings", std::make_shared<torch::nn::Module>());
  cls_token = emb->register_parameter("cls_token", torch::zeros({1, 1, o.hidden_size}));
  position_embeddings =
      emb->register_parameter("position_embeddings", torch::zeros({1, o.num_patches() + 1, o.hidden_size}));
  auto patch = emb->register_module("patch_embeddings", std::make_shared<torch::nn::Module>());
  projection = patch->register_module(
      "projection",
      torch::nn::Conv2d(torch::nn::Conv2dOptions(o.num_channels, o.hidden_size, o.patch_size).stride(o.patch_size)));
  dropout = register_module("dropout", torch::nn::Dropout(o.hidden_dropout_prob));
  auto encoder = register_module("encoder", std::make_shared<torch::nn::Module>());
  for (int64_t i = 0; i < o.num_hidden_layers; ++i) layers->push_back(ViTLayer(o));
  encoder->register_module("layer", layers);
  layernorm = register_module(
      "layernorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size}).eps(o.layer_norm_eps)));
}

torch::Tensor ViTModelImpl::forward(const torch::Tensor& pixel_values) {
  TORCH_CHECK(pixel_values.dim() == 4 && pixel_values.size(1) == o_.num_channels &&
                  pixel_values.size(2) == o_.image_size && pixel_values.size(3) == o_.image_size,
              "ViT expects pixel_values of shape (B, ", o_.num_channels, ", ", o_.image_size, ", ", o_.image_size,
              "), got ", pixel_values.sizes());
  const int64_t batch = pixel_values.size(0);

  // The patch convolution (kernel = stride = patch) as one matrix product over the patches:
  // the same arithmetic, without a convolution kernel (oneDNN's cannot run inside the
  // trainer's per-core slices, and LibTorch's fallback is slower than a GEMM).
  const int64_t p = o_.patch_size, g = o_.image_size / o_.patch_size;
  auto patches = pixel_values.reshape({batch, o_.num_channels, g, p, g, p})
                     .permute({0, 2, 4, 1, 3, 5})
                     .reshape({batch, g * g, o_.num_channels * p * p});  // (B, P, C*p*p), row-major patches
  auto x = torch::nn::functional::linear(patches, projection->weight.view({o_.hidden_size, -1}),
                                         projection->bias);  // (B, P, H)
  x = torch::cat({cls_token.expand({batch, 1, o_.hidden_size}), x}, 1) + position_embeddings;  // (B, P+1, H)
  x = dropout(x);
  for (auto& layer : *layers) x = layer->as<ViTLayer>()->forward(x);
  return layernorm(x);
}

ViTForImageClassificationImpl::ViTForImageClassificationImpl(const ViTOptions& o) : o_(o) {
  vit = register_module("vit", ViTModel(o));
  classifier = register_module("classifier", torch::nn::Linear(o.hidden_size, o.num_labels));
  reset_parameters();
}

void ViTForImageClassificationImpl::reset_parameters() {
  init_weights_hf(*this, o_.initializer_range);
  torch::NoGradGuard no_grad;
  for (auto& p : named_parameters()) {
    if (p.key() == "vit.embeddings.cls_token" || p.key() == "vit.embeddings.position_embeddings") {
      p.value().normal_(0.0, o_.initializer_range).clamp_(-2 * o_.initializer_range, 2 * o_.initializer_range);
    }
  }
}

torch::Tensor ViTForImageClassificationImpl::forward(const torch::Tensor& pixel_values) {
  auto hidden = vit(pixel_values);                     // (B, P+1, H)
  return classifier(hidden.select(1, 0));              // (B, num_labels)
}

}  // namespace zoo::models
