#pragma once
// Image classification: an image set (Fashion-MNIST, MNIST, CIFAR-10) + a ViT,
// cross-entropy loss, accuracy.
#include <string>
#include <vector>

#include "data/images.h"
#include "models/vit.h"
#include "train/capabilities.h"
#include "train/task.h"

namespace zoo {

/// The "data" section of image-classification configs.
struct ImageDataOptions {
  std::string dataset = "fashion_mnist";
  std::string path = "/usr/share/datasets/fashion-mnist";
  int64_t validation_size = 5000;  // held out of the training files, same for every seed
  std::vector<double> mean;  // empty: the data set's usual statistics
  std::vector<double> std;
  int64_t random_crop_padding = 0;
  double horizontal_flip_prob = 0.0;
  double random_erasing_prob = 0.0;
  int64_t max_train_samples = 0;  // 0: all
  int64_t max_eval_samples = 0;   // 0: all
  bool test_time_hflip = false;   // evaluation/classification average the image and its mirror

  template <class V>
  void fields(V& v) {
    v("dataset", dataset, "file layout of data.path", one_of({"fashion_mnist", "mnist", "cifar10"}));
    v("path", path,
      "folder with the data set files; without a leading /, ./, ../ or ~/ it is looked up in the "
      "data home (ZOO_DATA_DIR)");
    v("validation_size", validation_size, "training examples held out for evaluation during training", at_least(0));
    v("mean", mean, "per-channel mean for normalisation (empty: data set default)");
    v("std", std, "per-channel std for normalisation (empty: data set default)");
    v("random_crop_padding", random_crop_padding, "pad-and-random-crop augmentation; 0 = off", between(0, 64));
    v("horizontal_flip_prob", horizontal_flip_prob, "probability of a horizontal flip", between(0, 1));
    v("random_erasing_prob", random_erasing_prob,
      "probability of erasing a random rectangle (2-33% of the image) to the mean colour", between(0, 1));
    v("max_train_samples", max_train_samples, "use only the first N training examples; 0 = all", at_least(0));
    v("max_eval_samples", max_eval_samples, "use only the first N evaluation examples; 0 = all", at_least(0));
    v("test_time_hflip", test_time_hflip,
      "evaluation and zoo classify average the probabilities of each image and its mirror image");
  }
  /// Fills mean/std from the data set when empty and checks their lengths.
  void resolve(int64_t channels);
};

class ImageClassificationTask : public Task, public ImageClassifier {
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
  ImageClassifier* image_classifier() override { return this; }

  // ImageClassifier
  int64_t image_channels() const override { return model_->options().num_channels; }
  int64_t image_size() const override { return model_->options().image_size; }
  std::vector<std::string> label_names() const override;
  torch::Tensor probabilities(const torch::Tensor& images) override;

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
