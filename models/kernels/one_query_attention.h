#pragma once
// Attention for one query position over many keys: a decoding step with a key/value cache
// (the Transformer's and GPT's beam and greedy search), fp32 on the CPU, no gradient. Each
// (batch x head) matrix is a row of dot products, a softmax and a weighted sum of rows, in
// vectorised loops on raw pointers, where the general kernel makes two BLAS calls of one row
// per matrix (most of their time is spent packing the operands: tools/bench/infer_bench.sh's
// mt-translate row, docs/results.md).
#include <torch/torch.h>

namespace zoo::models {

/// Whether one_query_attention takes these inputs: q (..., 1, d), k (..., Tk, d), v (..., Tk, dv)
/// fp32 CPU tensors with the same leading dimensions, each with unit-stride rows; `mask`
/// undefined or fp32; not `causal` unless Tk = 1 (the causal mask of a single query is aligned
/// top-left: it sees only the first key); and no gradient wanted.
bool one_query_attention_applies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& mask, bool causal);

/// softmax(q k^T / sqrt(d) + mask) v for the inputs one_query_attention_applies accepts; `mask`
/// is additive and broadcastable to (..., 1, Tk). Returns (..., 1, dv), contiguous. The key and
/// value rows are read in place: a cache with room to grow is not copied.
torch::Tensor one_query_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& mask);

}  // namespace zoo::models
