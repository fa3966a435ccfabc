#pragma once
// The memory budget of a training run: what it will need, estimated from its resolved config
// before anything is built (io/memory_budget.h has the estimate of the weights alone, what is
// available and the check), against what the machine (or the GPU) has.
#include "io/memory_budget.h"

namespace zoo {

/// Training: fp32 weights, their gradients, the optimizer's state and one micro-batch's
/// activations (per_device_train_batch_size items of the task's length; only the blocks'
/// inputs under gradient checkpointing, half-width under bf16/fp16).
MemoryEstimate estimate_training_memory(const json& config);

}  // namespace zoo
