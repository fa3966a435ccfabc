#pragma once
// Key/value caches that grow without being copied at every decoding step. A cache is (B,
// heads, T, d); torch::cat of it and one new step copies all T columns, for every layer and
// every step, and so does the index_select of a beam search's reorder. On the CPU these
// functions keep the cache in a buffer with room for more columns (B, heads, capacity, d):
// the new step is written into the room, and a reorder writes into a fresh buffer of the
// same room. The buffer remembers the last column written, so a step is appended in place
// only to the newest view of it: two states that share an older view (a copy) each get their
// own buffer, never each other's columns.
#include <torch/torch.h>

namespace zoo::models {

/// torch::cat({past, fresh}, 2) for (B, heads, T, d) and (B, heads, t, d) tensors: on the CPU
/// in place into past's buffer when it has room and past is its newest view, else into a new
/// buffer with room for about as many columns again. The result is a view (its last two
/// dimensions dense, rows strided); `past` may be undefined (then: fresh).
torch::Tensor append_steps(const torch::Tensor& past, const torch::Tensor& fresh);

/// t.index_select(dim, indices); for a tensor in a buffer of append_steps (dim 0), the rows
/// are written into a new buffer with the same room, so that the next step appends in place.
torch::Tensor select_rows(const torch::Tensor& t, int64_t dim, const torch::Tensor& indices);

/// The rows of `parts`, (B_i, heads, T_i, d) with T_i <= columns, one after another, each
/// right-aligned to `columns` with zeros before it (a left-padded batch): torch::cat of the
/// padded parts along dim 0, on the CPU into a buffer with room, as append_steps leaves it.
torch::Tensor stack_left_padded(const std::vector<torch::Tensor>& parts, int64_t columns);

/// Whether t lies in a buffer of append_steps (for tests).
bool in_growing_buffer(const torch::Tensor& t);

}  // namespace zoo::models
