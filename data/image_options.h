#pragma once
// The "data" section of image classification: which image set, how it is split, normalised
// and augmented. A checkpoint's config.json keeps it, so inference normalises as training did.
#include <cstdint>
#include <string>
#include <vector>

#include "core/options.h"
#include "core/test_time_views.h"

namespace zoo::data {

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
  int64_t test_time_shift = 0;    // ... and the image moved this many pixels each way; 0 = off
  double mixup_alpha = 0.0;       // Mixup's Beta(alpha, alpha); 0 = off
  double cutmix_alpha = 0.0;      // CutMix's Beta(alpha, alpha); 0 = off
  double mix_prob = 1.0;          // share of training images mixed when either is on

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
    v("test_time_shift", test_time_shift,
      "evaluation and zoo classify also average the image moved this many pixels up, down, left and right "
      "(black entering at the edge, as random_crop_padding pads), mirrored too with test_time_hflip; 0 = off",
      between(0, 64));
    v("mixup_alpha", mixup_alpha,
      "Mixup (Zhang et al. 2018): a training image becomes lam * itself + (1 - lam) * its partner in the batch "
      "(image B-1-i), lam ~ Beta(alpha, alpha), and the loss weighs the two labels by lam and 1 - lam "
      "(0.2-1.0 usual; timm's default 0.8); 0 = off",
      between(0, 100));
    v("cutmix_alpha", cutmix_alpha,
      "CutMix (Yun et al. 2019): a box of about 1 - lam of the image, lam ~ Beta(alpha, alpha), is pasted from "
      "its partner in the batch and the labels are weighed by the areas (1.0 usual); with mixup_alpha too, each "
      "mixed image takes one of the two with even odds; 0 = off",
      between(0, 100));
    v("mix_prob", mix_prob, "probability that a training image is mixed when mixup_alpha or cutmix_alpha is set",
      between(0, 1));
  }
  /// Fills mean/std from the data set when empty and checks their lengths.
  void resolve(int64_t channels);
  /// Black (pixel value 0) after normalisation, per channel: -mean / std.
  std::vector<double> normalized_black() const;
  /// The views evaluation and inference average (test_time_hflip, test_time_shift; black fill).
  TestTimeViews test_time_views() const { return {test_time_hflip, test_time_shift, normalized_black()}; }
};

}  // namespace zoo::data
