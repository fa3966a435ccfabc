#pragma once
// The output layer and its loss in one call, for the language models' training step.
#include <torch/torch.h>

namespace zoo::models {

/// Mean cross-entropy of the rows of x W^T + b (in fp32) against `labels` (-100: ignored), as
/// F::cross_entropy(linear(x, W, b).to(kFloat).flatten(0, -2), labels.flatten()); `bias` may
/// be undefined.
///
/// On the CPU the product runs in bf16 under autocast (else in x's dtype), and the loss and its
/// gradient come from the scores in place (softmax_rows.h): neither the scores' fp32 copy nor
/// the log-probabilities are made, and `pad_to` does not apply.
///
/// `pad_to` > 1: W is padded with zero rows to a multiple of it, and the padding's logits get a
/// bias of -inf in the product's epilogue, so the softmax runs over whole rows: the padding's
/// probabilities and gradients are exactly 0, and neither the narrowed logits' strided copy nor
/// their gradient's padded copy is made (what linear() pays on CUDA for GPT-2's 50,257 words;
/// docs/results.md, *GPU speed*). 0 (the default): as linear() would, padded on CUDA where
/// linear() pads.
///
/// On CUDA under bf16 or fp16 autocast (LibTorch >= 2.8) and without a bias the loss goes
/// through linear_cross_entropy_fused in fp16.
torch::Tensor linear_cross_entropy(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& labels,
                                   int64_t pad_to = 0, const torch::Tensor& bias = {});

/// The loss without the fused form: linear(), padded as `pad_to` asks, its logits copied to fp32
/// for F::cross_entropy (what linear_cross_entropy runs but on CUDA in bf16 or fp16).
torch::Tensor linear_cross_entropy_unfused(const torch::Tensor& x, const torch::Tensor& weight,
                                           const torch::Tensor& labels, int64_t pad_to = 0,
                                           const torch::Tensor& bias = {});

/// The same loss with the product in `dtype` and the softmax's gradient formed directly: the
/// logits come out of the product in `dtype`, the log-softmax reads them and writes fp32 (one
/// pass: CUDA's half-to-float softmax, which takes fp16 only), and the backward pass writes
/// exp(log p) - onehot(label) straight into `dtype` for the two products, which give fp32.
/// Neither the logits' fp32 copy, the loss's fp32 gradient nor its cast back is made
/// (docs/results.md, *GPU speed*). In fp16 the logits and x are 8x finer than in bf16 and the
/// unscaled softmax gradient lies in [-1, 1]; the loss's scale (1 / valid rows, and a
/// GradScaler's factor) is applied to the products' fp32 results. The tests run it in fp32.
torch::Tensor linear_cross_entropy_fused(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& labels,
                                         int64_t pad_to, torch::ScalarType dtype);

}  // namespace zoo::models
