// BertPretrainingTask's ELECTRA objective (model.pretraining_head electra): the generator's
// MLM loss on the masked tokens plus the discriminator's replaced-or-not loss on every token.
#include "train/tasks/bert_pretraining.h"

namespace zoo {

namespace {
namespace F = torch::nn::functional;
// ELECTRA's lambda: the discriminator's loss per token is far smaller than the generator's
// per masked token, and the paper weighs it 50 times.
constexpr double kDiscriminatorWeight = 50.0;

struct ElectraParts {
  torch::Tensor selected, real;  // the masked tokens; the tokens that are not padding
  models::ReplacedTokenOutput out;
};

ElectraParts electra_parts(models::BertForReplacedTokenDetection& model, const Batch& batch, uint64_t seed, int64_t offset) {
  const auto& labels = batch["labels"];
  ElectraParts p;
  p.selected = labels.ne(data::BertItems::kIgnore);
  p.real = batch["attention_mask"].to(torch::kBool);
  auto originals = torch::where(p.selected, labels, batch["input_ids"]);
  p.out = model->forward(batch["input_ids"], originals, p.selected, seed, batch["token_type_ids"],
                         batch["attention_mask"], offset);
  return p;
}
}  // namespace

Loss BertPretrainingTask::electra_loss(const Batch& batch, int64_t position_offset) {
  auto p = electra_parts(electra_, batch, batch.seed, position_offset);
  auto mlm = F::cross_entropy(p.out.generator_logits, batch["labels"].index({p.selected}));
  auto rtd = F::binary_cross_entropy_with_logits(p.out.discriminator_logits.index({p.real}).to(torch::kFloat),
                                                 p.out.replaced.index({p.real}).to(torch::kFloat));
  return Loss{mlm + kDiscriminatorWeight * rtd, {{"mlm", mlm}, {"rtd", rtd}}};
}

Metrics BertPretrainingTask::electra_eval_sums(const Batch& batch) {
  // The generator's samples from the rows' example numbers: the same every evaluation.
  const uint64_t seed = batch.examples.empty() ? 0 : seed_mix(static_cast<uint64_t>(batch.examples.front()), 0x5eed);
  auto p = electra_parts(electra_, batch, seed, 0);
  auto labels = batch["labels"].index({p.selected});
  const auto& logits = p.out.generator_logits;
  auto scores = p.out.discriminator_logits.index({p.real}).to(torch::kFloat);
  auto replaced = p.out.replaced.index({p.real});
  const auto sum = F::CrossEntropyFuncOptions().reduction(torch::kSum);
  return Metrics{
      {"mlm_loss_sum", F::cross_entropy(logits, labels, sum).item<double>()},
      {"mlm_correct", logits.argmax(-1).eq(labels).sum().item<double>()},
      {"mlm_selected", p.selected.sum().item<double>()},
      {"rtd_loss_sum", F::binary_cross_entropy_with_logits(scores, replaced.to(torch::kFloat),
                                                           F::BinaryCrossEntropyWithLogitsFuncOptions().reduction(torch::kSum))
                           .item<double>()},
      {"rtd_correct", scores.gt(0).eq(replaced).sum().item<double>()},
      {"rtd_tokens", static_cast<double>(replaced.numel())},
      {"replaced", replaced.sum().item<double>()},
      {"examples", static_cast<double>(batch.size)}};
}

Metrics BertPretrainingTask::electra_metrics(const Metrics& sums) const {
  const double selected = sums.at("mlm_selected"), tokens = sums.at("rtd_tokens");
  const double mlm = selected > 0 ? sums.at("mlm_loss_sum") / selected : 0.0;
  const double rtd = tokens > 0 ? sums.at("rtd_loss_sum") / tokens : 0.0;
  return Metrics{{"loss", mlm + kDiscriminatorWeight * rtd},
                 {"loss_mlm", mlm},
                 {"loss_rtd", rtd},
                 {"mlm_accuracy", selected > 0 ? sums.at("mlm_correct") / selected : 0.0},
                 {"rtd_accuracy", tokens > 0 ? sums.at("rtd_correct") / tokens : 0.0},
                 {"replaced", tokens > 0 ? sums.at("replaced") / tokens : 0.0},
                 {"examples", sums.at("examples")}};
}

}  // namespace zoo
