#pragma once
// Objectives' evaluation sums: what a batch adds to a split's metrics. Sums (not means) so
// that they add up over batches and over data-parallel processes; the metrics come from the
// split's sums at the end (zoo::evaluation_sums, Task::metrics_from_sums).
#include <torch/torch.h>

#include "train/task.h"

namespace zoo {

/// Classification of `logits` (N, C) against `labels` (N): loss_sum (cross-entropy), correct,
/// examples.
Metrics classification_sums(const torch::Tensor& logits, const torch::Tensor& labels);
/// loss (mean cross-entropy), accuracy and examples from classification_sums' sums.
Metrics classification_metrics(const Metrics& sums);

}  // namespace zoo
