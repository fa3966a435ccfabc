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

namespace {
// 0.5 * (KL(p1 || p2) + KL(p2 || p1)) per row of (N, C) scores, in fp32: the two sums
// p1 (log p1 - log p2) + p2 (log p2 - log p1) make one, (p1 - p2)(log p1 - log p2).
torch::Tensor symmetric_kl_rows(const torch::Tensor& logits1, const torch::Tensor& logits2) {
  const auto log_p1 = torch::log_softmax(logits1.to(torch::kFloat), -1);
  const auto log_p2 = torch::log_softmax(logits2.to(torch::kFloat), -1);
  return 0.5 * ((log_p1.exp() - log_p2.exp()) * (log_p1 - log_p2)).sum(-1);  // (N)
}
}  // namespace

Loss r_drop_loss(const torch::Tensor& logits1, const torch::Tensor& logits2, const torch::Tensor& targets,
                 const RDropOptions& options) {
  TORCH_CHECK(logits1.dim() == 2 && logits1.sizes() == logits2.sizes() && targets.dim() == 1 &&
                  targets.size(0) == logits1.size(0),
              "r_drop_loss: logits (N, C) twice and targets (N), got ", logits1.sizes(), ", ", logits2.sizes(), ", ",
              targets.sizes());
  auto ce_options = F::CrossEntropyFuncOptions().label_smoothing(options.label_smoothing);
  if (options.ignore_index) ce_options = ce_options.ignore_index(*options.ignore_index);
  const auto ce =
      0.5 * (F::cross_entropy(logits1, targets, ce_options) + F::cross_entropy(logits2, targets, ce_options));
  const auto rows = symmetric_kl_rows(logits1, logits2);
  torch::Tensor kl;
  if (options.ignore_index) {
    // A sum over the counted rows and a division, not a boolean index: no read-back to the host.
    const auto counted = targets.ne(*options.ignore_index).to(torch::kFloat);
    kl = (rows * counted).sum() / counted.sum().clamp_min(1);
  } else {
    kl = rows.mean();
  }
  return Loss{ce + options.alpha * kl, {{"ce", ce}, {"kl", kl}}};
}

}  // namespace zoo
