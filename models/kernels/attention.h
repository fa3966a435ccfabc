#pragma once
// Scaled dot-product attention over (B, heads, T, d) tensors: LibTorch's fused kernel on
// LibTorch >= 2.0, zoo's threaded CPU kernel on 1.x, and the plain-ops reference both are
// tested against. The modules around it are in models/attention.h.
#include <torch/torch.h>

namespace zoo::models {

/// softmax(q k^T / sqrt(d_k) + mask) v over (B, heads, T, d_k) tensors (document 004's
/// scaled_dot_product_attention, batched over heads). `mask` is additive (0 / very negative) and
/// broadcastable to (B, heads, Tq, Tk), or undefined. Uses the fused kernel of
/// LibTorch >= 2.0; on 1.x CPUs (no dropout, no mask gradient) its own kernels: one query (a
/// decoding step) in one_query_attention.h, else one that splits
/// the (B x heads) matrices across threads in forward and backward; else attention_math.
torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           double dropout_p, bool training, bool causal = false);

/// The same through plain matmul/softmax/dropout ops and autograd: the reference the fused
/// and threaded paths are tested against. `p` is the dropout probability actually applied.
torch::Tensor attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& mask, double p, bool causal);

}  // namespace zoo::models
