#pragma once
// Image classification: an image set (data/image_dataset.h: Fashion-MNIST, MNIST, CIFAR-10)
// + a ViT, cross-entropy loss, accuracy. Inference is predict/image_classifier.h.
#include <optional>
#include <string>
#include <vector>

#include "data/image_dataset.h"
#include "models/vit.h"
#include "train/task.h"

namespace zoo {

using data::ImageDataOptions;

class ImageClassificationTask : public Task {
 public:
  ImageClassificationTask(const json& config, const TaskContext& context);

  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return dataset_->train_size(); }
  /// pixel_values (normalised, augmented) and labels.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  /// Cross-entropy of the labels (with Mixup / CutMix, of both labels weighed by mix_lambda);
  /// with train.r_drop_alpha > 0, R-Drop's loss of two passes (zoo::r_drop_loss; parts "ce", "kl").
  Loss loss(const Batch& batch) override;
  /// Yes: dropout in a slice draws from the slice's own seed stream (train/slices.h).
  bool splittable() const override;
  bool graphable() const override { return true; }
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  torch::Tensor eval_logits(const std::string& split, const Batch& batch) override;
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_best_metric() const override { return "accuracy"; }

  /// uint8 (B, C, H, W) -> normalised float, as the model was trained.
  torch::Tensor preprocess(const torch::Tensor& images) const { return dataset_->preprocess(images); }
  models::ViTForImageClassification& vit() { return model_; }

 private:
  /// loss() with train.r_drop_alpha > 0: one forward pass of the batch's pixel_values twice over.
  Loss loss_twice(const Batch& batch);

  ImageDataOptions data_;
  models::ViTForImageClassification model_{nullptr};
  std::optional<data::ImageDataset> dataset_;
  std::string eval_split_;  // the split eval_plan() loaded last
};

}  // namespace zoo
