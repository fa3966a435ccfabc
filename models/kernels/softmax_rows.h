#pragma once
// The softmax cross-entropy of a matrix of scores, row by row on the CPU in fp32 or bf16
// storage (fp32 arithmetic), without the fp32 log-probabilities LibTorch's log_softmax and
// nll_loss write and read: the forward pass keeps two figures per row (its maximum and log-sum-exp), and the backward
// pass turns the scores into their gradient in place. What the output layer's loss
// (cross_entropy.h) runs on the CPU.
#include <vector>

#include <torch/torch.h>

namespace zoo::models {

/// Per row r of `logits` (N, V), contiguous fp32 or bf16 on the CPU, with the scores s[r, j] =
/// logits[r, j] + bias[j] in fp32 (`bias`, (V), may be undefined): loss[r] = log sum_j
/// exp(s[r, j]) - s[r, labels[r]] in fp32, 0 where labels[r] is `ignore_index`; and stats
/// (N, 2), each row's maximum and the log of its sum of exp(score - maximum), for the gradient.
/// A NaN or infinite score makes its row's loss NaN. Returns {stats, loss}.
std::pair<torch::Tensor, torch::Tensor> softmax_rows_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                                                          int64_t ignore_index, const torch::Tensor& bias = {});

/// In place: logits[r, j] := scale (softmax(s[r])_j - [j == labels[r]]), the gradient of
/// scale * loss[r] (0 on rows labelled `ignore_index`), given softmax_rows_loss's stats and the
/// same bias. Returns the bias's gradient, the sum of those rows in fp32 (V), taken before they
/// are rounded to the scores' dtype; undefined without a bias.
torch::Tensor softmax_rows_gradient_(torch::Tensor& logits, const torch::Tensor& stats, const torch::Tensor& labels,
                                     float scale, int64_t ignore_index, const torch::Tensor& bias = {});

/// log_softmax(x, -1) of a matrix (N, V) in fp32. For fp32 CPU rows (each contiguous) without
/// gradient: one pass for each row's maximum, one for its sum of exponentials and one that
/// writes, against LibTorch's three passes that also write and read the exponentials; elsewhere
/// torch::log_softmax. Decoding's next-token scores.
torch::Tensor log_softmax_rows(const torch::Tensor& x);

/// The log of the mean of several distributions over the same classes, each given as
/// log-probabilities of the same shape: what test-time views and ensembles average.
torch::Tensor log_mean_of_distributions(const std::vector<torch::Tensor>& log_probs);

}  // namespace zoo::models
