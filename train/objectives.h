#pragma once
// Objectives' evaluation sums: what a batch adds to a split's metrics. Sums (not means) so
// that they add up over batches and over data-parallel processes; the metrics come from the
// split's sums at the end (zoo::evaluation_sums, Task::metrics_from_sums). And the training
// losses that several tasks share (R-Drop).
#include <cstdint>
#include <optional>

#include <torch/torch.h>

#include "train/task.h"

namespace zoo {

/// Classification of `logits` (N, C) against `labels` (N): loss_sum (cross-entropy), correct,
/// examples.
Metrics classification_sums(const torch::Tensor& logits, const torch::Tensor& labels);
/// loss (mean cross-entropy), accuracy and examples from classification_sums' sums.
Metrics classification_metrics(const Metrics& sums);

/// The settings of r_drop_loss() (train.r_drop_alpha and what the task's cross-entropy uses).
struct RDropOptions {
  double alpha = 0;                     ///< weight of the KL term (train.r_drop_alpha)
  double label_smoothing = 0;           ///< of the cross-entropy (train.label_smoothing_factor)
  std::optional<int64_t> ignore_index;  ///< targets that count in neither term (padding); none: all count
};

/// R-Drop (Liang et al. 2021, "R-Drop: Regularized Dropout for Neural Networks"): the loss of
/// two forward passes of the same examples with different dropout masks. `logits1` and
/// `logits2` (N, C) are the two copies' scores of the same N targets (N); with p1, p2 their
/// softmax distributions,
///   total = (CE(logits1) + CE(logits2)) / 2 + alpha * kl,
///   kl    = mean over the counted targets of 0.5 * (KL(p1 || p2) + KL(p2 || p1)),
/// CE being F::cross_entropy's mean with the label smoothing and ignore index of `options`, and
/// KL computed in fp32 from log_softmax. parts: "ce" and "kl" (kl is 0 when no target counts).
Loss r_drop_loss(const torch::Tensor& logits1, const torch::Tensor& logits2, const torch::Tensor& targets,
                 const RDropOptions& options);

}  // namespace zoo
