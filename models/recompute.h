#pragma once
// Gradient checkpointing (train.gradient_checkpointing, Hugging Face's name): a block keeps
// only its inputs in the forward pass and recomputes the rest in backward, trading about a
// third more arithmetic for the activations of every block but one.
#include <functional>
#include <vector>

#include <torch/torch.h>

namespace zoo::models {

/// f(inputs) with its activations recomputed in backward instead of kept. Forward runs f
/// without recording; backward reruns it from the random-number state (CPU, and CUDA for CUDA
/// inputs) and autocast state the forward started from, then backpropagates through the rerun:
/// the parameters f uses get their gradients there (PyTorch's reentrant checkpoint), the
/// inputs theirs through the return value. The same values and gradients as f, dropout masks
/// included. Outside training (no grad mode, no input needing a gradient and no parameter in
/// f) it is just f.
torch::Tensor recompute_in_backward(const std::function<torch::Tensor(const std::vector<torch::Tensor>&)>& f,
                                    const std::vector<torch::Tensor>& inputs);

/// Implemented by the models whose blocks can be recomputed: the trainer switches it on for
/// every such module of the model it trains.
class GradientCheckpointing {
 public:
  virtual ~GradientCheckpointing() = default;
  void set_gradient_checkpointing(bool on) { gradient_checkpointing_ = on; }
  bool gradient_checkpointing() const { return gradient_checkpointing_; }

 protected:
  /// block(x) through recompute_in_backward while switched on and training, else block(x).
  torch::Tensor checkpointed(bool training, const torch::Tensor& x,
                             const std::function<torch::Tensor(const torch::Tensor&)>& block) const;

 private:
  bool gradient_checkpointing_ = false;
};

/// Switches recomputation on or off in every module of `model` that has it; returns how many.
int set_gradient_checkpointing(torch::nn::Module& model, bool on);

}  // namespace zoo::models
