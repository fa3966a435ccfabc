#include "train/objectives.h"

namespace zoo {

namespace F = torch::nn::functional;

Metrics classification_sums(const torch::Tensor& logits, const torch::Tensor& labels) {
  return Metrics{
      {"loss_sum", F::cross_entropy(logits, labels, F::CrossEntropyFuncOptions().reduction(torch::kSum)).item<double>()},
      {"correct", logits.argmax(-1).eq(labels).sum().item<double>()},
      {"examples", static_cast<double>(labels.size(0))}};
}

Metrics classification_metrics(const Metrics& sums) {
  const double n = sums.at("examples");
  return Metrics{{"loss", n > 0 ? sums.at("loss_sum") / n : 0.0},
                 {"accuracy", n > 0 ? sums.at("correct") / n : 0.0},
                 {"examples", n}};
}

}  // namespace zoo
