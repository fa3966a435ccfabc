#pragma once
// Text classification for inference (zoo classify on texts), built from a checkpoint directory
// alone: the BERT sequence classifier and the encoder it was trained with
// (data/classification_text.h), its vocab.txt checked against the fingerprint it was saved with.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/classification_text.h"
#include "io/inference_model.h"
#include "models/bert.h"

namespace zoo {

class TextClassifier {
 public:
  TextClassifier(models::BertForSequenceClassification model, data::ClassificationTextEncoder encoder,
                 std::vector<std::string> labels);
  /// Class names by index.
  const std::vector<std::string>& label_names() const { return labels_; }
  /// Raw texts -> class probabilities (texts, labels) on the CPU, encoded as in training.
  torch::Tensor probabilities(const std::vector<std::string>& texts);

 private:
  models::BertForSequenceClassification model_;
  data::ClassificationTextEncoder encoder_;
  std::vector<std::string> labels_;
};

/// The text classifier of `dir` (a zoo checkpoint of task text_classification) on `device`.
/// Errors name the directory and what it holds instead.
/// `quantize`: "" (fp32) or "int8" (models/quantize.h, CPU only).
std::unique_ptr<TextClassifier> load_text_classifier(const std::string& dir, const torch::Device& device,
                                                     const std::string& quantize = "");
/// The same from a directory already opened (its task must be text_classification).
std::unique_ptr<TextClassifier> load_text_classifier(const InferenceSource& opened, const torch::Device& device,
                                                     const std::string& quantize = "");

}  // namespace zoo
