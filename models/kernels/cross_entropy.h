#pragma once
// The output layer and its loss in one call, for the language models' training step.
#include <limits>

#include <torch/torch.h>

#include "models/kernels/linear.h"

namespace zoo::models {

/// Mean cross-entropy of the rows of x W^T (in fp32) against `labels`, as
/// F::cross_entropy(linear(x, W).to(kFloat).flatten(0, -2), labels.flatten()).
///
/// `pad_to` > 1: W is padded with zero rows to a multiple of it, and the padding's logits get a
/// bias of -inf in the product's epilogue, so the softmax runs over whole rows: the padding's
/// probabilities and gradients are exactly 0, and neither the narrowed logits' strided copy nor
/// their gradient's padded copy is made (what linear() pays on CUDA for GPT-2's 50,257 words;
/// docs/results.md, *GPU speed*). 0 (the default): as linear() would, padded on CUDA where
/// linear() pads.
inline torch::Tensor linear_cross_entropy(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& labels,
                                          int64_t pad_to = 0) {
  const int64_t n = weight.size(0);
  if (pad_to == 0) pad_to = x.is_cuda() && pads_output_width(x, weight) ? 64 : 1;
  const int64_t extra = (n + pad_to - 1) / pad_to * pad_to - n;
  if (extra == 0)
    return torch::nn::functional::cross_entropy(linear(x, weight, torch::Tensor()).to(torch::kFloat).flatten(0, -2), labels.flatten());
  const auto w = torch::constant_pad_nd(weight, {0, 0, 0, extra});
  auto bias = torch::zeros({n + extra}, weight.options().requires_grad(false));
  bias.narrow(0, n, extra).fill_(-std::numeric_limits<float>::infinity());
  const auto logits = at::linear(x, w, bias).to(torch::kFloat);
  return torch::nn::functional::cross_entropy(logits.flatten(0, -2), labels.flatten());
}

}  // namespace zoo::models
