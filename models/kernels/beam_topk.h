#pragma once
// A beam search step's choice: the best extensions of each sentence's beams, without the tensor
// of every beam's score plus every token's log-probability that torch::topk would sort.
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace zoo::models {

/// For each block a of `beams` rows of `log_probs` (N, V), the `width` best of the candidates
/// log_probs[r, v] + row_scores[r] (added in fp32, as adding the scores to the tensor does),
/// numbered (r - a * beams) * V + v: what (log_probs + scores).view({N / beams, beams * V})
/// .topk(width, 1) gives. Returns {scores (N / beams, width) fp64, numbers (N / beams, width)
/// int64} on the CPU, best first (ties: the lower number first), -inf where a block has fewer
/// finite candidates. On the CPU with fp32 rows it skips the rows scored -inf and every 128
/// columns whose best cannot enter; elsewhere it runs torch::topk.
std::pair<torch::Tensor, torch::Tensor> beam_topk(const torch::Tensor& log_probs, const std::vector<double>& row_scores,
                                                  int64_t beams, int64_t width);

}  // namespace zoo::models
