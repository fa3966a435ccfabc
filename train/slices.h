#pragma once
// Forward and backward of a batch, optionally as one slice per CPU core.
#include <cstdint>
#include <functional>
#include <vector>

#include <torch/torch.h>

#include "train/task.h"

namespace zoo {

/// Forward and backward of one batch: adds d(weight * loss.total)/d(params) to the
/// parameters' gradients and returns the loss and its parts as numbers; `check(total)`, when
/// given, runs before any gradient is touched (it may throw, e.g. on a non-finite loss).
///
/// With shards > 1 (the trainer passes one per CPU core for tasks that are splittable())
/// the batch is cut into `shards` slices and every core runs forward and backward of its own
/// slice single-threaded, all at once; `loss_of` must then be thread-safe and return means
/// over the examples of its slice. LibTorch's intra-op threading splits each operation
/// instead, and at the sizes of small models on a CPU most operations are too small for that
/// to pay (README, Benchmarks). The slices' gradients are summed in slice order, so a step is
/// deterministic whatever the threads' timing. oneDNN is off inside the slices (its
/// convolutions hang there) unless `onednn`, which bf16 autocast needs for its matrix products.
/// Each slice's loss counts in proportion to `terms_of(slice)`, the number of terms its loss
/// is a mean over (default: the slice's examples; e.g. the masked tokens of an MLM batch), so
/// that the slices add up to the whole batch's mean; a slice with no terms is skipped.
/// Dropout (models::apply_dropout) in a slice takes its seeds from a stream of the slice's
/// own, its base drawn from the default CPU generator in slice order, so a step with dropout
/// is as reproducible as one without; `loss_of` must draw no other random numbers.
/// The loss and its parts as numbers (.item()), each times `share`.
LossValues loss_values(const Loss& loss, double share = 1.0);

LossValues forward_backward(const std::function<Loss(const Batch&)>& loss_of, const Batch& batch,
                        double weight, int64_t shards, const std::vector<torch::Tensor>& params,
                        const std::function<void(double)>& check = {}, bool onednn = false,
                        const std::function<double(const Batch&)>& terms_of = {});

}  // namespace zoo
