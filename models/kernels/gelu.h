#pragma once
// Feed-forward activations by their Hugging Face names; on the CPU (fp32, bf16) both GELUs, exact
// ("gelu") and tanh ("gelu_new"), run as one-pass vectorised kernels each way.
#include <string>
#include <vector>

#include <torch/torch.h>

namespace zoo::models {

/// Activation by Hugging Face name: "gelu", "gelu_new"/"gelu_pytorch_tanh", "relu", "silu".
torch::Tensor activation(const std::string& name, const torch::Tensor& x);
const std::vector<std::string>& activation_names();

}  // namespace zoo::models
