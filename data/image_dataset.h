#pragma once
// An image set as a dataset, image classification's data: the training and test images of
// Fashion-MNIST / MNIST (IDX) or CIFAR-10 (data/images.h), a validation split held out of the
// training images by a fixed seed (the same for every run, whatever train.seed), the
// training batches augmented from the batch's seed (random crop, horizontal flip, random
// erasing), normalised as data/image_options.h says, and named batches of pixel_values and
// labels.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/image_options.h"
#include "data/images.h"

namespace zoo::data {

/// What the model reads: images of `channels` x `image_size` x `image_size`, labels below
/// `num_labels`, and the class names (empty: the data set's own).
struct ImageModelShape {
  int64_t channels = 1, image_size = 28, num_labels = 10;
  std::vector<std::string> labels;
};

class ImageDataset {
 public:
  ImageDataset(ImageDataOptions data, ImageModelShape model);

  /// Reads the training images, checks them against the model's shape and labels, and holds
  /// out data.validation_size of them; errors name the data path and the config keys.
  void load_training();
  int64_t train_size() const { return train_index_.defined() ? train_index_.size(0) : 0; }
  /// The training images `indices`, augmented from `seed`.
  Batch train_batch(const std::vector<int64_t>& indices, uint64_t seed) const;

  /// Loads split "valid" or "test" (its first data.max_eval_samples images) in consecutive
  /// batches.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size);
  /// A batch of the split eval_plan() loaded last.
  Batch eval_batch(const std::vector<int64_t>& indices) const;

  /// uint8 (B, C, H, W) -> normalised float, as the model reads them.
  torch::Tensor preprocess(const torch::Tensor& images) const;

 private:
  std::unique_ptr<ImageSet> load_split(const std::string& split) const;
  const ImageSet& test_set();

  ImageDataOptions data_;
  ImageModelShape model_;
  std::unique_ptr<ImageSet> train_, test_;
  torch::Tensor train_index_, valid_index_;  // int64 indices into train_
  torch::Tensor eval_images_, eval_labels_;  // the split eval_plan() loaded last: uint8 images, labels
};

}  // namespace zoo::data
