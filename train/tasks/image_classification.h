#pragma once
// Image classification: an image set (Fashion-MNIST, MNIST, CIFAR-10) + a ViT,
// cross-entropy loss, accuracy. Inference is predict/image_classifier.h.
#include <string>
#include <vector>

#include "data/image_options.h"
#include "data/images.h"
#include "models/vit.h"
#include "train/task.h"

namespace zoo {

using data::ImageDataOptions;

class ImageClassificationTask : public Task {
 public:
  ImageClassificationTask(const json& config, const TaskContext& context);

  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return train_index_.size(0); }
  /// pixel_values (normalised, augmented) and labels.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  Loss loss(const Batch& batch) override;
  /// Yes unless the model uses dropout (its random draws would depend on thread timing).
  bool splittable() const override;
  bool graphable() const override { return true; }
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_best_metric() const override { return "accuracy"; }

  /// uint8 (B, C, H, W) -> normalised float, as the model was trained.
  torch::Tensor preprocess(const torch::Tensor& images) const;
  /// Inference logits of a preprocessed batch. With data.test_time_hflip: the log of the mean
  /// of the probabilities of the images and of their mirror images (softmax gives that mean).
  torch::Tensor predict(const torch::Tensor& x);
  models::ViTForImageClassification& vit() { return model_; }
  const ImageDataOptions& data_options() const { return data_; }

 private:
  std::unique_ptr<data::ImageSet> load_split(const std::string& split) const;
  const data::ImageSet& train_set();
  const data::ImageSet& test_set();

  ImageDataOptions data_;
  models::ViTForImageClassification model_{nullptr};
  std::unique_ptr<data::ImageSet> train_, test_;
  torch::Tensor train_index_, valid_index_;  // int64 indices into train_
  std::string eval_split_;                   // the split eval_plan() last loaded:
  torch::Tensor eval_images_, eval_labels_;  // its images (uint8) and labels
};

}  // namespace zoo
