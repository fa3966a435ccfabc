#pragma once
// The update step: the optimizers of train.optim (weight decay only on matrices),
// ThreadedAdamW, and gradient clipping.
#include <memory>
#include <unordered_map>

#include <torch/torch.h>

#include "train/train_options.h"

namespace zoo {

/// adamw (ThreadedAdamW), adam or sgd over the model's parameters, in two groups: weight
/// decay on tensors of 2 or more dimensions, none on biases and normalisation weights, as
/// Hugging Face and nanoGPT do, and none on the parameters train.weight_decay_exclude names.
/// With train.layer_lr_decay below 1, two such groups per depth (layer_lr_scales), each with
/// its share of train.learning_rate as its learning rate.
std::unique_ptr<torch::optim::Optimizer> make_optimizer(torch::nn::Module& model, const TrainOptions& o);

/// Layer-wise learning-rate decay: each parameter's share of the learning rate,
/// decay^(L + 1 - depth), where depth is 0 for embeddings (a name holding "embed", "wte." or
/// "wpe."), i + 1 for layer i (".layer.i.", ".layers.i." or ".h.i."; L such layers) and L + 1,
/// share 1, for everything else (the head, a final norm). decay 1: every share is 1.
std::vector<double> layer_lr_scales(const torch::OrderedDict<std::string, torch::Tensor>& named, double decay);

/// Scales the gradients of `params` so that their global L2 norm is at most `max_norm` and
/// returns the norm before scaling, as torch::nn::utils::clip_grad_norm_ (which it calls on
/// the CPU). On an accelerator: clip_grad_norm_foreach.
double clip_grad_norm(const std::vector<torch::Tensor>& params, double max_norm);

/// The same in a few multi-tensor launches (LibTorch's takes two per parameter), to rounding.
double clip_grad_norm_foreach(const std::vector<torch::Tensor>& params, double max_norm);

/// clip_grad_norm_foreach without reading the norm back: returns it as a 0-dim tensor on the
/// gradients' device and never waits for the device (PyTorch's clip_grad_norm_ does the
/// same), so it can be captured in a CUDA graph. An undefined tensor when no parameter has a
/// gradient.
torch::Tensor clip_grad_norm_async(const std::vector<torch::Tensor>& params, double max_norm);

/// torch::optim::AdamW with the same state (so optimizer.pt is interchangeable) and the same
/// arithmetic per parameter (bit for bit with LibTorch 1.13; on the CPU an fp32 parameter is
/// updated in one pass, train/adamw_cpu.h), but the parameters are shared out among the CPU
/// cores by size and updated at once. LibTorch updates one parameter after the other, and a
/// small model's tensors are too small for its per-operation threading, so the other cores
/// would idle through the update. On CUDA with LibTorch 2.1+ it runs LibTorch's fused AdamW
/// kernel instead (same state, the same arithmetic to rounding), with each parameter's step
/// count also kept on the device, so that a step neither copies to the device nor waits for
/// it (and can be captured in a CUDA graph).
class ThreadedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;

  /// CUDA graphs (train/cuda_graph.h). While `capturing`, step() records the update's kernels
  /// only: it leaves the host's step counts and the learning rates on the device as they are,
  /// so that no number of the capture's moment is baked into the graph.
  void set_capturing(bool capturing) { capturing_ = capturing; }
  /// Before each replay of a captured step: the groups' learning rates to the device, and the
  /// step counted in the host's step counts (what optimizer.pt keeps).
  void before_replay();

 private:
  // The fused kernel's per-parameter step counts on the device, and the host step count
  // (AdamWParamState::step, what optimizer.pt keeps) each one matches; rebuilt from the host
  // count when that was changed elsewhere (a loaded state).
  struct DeviceStep {
    torch::Tensor count;
    double host = -1;
  };
  struct Work;
  void fused_update(const std::vector<Work>& work);
  std::vector<Work> collect();
  torch::Tensor device_lr(const torch::optim::AdamWOptions& o, const torch::Device& device);

  std::unordered_map<const c10::TensorImpl*, DeviceStep> device_steps_;
  std::unordered_map<const torch::optim::AdamWOptions*, torch::Tensor> device_lrs_;
  bool capturing_ = false;
};

}  // namespace zoo
