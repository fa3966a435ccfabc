#include "data/image_dataset.h"

#include <cmath>

#include "core/paths.h"

namespace zoo::data {

ImageDataset::ImageDataset(ImageDataOptions data, ImageModelShape model) : data_(std::move(data)), model_(std::move(model)) {}

std::unique_ptr<ImageSet> ImageDataset::load_split(const std::string& split) const {
  const std::string path = existing_data_path(data_.path);
  if (data_.dataset == "cifar10") return std::make_unique<ImageSet>(load_cifar10(path, split));
  std::vector<std::string> names = model_.labels;
  if (names.empty()) names = data_.dataset == "mnist" ? mnist_classes() : fashion_mnist_classes();
  return std::make_unique<ImageSet>(load_mnist_like(path, split, names));
}

const ImageSet& ImageDataset::test_set() {
  if (!test_) test_ = load_split("test");
  return *test_;
}

void ImageDataset::load_training() {
  if (!train_) train_ = load_split("train");
  const auto& set = *train_;
  const auto& o = model_;
  if (set.images.size(1) != o.channels || set.images.size(2) != o.image_size || set.images.size(3) != o.image_size)
    throw Error(cat(data_.path, ": images are ", set.images.size(1), "x", set.images.size(2), "x",
                    set.images.size(3), " (CxHxW) but the model expects ", o.channels, "x", o.image_size, "x",
                    o.image_size, "; set model.num_channels / model.image_size"));
  const int64_t max_label = set.labels.max().item<int64_t>();
  if (max_label >= o.num_labels)
    throw Error(cat(data_.path, ": labels go up to ", max_label, " but model.num_labels is ", o.num_labels));
  const int64_t n = set.images.size(0);
  if (data_.validation_size >= n)
    throw Error(cat("config: data.validation_size (", data_.validation_size, ") must be smaller than the ", n,
                    " training examples"));
  // The held-out split depends on the data only (fixed seed), not on train.seed, so every
  // run is validated on the same examples.
  auto perm = torch::randperm(n, at::detail::createCPUGenerator(20240601), torch::kLong);
  valid_index_ = std::get<0>(perm.narrow(0, 0, data_.validation_size).sort());
  train_index_ = std::get<0>(perm.narrow(0, data_.validation_size, n - data_.validation_size).sort());
  if (data_.max_train_samples > 0 && data_.max_train_samples < train_index_.size(0))
    train_index_ = train_index_.narrow(0, 0, data_.max_train_samples);
}

torch::Tensor ImageDataset::preprocess(const torch::Tensor& images) const {
  return to_float_normalized(images, data_.mean, data_.std);
}

Batch ImageDataset::train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  auto idx = train_index_.index_select(0, torch::tensor(indices, torch::kLong));
  auto images = train_->images.index_select(0, idx);
  auto labels = train_->labels.index_select(0, idx);
  auto gen = at::detail::createCPUGenerator(seed);
  if (data_.random_crop_padding > 0) images = random_crop(images, data_.random_crop_padding, gen);
  if (data_.horizontal_flip_prob > 0) images = random_hflip(images, data_.horizontal_flip_prob, gen);
  if (data_.random_erasing_prob > 0) {
    std::vector<double> fill;  // the mean colour: 0 after normalisation
    for (double m : data_.mean) fill.push_back(std::round(m * 255));
    images = random_erasing(images, data_.random_erasing_prob, fill, gen);
  }
  Batch batch{{{"pixel_values", preprocess(images)}, {"labels", labels}}, static_cast<int64_t>(indices.size()), seed};
  if (data_.mixup_alpha > 0 || data_.cutmix_alpha > 0) {  // after normalisation: Mixup blends what the model reads
    auto mixed = mix_images(batch["pixel_values"], {data_.mixup_alpha, data_.cutmix_alpha, data_.mix_prob}, gen);
    batch["pixel_values"] = mixed.images;
    batch.tensors["mix_labels"] = labels.flip(0);  // the partner of image i is image B-1-i
    batch.tensors["mix_lambda"] = mixed.lambda;
  }
  return batch;
}

std::vector<std::vector<int64_t>> ImageDataset::eval_plan(const std::string& split, int64_t batch_size) {
  torch::Tensor images, labels;
  if (split == "valid") {
    if (!valid_index_.defined()) load_training();
    if (valid_index_.size(0) == 0) throw Error("no validation split: data.validation_size is 0; use --split test");
    images = train_->images.index_select(0, valid_index_);
    labels = train_->labels.index_select(0, valid_index_);
  } else if (split == "test") {
    images = test_set().images;
    labels = test_set().labels;
  } else {
    throw Error(cat("unknown split '", split, "'; use valid or test"));
  }
  if (data_.max_eval_samples > 0 && data_.max_eval_samples < images.size(0)) {
    images = images.narrow(0, 0, data_.max_eval_samples);
    labels = labels.narrow(0, 0, data_.max_eval_samples);
  }
  eval_images_ = images;
  eval_labels_ = labels;
  return consecutive_batches(images.size(0), batch_size);
}

Batch ImageDataset::eval_batch(const std::vector<int64_t>& indices) const {
  auto rows = torch::tensor(indices, torch::kLong);
  return Batch{{{"pixel_values", preprocess(eval_images_.index_select(0, rows))}, {"labels", eval_labels_.index_select(0, rows)}},
               static_cast<int64_t>(indices.size()), 0};
}

}  // namespace zoo::data
