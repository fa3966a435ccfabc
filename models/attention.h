#pragma once
// Multi-head attention (Vaswani et al. 2017; document 004's MultiHeadAttention, document
// 003's batch-first MultiheadAttention) for self- and cross-attention, with padding and
// causal masks and a key/value cache for decoding step by step. Every model family
// registers it under its own name and gives the four projections their Hugging Face names:
//
//   ViT      attention  + attention.query, attention.key, attention.value, output.dense
//   BERT     attention  + self.query, self.key, self.value, output.dense
//   Marian   self_attn / encoder_attn + q_proj, k_proj, v_proj, out_proj
//
// The query, key and value weights (and biases) are three parameters, each under its own
// name (checkpoints, optimizer state), laid out as adjacent rows of one buffer, so that the
// three projections run as one matrix product without copying the weights together.
#include <string>

#include <torch/torch.h>

namespace zoo::models {

struct MultiHeadAttentionOptions {
  MultiHeadAttentionOptions(int64_t embed_dim, int64_t num_heads) : embed_dim_(embed_dim), num_heads_(num_heads) {}
  /// width of the queries, keys, values and output
  TORCH_ARG(int64_t, embed_dim);
  /// number of heads (must divide embed_dim)
  TORCH_ARG(int64_t, num_heads);
  /// bias on the query/key/value projections (ViT's qkv_bias)
  TORCH_ARG(bool, qkv_bias) = true;
  /// dropout on the attention probabilities (training only)
  TORCH_ARG(double, dropout) = 0.0;
  /// each query sees only itself and earlier positions (decoder self-attention)
  TORCH_ARG(bool, causal) = false;
  /// dotted names of the projections, relative to this module
  TORCH_ARG(std::string, query_name) = "q_proj";
  TORCH_ARG(std::string, key_name) = "k_proj";
  TORCH_ARG(std::string, value_name) = "v_proj";
  TORCH_ARG(std::string, output_name) = "out_proj";
  /// when set, one projection to 3 * embed_dim under this name holds the query, key and
  /// value rows in that order (GPT-2's attn.c_attn) instead of three (self-attention only)
  TORCH_ARG(std::string, fused_qkv_name) = "";
  /// Lee et al. 2021's Locality Self-Attention, the two halves: a learned temperature (the
  /// parameter `temperature`, shape (1), first sqrt(head_dim)) divides the scores instead of
  /// the fixed sqrt(head_dim) ...
  TORCH_ARG(bool, learned_temperature) = false;
  /// ... and each query skips its own key (self-attention over the whole sequence, no cache)
  TORCH_ARG(bool, exclude_self) = false;

 public:
  /// The four names at once: names("self.query", "self.key", "self.value", "output.dense").
  MultiHeadAttentionOptions& names(std::string q, std::string k, std::string v, std::string out);
};

/// Which keys each query may attend to; both parts optional, combined when both are given.
struct AttentionMask {
  AttentionMask() = default;
  AttentionMask(torch::Tensor key_padding, torch::Tensor additive = {})  // NOLINT: implicit on purpose
      : key_padding(std::move(key_padding)), additive(std::move(additive)) {}
  /// (B, Tk) bool or 0/1, true = attend (Hugging Face's attention_mask), or (B, Tq, Tk) for
  /// a rule per query. With a cache, Tk counts the cached keys too.
  torch::Tensor key_padding;
  /// Added to the scores, broadcastable to (B, heads, Tq, Tk): 0 = attend, very negative = not.
  torch::Tensor additive;
};

/// Keys and values of the steps decoded so far, (B, heads, T, head_dim) each. The caller owns
/// one per layer and attention module for the whole decoding and passes it to every step.
/// Self-attention appends each step in place where the tensors have room (on the CPU:
/// models/kernels/kv_append.h), so they may be views with a step between rows.
struct KVCache {
  torch::Tensor key, value;
  bool empty() const { return !key.defined(); }
  int64_t length() const { return empty() ? 0 : key.size(2); }
};

class MultiHeadAttentionImpl : public torch::nn::Module {
 public:
  explicit MultiHeadAttentionImpl(const MultiHeadAttentionOptions& options);

  /// Self-attention, x (B, T, H) -> (B, T, H). With a cache, x holds only the new steps:
  /// their keys and values are appended to the cache and the queries see the cached ones too.
  torch::Tensor forward(const torch::Tensor& x, const AttentionMask& mask = {}, KVCache* cache = nullptr);

  /// Cross-attention of x (B, Tq, H) over memory (B, Tk, H) (the encoder's output). With a
  /// cache, the memory's keys and values are computed on the first call and reused after
  /// (memory may then be undefined).
  torch::Tensor cross(const torch::Tensor& x, const torch::Tensor& memory, const AttentionMask& mask = {},
                      KVCache* cache = nullptr);

  /// Lays the query/key/value weights and biases out as adjacent rows of fresh buffers again.
  /// Done at construction and after to(); call it after anything else that re-allocates them
  /// (set_data). Not thread-safe: never while a forward pass runs. Loading with copy_ keeps
  /// the layout.
  void pack();
  /// Whether forward runs the three projections as one matrix product over the weights in
  /// place (else it copies them together first: correct, slower).
  bool packed() const;

  void to(torch::Device device, torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Dtype dtype, bool non_blocking = false) override;
  void to(torch::Device device, bool non_blocking = false) override;
  void pretty_print(std::ostream& stream) const override;

  MultiHeadAttentionOptions options;
  /// Three projections, or with options.fused_qkv_name() one (`qkv`) and the three null.
  torch::nn::Linear query{nullptr}, key{nullptr}, value{nullptr}, output{nullptr};
  torch::nn::Linear qkv{nullptr};
  /// With options.learned_temperature: the scores' divisor, else undefined.
  torch::Tensor temperature;

 private:
  torch::Tensor attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                       const AttentionMask& mask, bool causal) const;
};
TORCH_MODULE(MultiHeadAttention);

/// (B, T, H) -> (B, heads, T, H/heads), and back.
torch::Tensor split_heads(const torch::Tensor& x, int64_t heads);
torch::Tensor merge_heads(const torch::Tensor& x);

/// x W^T + b for W (and b) the row-wise concatenation of `weights` (and `biases`, all
/// undefined for none): one matrix product over the parameters in place when they are
/// adjacent rows of one buffer (see MultiHeadAttentionImpl::pack), with a backward that hands
/// each its slice of the gradient; torch::cat of them otherwise.
torch::Tensor linear_rows(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                          const std::vector<torch::Tensor>& biases);

/// Whether `parts` are contiguous, of one dtype, and adjacent in one storage in this order.
bool adjacent_rows(const std::vector<torch::Tensor>& parts);

}  // namespace zoo::models
