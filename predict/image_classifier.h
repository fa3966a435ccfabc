#pragma once
// Image classification for inference (zoo classify on images), built from a checkpoint or a
// Hugging Face ViT directory alone: the model and the normalisation it was trained with.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/image_options.h"
#include "io/inference_model.h"
#include "models/vit.h"

namespace zoo {

class ImageClassifier {
 public:
  ImageClassifier(models::ViTForImageClassification model, data::ImageDataOptions data);
  /// Channels and side of the square images the model takes.
  int64_t image_channels() const { return model_->options().num_channels; }
  int64_t image_size() const { return model_->options().image_size; }
  /// Class names by index ("LABEL_i" where the model has none).
  std::vector<std::string> label_names() const { return model_->label_names(); }
  /// uint8 images (B, C, S, S) on the CPU -> class probabilities (B, labels) on the CPU,
  /// normalised and predicted as the task evaluates (data.test_time_hflip included).
  torch::Tensor probabilities(const torch::Tensor& images);

 private:
  models::ViTForImageClassification model_;
  data::ImageDataOptions data_;
};

/// The image classifier of `dir` (a zoo checkpoint of task image_classification, or a Hugging
/// Face ViT directory, whose preprocessor_config.json gives the normalisation) on `device`.
/// Errors name the directory and what it holds instead.
/// `quantize`: "" (fp32) or "int8" (models/quantize.h, CPU only).
std::unique_ptr<ImageClassifier> load_image_classifier(const std::string& dir, const torch::Device& device,
                                                       const std::string& quantize = "");
/// The same from a directory already opened (its task must be image_classification).
std::unique_ptr<ImageClassifier> load_image_classifier(const InferenceSource& opened, const torch::Device& device,
                                                       const std::string& quantize = "");

}  // namespace zoo
