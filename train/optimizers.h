#pragma once
// The update step: the optimizers of train.optim (weight decay only on matrices),
// ThreadedAdamW, and gradient clipping.
#include <memory>

#include <torch/torch.h>

#include "train/train_options.h"

namespace zoo {

/// adamw (ThreadedAdamW), adam or sgd over the model's parameters, in two groups: weight
/// decay on tensors of 2 or more dimensions, none on biases and normalisation weights, as
/// Hugging Face and nanoGPT do, and none on the parameters train.weight_decay_exclude names.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(torch::nn::Module& model, const TrainOptions& o);

/// Scales the gradients of `params` so that their global L2 norm is at most `max_norm` and
/// returns the norm before scaling, as torch::nn::utils::clip_grad_norm_ (which it calls on
/// the CPU). On an accelerator: clip_grad_norm_foreach.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

/// The same in a few multi-tensor launches (LibTorch's takes two per parameter), to rounding.
double clip_grad_norm_foreach(const std::vector<torch::Tensor>& params, double max_norm);

/// torch::optim::AdamW with the same state (so optimizer.pt is interchangeable) and the same
/// arithmetic per parameter, bit for bit, but the parameters are shared out among the CPU
/// cores by size and updated at once. LibTorch updates one parameter after the other, and a
/// small model's tensors are too small for its per-operation threading, so the other cores
/// would idle through the update. On CUDA with LibTorch 2.1+ it runs LibTorch's fused AdamW
/// kernel instead (same state, the same arithmetic to rounding).
class ThreadedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

}  // namespace zoo
