#pragma once
// Building blocks shared by the attention models (ViT now; BERT, GPT, Transformer next).
#include <torch/torch.h>

namespace zoo::models {

/// softmax(q k^T / sqrt(d_k) + mask) v over (B, heads, T, d_k) tensors (document 004's
/// scaled_dot_product_attention, batched over heads). `mask` is additive (0 / -inf) and
/// broadcastable to (B, heads, Tq, Tk), or undefined. Uses the fused kernel of
/// LibTorch >= 2.0; on 1.x CPUs (no dropout, no mask gradient) its own kernel, which splits
/// the (B x heads) matrices across threads in forward and backward; else attention_math.
torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           double dropout_p, bool training, bool causal = false);

/// The same through plain matmul/softmax/dropout ops and autograd: the reference the fused
/// and threaded paths are tested against. `p` is the dropout probability actually applied.
torch::Tensor attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& mask, double p, bool causal);

/// (B, T, H) -> (B, heads, T, H/heads), and back.
torch::Tensor split_heads(const torch::Tensor& x, int64_t heads);
torch::Tensor merge_heads(const torch::Tensor& x);

/// Activation by Hugging Face name: "gelu", "gelu_new"/"gelu_pytorch_tanh", "relu", "silu".
torch::Tensor activation(const std::string& name, const torch::Tensor& x);
const std::vector<std::string>& activation_names();

/// Hugging Face's init: weights ~ N(0, std) truncated at 2 std, biases 0, LayerNorm (1, 0).
void init_weights_hf(torch::nn::Module& module, double std);

}  // namespace zoo::models
