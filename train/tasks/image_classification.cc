#include "train/tasks/image_classification.h"

#include "models/registry.h"
#include "train/objectives.h"

namespace zoo {

ImageClassificationTask::ImageClassificationTask(const json& config, const TaskContext& context) {
  config_ = config;
  context_ = context;
  // Built by the model registry, like every model; this task serves the ViT only (task table).
  model_ = models::ViTForImageClassification(
      std::dynamic_pointer_cast<models::ViTForImageClassificationImpl>(models::build_model(config.at("model"))));
  data_ = read_options<ImageDataOptions>(config.value("data", json::object()), "data");
  const auto& o = model_->options();
  data_.resolve(o.num_channels);
  dataset_.emplace(data_, data::ImageModelShape{o.num_channels, o.image_size, o.num_labels, o.labels});
  if (context_.r_drop_alpha > 0 && (data_.mixup_alpha > 0 || data_.cutmix_alpha > 0))
    throw Error("config: train.r_drop_alpha does not combine with data.mixup_alpha / data.cutmix_alpha (R-Drop's "
                "loss has one label per image); set one of them to 0");
}

void ImageClassificationTask::prepare_training(const std::string& /*output_dir*/) {
  require_validation_split(data_.validation_size > 0, "validation_size", data_.validation_size, "1 or more");
  dataset_->load_training();
}

Batch ImageClassificationTask::make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  return dataset_->train_batch(indices, seed);
}

Loss ImageClassificationTask::loss(const Batch& batch) {
  if (context_.r_drop_alpha > 0) return loss_twice(batch);
  // fp32 logits: under bf16 autocast the classifier's output is bf16.
  auto logits = model_->forward(batch["pixel_values"]).to(torch::kFloat);  // (B, num_labels)
  namespace F = torch::nn::functional;
  const auto options = F::CrossEntropyFuncOptions().label_smoothing(context_.label_smoothing);
  if (!batch.tensors.count("mix_lambda")) return {F::cross_entropy(logits, batch["labels"], options)};
  // Mixup / CutMix: each image's loss weighs its own label by lambda and its partner's by 1 - lambda.
  const auto per_image = F::CrossEntropyFuncOptions(options).reduction(torch::kNone);
  const auto& lambda = batch["mix_lambda"];
  return {(lambda * F::cross_entropy(logits, batch["labels"], per_image) +
           (1 - lambda) * F::cross_entropy(logits, batch["mix_labels"], per_image))
              .mean()};
}

Loss ImageClassificationTask::loss_twice(const Batch& batch) {
  const auto& pixels = batch["pixel_values"];
  const auto halves = model_->forward(torch::cat({pixels, pixels})).to(torch::kFloat).chunk(2);  // (B, num_labels) x 2
  return r_drop_loss(halves[0], halves[1], batch["labels"],
                     RDropOptions{context_.r_drop_alpha, context_.label_smoothing, std::nullopt});
}

bool ImageClassificationTask::splittable() const { return true; }

std::vector<std::vector<int64_t>> ImageClassificationTask::eval_plan(const std::string& split, int64_t batch_size) {
  auto plan = dataset_->eval_plan(split, batch_size);
  eval_split_ = split;
  return plan;
}

Batch ImageClassificationTask::make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const {
  check_eval_split(eval_split_, split);
  return dataset_->eval_batch(examples);
}

torch::Tensor ImageClassificationTask::eval_logits(const std::string&, const Batch& batch) {
  return model_->predict(batch["pixel_values"], data_.test_time_views());
}

Metrics ImageClassificationTask::eval_sums(const std::string& split, const Batch& batch) {
  return classification_sums(eval_logits(split, batch), batch["labels"]);
}

Metrics ImageClassificationTask::metrics_from_sums(const Metrics& sums) const { return classification_metrics(sums); }

}  // namespace zoo
