#include "models/vit.h"

#include <cmath>

#include "models/entry_helpers.h"
#include "models/kernels/dropout.h"
#include "models/kernels/linear.h"
#include "models/kernels/softmax_rows.h"

namespace zoo::models {

void ViTOptions::validate() const {
  if (hidden_size % num_attention_heads != 0)
    throw Error(cat("config: model.hidden_size (", hidden_size, ") must be divisible by model.num_attention_heads (",
                    num_attention_heads, ")"));
  if (image_size % patch_size != 0)
    throw Error(cat("config: model.image_size (", image_size, ") must be divisible by model.patch_size (",
                    patch_size, ")"));
  if (shifted_patch_tokenization && patch_size < 2)
    throw Error(cat("config: model.shifted_patch_tokenization shifts by half a patch and needs model.patch_size >= 2, "
                    "got ", patch_size));
  if (!labels.empty() && static_cast<int64_t>(labels.size()) != num_labels)
    throw Error(cat("config: model.labels has ", labels.size(), " names but model.num_labels is ", num_labels));
}

// The blocks register their layers under ViT's Hugging Face names, in Hugging Face's order
// (layernorm_before, attention.attention.{query,key,value}, attention.output.dense,
// layernorm_after, intermediate.dense, output.dense).
ViTLayerImpl::ViTLayerImpl(const ViTOptions& o)
    : attention_block(*this, ResidualOptions(o.hidden_size)
                                 .eps(o.layer_norm_eps)
                                 .dropout(o.hidden_dropout_prob)
                                 .norm_name("layernorm_before")),
      attention(register_module("attention",
                                MultiHeadAttention(MultiHeadAttentionOptions(o.hidden_size, o.num_attention_heads)
                                                       .qkv_bias(o.qkv_bias)
                                                       .dropout(o.attention_probs_dropout_prob)
                                                       .learned_temperature(o.locality_self_attention)
                                                       .exclude_self(o.locality_self_attention)
                                                       .names("attention.query", "attention.key", "attention.value",
                                                              "output.dense")))),
      feed_forward_block(*this, ResidualOptions(o.hidden_size)
                                    .eps(o.layer_norm_eps)
                                    .dropout(o.hidden_dropout_prob)
                                    .norm_name("layernorm_after")),
      feed_forward(*this, FeedForwardOptions(o.hidden_size, o.intermediate_size)
                              .activation(o.hidden_act)
                              .fc1_name("intermediate.dense")
                              .fc2_name("output.dense")) {}

torch::Tensor ViTLayerImpl::forward(const torch::Tensor& x) {
  // Pre-norm, as document 004's TransformerEncoderLayer: x + Attn(LN(x)), then x + FF(LN(x)).
  auto h = attention_block(x, [&](const torch::Tensor& n) { return attention(n); });
  return feed_forward_block(h, [&](const torch::Tensor& n) { return feed_forward(n); });
}

ViTModelImpl::ViTModelImpl(const ViTOptions& o) : o_(o) {
  o.validate();
  auto emb = register_module("embeddings", std::make_shared<torch::nn::Module>());
  cls_token = emb->register_parameter("cls_token", torch::zeros({1, 1, o.hidden_size}));
  positions.emplace(*this, LearnedPositionsOptions(o.num_patches() + 1, o.hidden_size)
                               .name("embeddings.position_embeddings")
                               .as_parameter(true));
  auto patch = emb->register_module("patch_embeddings", std::make_shared<torch::nn::Module>());
  projection = patch->register_module(
      "projection",
      torch::nn::Conv2d(
          torch::nn::Conv2dOptions(o.projected_channels(), o.hidden_size, o.patch_size).stride(o.patch_size)));
  if (o.shifted_patch_tokenization) {
    const int64_t features = o.projected_channels() * o.patch_size * o.patch_size;
    patch_norm = patch->register_module(
        "layernorm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({features}).eps(o.layer_norm_eps)));
  }
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
  const int64_t p = o_.patch_size, g = o_.image_size / o_.patch_size, c = o_.projected_channels();
  const auto pixels = o_.shifted_patch_tokenization ? with_diagonal_shifts(pixel_values, p / 2) : pixel_values;
  auto patches = pixels.reshape({batch, c, g, p, g, p})
                     .permute({0, 2, 4, 1, 3, 5})
                     .reshape({batch, g * g, c * p * p});  // (B, P, c*p*p), row-major patches
  if (patch_norm) patches = patch_norm(patches);
  auto x = torch::nn::functional::linear(patches, projection->weight.view({o_.hidden_size, -1}),
                                         projection->bias);  // (B, P, H)
  x = (*positions)(torch::cat({cls_token.expand({batch, 1, o_.hidden_size}), x}, 1));  // (B, P+1, H)
  x = apply_dropout(x, o_.hidden_dropout_prob, is_training());
  for (auto& layer : *layers) {
    auto* block = layer->as<ViTLayer>();
    x = checkpointed(is_training(), x, [block](const torch::Tensor& in) { return block->forward(in); });
  }
  return layernorm(x);
}

torch::Tensor with_diagonal_shifts(const torch::Tensor& images, int64_t shift) {
  TORCH_CHECK(images.dim() == 4 && shift >= 1 && shift < images.size(2) && shift < images.size(3),
              "with_diagonal_shifts: images (B, C, H, W) and 1 <= shift < H, W, got ", images.sizes(), " and ", shift);
  const int64_t h = images.size(2), w = images.size(3), s2 = 2 * shift;
  auto padded = torch::nn::functional::pad(
      images, torch::nn::functional::PadFuncOptions({shift, shift, shift, shift}));  // (B, C, H+2s, W+2s)
  using torch::indexing::Slice;
  auto window = [&](int64_t top, int64_t left) {  // top, left in the padded frame: 0 moves the image down/right
    return padded.index({Slice(), Slice(), Slice(top, top + h), Slice(left, left + w)});
  };
  return torch::cat({images, window(0, 0), window(0, s2), window(s2, 0), window(s2, s2)}, 1);
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
  return apply_linear(classifier, hidden.select(1, 0));  // (B, num_labels)
}

torch::Tensor shift_images(const torch::Tensor& images, int64_t down, int64_t right, const std::vector<double>& fill) {
  TORCH_CHECK(images.dim() == 4, "shift_images: images (B, C, H, W), got ", images.sizes());
  const int64_t c = images.size(1), h = images.size(2), w = images.size(3);
  TORCH_CHECK(std::abs(down) < h && std::abs(right) < w, "shift_images: a shift of (", down, ", ", right,
              ") leaves nothing of a ", h, " x ", w, " image");
  TORCH_CHECK(fill.size() == 1 || static_cast<int64_t>(fill.size()) == c, "shift_images: ", fill.size(),
              " fill values for ", c, " channels");
  auto out = torch::tensor(fill, images.options()).view({1, -1, 1, 1}).expand(images.sizes()).contiguous();
  const int64_t rows = h - std::abs(down), cols = w - std::abs(right);
  out.narrow(2, std::max<int64_t>(down, 0), rows)
      .narrow(3, std::max<int64_t>(right, 0), cols)
      .copy_(images.narrow(2, std::max<int64_t>(-down, 0), rows).narrow(3, std::max<int64_t>(-right, 0), cols));
  return out;
}

torch::Tensor ViTForImageClassificationImpl::predict(const torch::Tensor& pixel_values, const TestTimeViews& views) {
  if (!views.mirror && views.shift == 0) return forward(pixel_values).to(torch::kFloat);
  std::vector<std::pair<int64_t, int64_t>> moves = {{0, 0}};  // (down, right)
  if (const int64_t s = views.shift; s > 0) moves.insert(moves.end(), {{-s, 0}, {s, 0}, {0, -s}, {0, s}});
  std::vector<torch::Tensor> log_probs;  // each view made just before its forward: one batch's activations at a time
  auto score = [&](const torch::Tensor& image) {
    log_probs.push_back(forward(image).to(torch::kFloat).log_softmax(-1));
  };
  for (const auto& [down, right] : moves) {
    const auto image = down == 0 && right == 0 ? pixel_values : shift_images(pixel_values, down, right, views.fill);
    score(image);
    if (views.mirror) score(image.flip({-1}));
  }
  return log_mean_of_distributions(log_probs);
}

std::vector<std::string> ViTForImageClassificationImpl::label_names() const {
  if (!o_.labels.empty()) return o_.labels;
  std::vector<std::string> names;
  for (int64_t i = 0; i < o_.num_labels; ++i) names.push_back(cat("LABEL_", i));
  return names;
}

// The registry entry (models/registry.h).
namespace {
json vit_from_hf(const json& hf) { return entry::with_labels_of_hf(entry::same_named_fields<ViTOptions>(hf, "vit"), hf); }

// Options of zoo's own (Lee et al. 2021) that Hugging Face's ViT lacks.
constexpr const char* kZooOnlyFields[] = {"shifted_patch_tokenization", "locality_self_attention"};

json vit_to_hf(const json& model, const std::string& architecture) {
  json hf = entry::with_hf_labels(model);
  for (const char* field : kZooOnlyFields) {
    if (model.value(field, false))
      throw Error(cat("a ViT with model.", field, " (zoo's own, Lee et al. 2021) has no Hugging Face "
                      "ViTForImageClassification form: its checkpoint runs in zoo only (zoo eval, classify, serve)"));
    hf.erase(field);
  }
  hf["architectures"] = {architecture};
  hf["encoder_stride"] = model.value("patch_size", 16);
  hf["torch_dtype"] = "float32";
  return hf;
}
}  // namespace

ModelEntry vit_entry() {
  ModelEntry e;
  e.model_type = "vit";
  e.default_task = "image_classification";
  e.resolve = [](const json& merged) { return entry::resolve_section<ViTOptions>(merged, "vit"); };
  e.describe = describe_options<ViTOptions>;
  e.from_hf = vit_from_hf;
  e.to_hf = vit_to_hf;
  e.architectures = {{"image_classification", "ViTForImageClassification"}};
  e.fact_keys = {{"labels", "labels"}};
  e.architecture_keys = {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size", "hidden_act",
                         "layer_norm_eps", "image_size", "patch_size", "num_channels", "qkv_bias"};
  e.architecture_keys.insert(e.architecture_keys.end(), std::begin(kZooOnlyFields), std::end(kZooOnlyFields));
  e.build = [](const json& section, const std::string&) {
    return ViTForImageClassification(read_options<ViTOptions>(section, "model", {"model_type"})).ptr();
  };
  return e;
}

}  // namespace zoo::models
