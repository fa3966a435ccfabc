#pragma once
// Sentence embeddings for inference (zoo::Encoder, zoo serve's /v1/embeddings): a BERT
// checkpoint (text classification or pretraining) or a Hugging Face BERT directory, read as
// the last layer's hidden states and pooled per text.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/classification_text.h"
#include "models/bert.h"

namespace zoo {

class TextEncoder {
 public:
  /// `owner` holds `bert` (the checkpoint's whole model: its weights stay alive).
  TextEncoder(std::shared_ptr<torch::nn::Module> owner, models::BertModel bert, data::ClassificationTextEncoder encoder);
  /// [texts, hidden] float on the CPU: the mean of each text's token states ([CLS] and [SEP]
  /// included, padding left out) or, with `mean` false, its [CLS] state. Texts longer than the
  /// model's positions are cut.
  torch::Tensor embed(const std::vector<std::string>& texts, bool mean);
  /// Tokens the model reads for `text` ([CLS] and [SEP] included).
  int64_t count_tokens(const std::string& text) const { return static_cast<int64_t>(encoder_.encode(text).size()); }

 private:
  std::shared_ptr<torch::nn::Module> owner_;
  models::BertModel bert_;
  data::ClassificationTextEncoder encoder_;
};

/// The BERT body of `dir` (a zoo checkpoint of task text_classification or bert_pretraining,
/// or such a Hugging Face directory) on `device`, with its tokenizer checked against the
/// fingerprint it was trained with; a directory of another family is a zoo::Error naming it.
/// `quantize`: "" (fp32) or "int8" (models/quantize.h, CPU only).
std::unique_ptr<TextEncoder> load_text_encoder(const std::string& dir, const torch::Device& device,
                                               const std::string& quantize = "");

}  // namespace zoo
