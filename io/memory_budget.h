#pragma once
// The memory budget of loading a model: what its weights will take, estimated from the config
// before anything is built, against what the machine (or the GPU) has, so that a checkpoint
// or config that cannot fit (`model.n_layer=100000000`) is refused in one line that names the
// keys instead of growing into the kernel's OOM killer. train/memory_budget.h adds training's
// estimate. train.check_memory=false skips the checks.
#include <string>

#include <torch/types.h>

#include "core/options.h"

namespace zoo {

struct MemoryEstimate {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0, runtime = 0;  // bytes
  std::string keys;  // the config keys behind the figures ("model.n_layer=12, ...")
  double total() const { return weights + gradients + optimizer + activations + runtime; }
  /// "3.1 GiB (weights 0.5, gradients 0.5, optimizer 1.0, activations 1.1 GiB)"
  std::string summary() const;
};

/// Inference (eval, generate, classify, translate, export): the weights and the runtime.
MemoryEstimate estimate_inference_memory(const json& model_section);

/// Bytes this process can still allocate on `device`: MemAvailable, the cgroup's limit and
/// RLIMIT_AS on the CPU; the card's memory on CUDA. Negative when unknown (no refusal then).
double available_memory(const torch::Device& device);

/// Throws zoo::Error when `estimate` exceeds available_memory(device), naming `what`, the keys,
/// the estimate, what is available and the way past it.
void check_memory_budget(const MemoryEstimate& estimate, const torch::Device& device, const std::string& what);

/// "1.5 GiB", "812 MiB", "3.2 TiB".
std::string format_bytes(double bytes);

}  // namespace zoo
