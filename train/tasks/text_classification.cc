#include "train/tasks/text_classification.h"

#include <algorithm>
#include <filesystem>

#include "core/paths.h"
#include "models/registry.h"
#include "train/objectives.h"

namespace fs = std::filesystem;

namespace zoo {

namespace F = torch::nn::functional;

TextClassificationTask::TextClassificationTask(const json& config, const TaskContext& context,
                                               const std::string& checkpoint_dir) {
  config_ = config;
  context_ = context;
  data_ = read_options<TextClassificationDataOptions>(config.value("data", json::object()), "data");
  if (data_.labels.size() < 2) throw Error("config: data.labels needs two or more class names");
  std::string where = checkpoint_dir;
  if (where.empty()) where = data_.vocab;
  if (where.empty()) where = config.value("train", json::object()).value("init_from", "");
  if (where.empty())
    throw Error("config: text classification needs a vocabulary: set data.vocab (a vocab.txt) or train.init_from "
                "(a pretrained checkpoint, whose vocab.txt is used)");
  data::ClassificationTextEncoder encoder(
      checkpoint_dir.empty() && where == data_.vocab ? existing_data_path(where, "data.vocab") : where, data_);
  config_["data"]["tokenizer_fingerprint"] = data_.tokenizer_fingerprint = encoder.fingerprint();
  dataset_.emplace(data_, std::move(encoder));
  DataFacts facts = dataset_->facts();
  if (!checkpoint_dir.empty()) facts.mismatch_hint = "this vocabulary does not belong to this checkpoint";
  json& model = config_["model"];
  model = models::complete_model_section(model, facts);
  const json resolved = models::resolve_model_config(model);
  // Checked here, not at the first text longer than the model (which may come hours in).
  const int64_t positions = resolved.value("max_position_embeddings", int64_t{512});
  if (data_.max_length > positions)
    throw Error(cat("config: data.max_length ", data_.max_length, " is longer than the model's ", positions,
                    " positions (model.max_position_embeddings); set data.max_length=", positions, " or less"));
  model_ = models::BertForSequenceClassification(std::dynamic_pointer_cast<models::BertForSequenceClassificationImpl>(
      models::build_model(resolved, "text_classification")));
}

void TextClassificationTask::prepare_training(const std::string& /*output_dir*/) { dataset_->load_training(); }

std::vector<std::vector<int64_t>> TextClassificationTask::epoch_plan(uint64_t seed, int64_t epoch,
                                                                     int64_t batch_size) const {
  return dataset_->epoch_plan(seed, epoch, batch_size);
}

Batch TextClassificationTask::make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  Batch b = dataset_->train_batch(indices);
  b.seed = seed;
  return b;
}

Loss TextClassificationTask::loss(const Batch& batch) {
  if (context_.r_drop_alpha > 0) return loss_twice(batch);
  auto logits = model_->forward(batch["input_ids"], {}, batch["attention_mask"]);
  return Loss{F::cross_entropy(logits, batch["labels"], F::CrossEntropyFuncOptions().label_smoothing(context_.label_smoothing))};
}

Loss TextClassificationTask::loss_twice(const Batch& batch) {
  const auto& ids = batch["input_ids"];
  const auto& mask = batch["attention_mask"];
  const auto halves = model_->forward(torch::cat({ids, ids}), {}, torch::cat({mask, mask})).chunk(2);  // (B, C) x 2
  return r_drop_loss(halves[0], halves[1], batch["labels"],
                     RDropOptions{context_.r_drop_alpha, context_.label_smoothing, std::nullopt});
}

std::vector<std::vector<int64_t>> TextClassificationTask::eval_plan(const std::string& split, int64_t batch_size) {
  auto plan = dataset_->eval_plan(split, batch_size);
  eval_split_ = split;
  return plan;
}

Batch TextClassificationTask::make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const {
  check_eval_split(eval_split_, split);
  return dataset_->eval_batch(examples);
}

torch::Tensor TextClassificationTask::eval_logits(const std::string&, const Batch& batch) {
  return model_->forward(batch["input_ids"], {}, batch["attention_mask"]);
}

Metrics TextClassificationTask::eval_sums(const std::string& split, const Batch& batch) {
  return classification_sums(eval_logits(split, batch), batch["labels"]);
}

Metrics TextClassificationTask::metrics_from_sums(const Metrics& sums) const { return classification_metrics(sums); }

void TextClassificationTask::save_assets(const std::string& dir) const { dataset_->encoder().save(dir); }

}  // namespace zoo
