#pragma once
// The Transformer's other blocks: the position-wise feed-forward network, the residual
// sub-layer with its LayerNorm before (pre-norm) or after (post-norm), and position
// encodings (sinusoidal, learned).
//
// The feed-forward and residual blocks register their layers into the model's own module
// (the `owner`) at dotted paths chosen by the family, because the families scatter them:
// ViT/BERT name the feed-forward's layers intermediate.dense and output.dense, Marian fc1 and
// fc2; the residual's LayerNorm is ViT's layernorm_before, BERT's attention.output.LayerNorm,
// Marian's self_attn_layer_norm. A block is then a small value the layer keeps, and the
// module tree stays the checkpoint's name tree.
#include <string>

#include <torch/torch.h>

namespace zoo::models {

struct FeedForwardOptions {
  FeedForwardOptions(int64_t hidden_size, int64_t intermediate_size)
      : hidden_size_(hidden_size), intermediate_size_(intermediate_size) {}
  TORCH_ARG(int64_t, hidden_size);
  TORCH_ARG(int64_t, intermediate_size);
  /// Hugging Face activation name (see activation_names())
  TORCH_ARG(std::string, activation) = "gelu";
  /// dropout after the activation (Marian's activation_dropout)
  TORCH_ARG(double, activation_dropout) = 0.0;
  /// dropout on the output (document 004's FeedForward; 0 when the residual block drops)
  TORCH_ARG(double, dropout) = 0.0;
  /// dotted paths of the two layers in the owner
  TORCH_ARG(std::string, fc1_name) = "fc1";
  TORCH_ARG(std::string, fc2_name) = "fc2";
};

/// dense -> activation -> dense (document 004's FeedForward), (B, T, H) -> (B, T, H).
class FeedForward {
 public:
  FeedForward(torch::nn::Module& owner, const FeedForwardOptions& options);
  torch::Tensor operator()(const torch::Tensor& x);

  FeedForwardOptions options;
  torch::nn::Linear fc1{nullptr}, fc2{nullptr};
};

struct ResidualOptions {
  explicit ResidualOptions(int64_t hidden_size) : hidden_size_(hidden_size) {}
  TORCH_ARG(int64_t, hidden_size);
  /// true: x + drop(f(LN(x))) (document 004, ViT, GPT-2); false: LN(x + drop(f(x))) (the
  /// original Transformer, BERT, Marian)
  TORCH_ARG(bool, pre_norm) = true;
  TORCH_ARG(double, eps) = 1e-5;
  /// dropout on the sub-layer's output (training only)
  TORCH_ARG(double, dropout) = 0.0;
  /// dotted path of the LayerNorm in the owner
  TORCH_ARG(std::string, norm_name) = "layer_norm";
};

/// A sub-layer f with its residual connection and LayerNorm.
class Residual {
 public:
  Residual(torch::nn::Module& owner, const ResidualOptions& options);

  template <class F>
  torch::Tensor operator()(const torch::Tensor& x, F&& f) {
    if (options.pre_norm()) return x + drop(f(norm(x)));
    return norm(x + drop(f(x)));
  }

  ResidualOptions options;
  torch::nn::LayerNorm norm{nullptr};

 private:
  torch::Tensor drop(const torch::Tensor& x) const;
};

/// The sinusoidal table of "Attention Is All You Need" (document 002's PositionalEncoding):
/// row p, column j is sin(p / 10000^(2i/dim)) for j = 2i and cos(...) for j = 2i+1.
/// `interleaved` false puts all sines first, then all cosines (Marian's and fairseq's layout).
torch::Tensor sinusoidal_positions(int64_t max_positions, int64_t dim, bool interleaved = true);

/// x + the sinusoidal table; the table is the buffer "weight" (max_positions, dim), in the
/// checkpoint as Marian's embed_positions.weight is.
class SinusoidalPositionsImpl : public torch::nn::Module {
 public:
  SinusoidalPositionsImpl(int64_t max_positions, int64_t dim, bool interleaved = true);
  /// x (B, T, dim) + rows offset .. offset+T-1 (offset: steps already decoded).
  torch::Tensor forward(const torch::Tensor& x, int64_t offset = 0);
  torch::Tensor weight;
};
TORCH_MODULE(SinusoidalPositions);

struct LearnedPositionsOptions {
  LearnedPositionsOptions(int64_t max_positions, int64_t dim) : max_positions_(max_positions), dim_(dim) {}
  TORCH_ARG(int64_t, max_positions);
  TORCH_ARG(int64_t, dim);
  /// dotted path in the owner: of an Embedding (BERT's embeddings.position_embeddings, GPT-2's
  /// wpe), or with `as_parameter` of a (1, max_positions, dim) parameter (ViT's
  /// embeddings.position_embeddings)
  TORCH_ARG(std::string, name) = "position_embeddings";
  TORCH_ARG(bool, as_parameter) = false;
};

/// x + a learned position table (document 004's Embeddings, ViT's position embeddings).
class LearnedPositions {
 public:
  LearnedPositions(torch::nn::Module& owner, const LearnedPositionsOptions& options);
  /// x (B, T, dim) + rows offset .. offset+T-1.
  torch::Tensor operator()(const torch::Tensor& x, int64_t offset = 0) const;
  /// x (B, T, dim) + the rows `positions` (B, T) int64 name (each sequence its own positions:
  /// a left-padded batch). An Embedding's table only.
  torch::Tensor operator()(const torch::Tensor& x, const torch::Tensor& positions) const;

  LearnedPositionsOptions options;
  torch::Tensor weight;  // (max_positions, dim), or (1, max_positions, dim) as a parameter
};

/// Hugging Face's init: weights ~ N(0, std) truncated at 2 std, biases 0, LayerNorm (1, 0),
/// embeddings N(0, std).
void init_weights_hf(torch::nn::Module& module, double std);

}  // namespace zoo::models
