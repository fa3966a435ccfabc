#pragma once
// Feed-forward activations by their Hugging Face names, with a training-time GELU that keeps
// Phi(x) for the backward pass and, on the CPU, a one-pass vectorised tanh GELU (gelu_new).
#include <string>
#include <vector>

#include <torch/torch.h>

namespace zoo::models {

/// Activation by Hugging Face name: "gelu", "gelu_new"/"gelu_pytorch_tanh", "relu", "silu".
torch::Tensor activation(const std::string& name, const torch::Tensor& x);
const std::vector<std::string>& activation_names();

}  // namespace zoo::models
