#pragma once
// The memory budget of a training run: what it will need, estimated from its resolved config
// before anything is built (io/memory_budget.h has the estimate of the weights alone, what is
// available and the check), against what the machine (or the GPU) has.
#include <cstdint>
#include <string>

#include "io/memory_budget.h"

namespace zoo {

/// Training: fp32 weights, their gradients, the optimizer's state and one micro-batch's
/// activations (per_device_train_batch_size items of the task's length, twice as many under
/// train.r_drop_alpha; only the blocks' inputs under gradient checkpointing, half-width under
/// bf16/fp16).
MemoryEstimate estimate_training_memory(const json& config);

/// Evaluation: the weights and the no-grad forward of `batch` items (a block's tensors at a
/// time, the attention rows, the logits).
MemoryEstimate estimate_evaluation_memory(const json& config, int64_t batch);

/// The evaluation batch a training run uses: train.per_device_eval_batch_size, made smaller
/// (at least 1) when its forward would need more activation memory than the training step (and
/// more than 16 MiB: less is noise beside the runtime), so
/// that evaluation never sets a run's peak; `note` (when not null) says so. Evaluation sums
/// add up over batches, so the metrics do not change.
int64_t evaluation_batch_size(const json& config, std::string* note);

/// The run's estimated peak and the phase that sets it: "1.3 GiB, set by the training step".
std::string peak_estimate(const json& config);

}  // namespace zoo
