#pragma once
// What the library's classes share: checks of their arguments and the top-k labels of a row.
#include <algorithm>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"
#include "zoo/zoo.h"

namespace zoo::api {

/// The `top_k` most probable labels of each row of `probabilities` (rows, labels), best first.
std::vector<std::vector<Label>> top_labels(const torch::Tensor& probabilities, const std::vector<std::string>& names,
                                           int top_k);

/// Throws zoo::Error naming `option` unless lo <= value <= hi.
template <class T>
void check_range(const char* option, T value, T lo, T hi) {
  if (!(value >= lo && value <= hi)) throw Error(cat(option, " ", value, " is out of range: give ", lo, " to ", hi));
}

/// Calls f(first, last) for consecutive index ranges of at most `size` covering [0, n): the
/// library's forwards over long lists, in bounded memory.
template <class F>
void in_chunks(size_t n, size_t size, F f) {
  for (size_t s = 0; s < n; s += size) f(s, std::min(n, s + size));
}

/// Throws zoo::Error naming the index of the first input that is empty or only spaces.
void check_not_blank(const std::vector<std::string>& inputs, const char* what);

}  // namespace zoo::api
