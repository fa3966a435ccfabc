#pragma once
// Vision Transformer (Dosovitskiy et al. 2020), as described in document 000 (patches,
// linear projection, class token, position embedding, encoder, MLP head on the class
// token) with document 004's pre-norm encoder layer, laid out exactly like Hugging Face's
// ViTForImageClassification so that its model.safetensors + config.json load unchanged
// (two options of zoo's own, for small data sets, add names that layout lacks:
// embeddings.patch_embeddings.layernorm and attention.temperature):
//
//   vit.embeddings.cls_token                        (1, 1, H)
//   vit.embeddings.position_embeddings              (1, P+1, H)
//   vit.embeddings.patch_embeddings.projection      Conv2d(C, H, patch, stride patch)
//   vit.encoder.layer.N.layernorm_before / layernorm_after
//   vit.encoder.layer.N.attention.attention.{query,key,value}
//   vit.encoder.layer.N.attention.output.dense
//   vit.encoder.layer.N.intermediate.dense          H -> I
//   vit.encoder.layer.N.output.dense                I -> H
//   vit.layernorm                                   final LayerNorm
//   classifier                                      H -> num_labels
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/options.h"
#include "core/test_time_views.h"
#include "models/attention.h"
#include "models/blocks.h"
#include "models/recompute.h"

namespace zoo::models {

/// Hugging Face ViTConfig field names and defaults (google/vit-base-patch16-224).
struct ViTOptions {
  int64_t hidden_size = 768;
  int64_t num_hidden_layers = 12;
  int64_t num_attention_heads = 12;
  int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.0;
  double attention_probs_dropout_prob = 0.0;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  int64_t image_size = 224;
  int64_t patch_size = 16;
  int64_t num_channels = 3;
  bool qkv_bias = true;
  int64_t num_labels = 2;
  /// Class names by index (Hugging Face's id2label); empty means "LABEL_i".
  std::vector<std::string> labels;
  /// zoo's own (no Hugging Face form): Lee et al. 2021's two changes for small data sets.
  bool shifted_patch_tokenization = false;
  bool locality_self_attention = false;

  template <class V>
  void fields(V& v) {
    v("hidden_size", hidden_size, "width of the token vectors", at_least(1));
    v("num_hidden_layers", num_hidden_layers, "number of encoder layers", at_least(1));
    v("num_attention_heads", num_attention_heads, "attention heads (must divide hidden_size)", at_least(1));
    v("intermediate_size", intermediate_size, "width of the feed-forward layer", at_least(1));
    v("hidden_act", hidden_act, "feed-forward activation", one_of({"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu"}));
    v("hidden_dropout_prob", hidden_dropout_prob, "dropout on embeddings and sublayer outputs", between(0, 1));
    v("attention_probs_dropout_prob", attention_probs_dropout_prob, "dropout on attention weights", between(0, 1));
    v("initializer_range", initializer_range, "std of the truncated-normal init", between(0, 10));
    v("layer_norm_eps", layer_norm_eps, "LayerNorm epsilon", between(0, 1));
    v("image_size", image_size, "input images are image_size x image_size", at_least(1));
    v("patch_size", patch_size, "square patch side (must divide image_size)", at_least(1));
    v("num_channels", num_channels, "1 for grey, 3 for RGB", between(1, 4));
    v("qkv_bias", qkv_bias, "bias on query/key/value projections");
    v("num_labels", num_labels, "number of classes", at_least(1));
    v("labels", labels, "class names by index (id2label)");
    v("shifted_patch_tokenization", shifted_patch_tokenization,
      "each patch also reads the image shifted by half a patch in the four diagonal directions, layer-normalised "
      "before the projection (Lee et al. 2021; no Hugging Face form)");
    v("locality_self_attention", locality_self_attention,
      "each token's attention skips its own key, with a learned temperature per layer (Lee et al. 2021; no "
      "Hugging Face form)");
  }
  /// Cross-field checks (divisibility, label count); throws zoo::Error.
  void validate() const;
  int64_t num_patches() const { return (image_size / patch_size) * (image_size / patch_size); }
  /// Channels the patch projection reads: num_channels, five times over with shifted patches.
  int64_t projected_channels() const { return shifted_patch_tokenization ? 5 * num_channels : num_channels; }
};

/// Shifted Patch Tokenization's input (Lee et al. 2021): the images (B, C, S, S) followed by
/// four copies moved `shift` pixels along each diagonal, zeros where they leave the frame:
/// (B, 5C, S, S), the copies in the order down-right, down-left, up-right, up-left.
torch::Tensor with_diagonal_shifts(const torch::Tensor& images, int64_t shift);

/// Document 004's pre-norm encoder layer, composed of the shared blocks under ViT's names.
class ViTLayerImpl : public torch::nn::Module {
 public:
  explicit ViTLayerImpl(const ViTOptions& o);
  torch::Tensor forward(const torch::Tensor& x);  // (B, T, H) -> (B, T, H)

 private:
  Residual attention_block;  // layernorm_before
  MultiHeadAttention attention{nullptr};
  Residual feed_forward_block;  // layernorm_after
  FeedForward feed_forward;
};
TORCH_MODULE(ViTLayer);

class ViTModelImpl : public torch::nn::Module, public GradientCheckpointing {
 public:
  explicit ViTModelImpl(const ViTOptions& o);
  /// pixel_values (B, C, S, S) float -> last hidden state (B, P+1, H), after final LayerNorm.
  torch::Tensor forward(const torch::Tensor& pixel_values);

 private:
  ViTOptions o_;
  torch::Tensor cls_token;
  torch::nn::Conv2d projection{nullptr};
  torch::nn::LayerNorm patch_norm{nullptr};  // shifted_patch_tokenization only
  std::optional<LearnedPositions> positions;  // embeddings.position_embeddings, after cls_token
  torch::nn::ModuleList layers;
  torch::nn::LayerNorm layernorm{nullptr};
};
TORCH_MODULE(ViTModel);

/// `images` (B, C, H, W) moved `down` and `right` pixels (negative: up, left), `fill[c]` (one
/// value for all channels, or one per channel) where they leave the frame.
torch::Tensor shift_images(const torch::Tensor& images, int64_t down, int64_t right, const std::vector<double>& fill);

class ViTForImageClassificationImpl : public torch::nn::Module {
 public:
  explicit ViTForImageClassificationImpl(const ViTOptions& o);
  /// pixel_values (B, C, S, S) -> logits (B, num_labels), from the class token.
  torch::Tensor forward(const torch::Tensor& pixel_values);
  /// Inference logits in fp32. With test-time views, the log of the mean of the probabilities
  /// of every view (its softmax is that mean).
  torch::Tensor predict(const torch::Tensor& pixel_values, const TestTimeViews& views = {});
  /// Class names by index (config labels, else "LABEL_i" as Hugging Face names them).
  std::vector<std::string> label_names() const;
  const ViTOptions& options() const { return o_; }
  /// Hugging Face init (truncated normal, zero biases, LayerNorm 1/0).
  void reset_parameters();

 private:
  ViTOptions o_;
  ViTModel vit{nullptr};
  torch::nn::Linear classifier{nullptr};
};
TORCH_MODULE(ViTForImageClassification);

}  // namespace zoo::models
