#pragma once
// What a task can do beyond training and evaluation, as the CLI sees it: `zoo classify`
// asks a task for its ImageClassifier, `zoo translate` for its Translator (Task::
// image_classifier(), Task::translator()). Text generation has its predictor without the
// task (predict/text_generator.h). A new task offers a capability by implementing
// the interface; the commands never name a task class.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/generation.h"

namespace zoo {

class ImageClassifier {
 public:
  virtual ~ImageClassifier() = default;
  /// Channels and side of the square images the model takes.
  virtual int64_t image_channels() const = 0;
  virtual int64_t image_size() const = 0;
  /// Class names by index ("LABEL_i" where the model has none).
  virtual std::vector<std::string> label_names() const = 0;
  /// uint8 images (B, C, S, S) on the CPU -> class probabilities (B, labels) on the CPU,
  /// preprocessed and predicted as the task evaluates.
  virtual torch::Tensor probabilities(const torch::Tensor& images) = 0;
};

/// A model that labels texts (zoo classify on text).
class TextClassifier {
 public:
  virtual ~TextClassifier() = default;
  virtual std::vector<std::string> label_names() const = 0;
  /// Raw texts -> class probabilities (texts, labels) on the CPU, tokenised as in training.
  virtual torch::Tensor text_probabilities(const std::vector<std::string>& texts) = 0;
};

/// One translated sentence, with what an alignment heat map needs.
struct Translation {
  std::string text;                        ///< target words joined by spaces; "" for no input
  std::vector<std::string> source_tokens;  ///< <start>, the source tokens (as typed), <end>
  std::vector<std::string> target_tokens;  ///< generated words, then <end> when finished
  torch::Tensor attention;  ///< (target_tokens, source_tokens) float on the CPU; undefined
                            ///< when the input was empty or the model has no attention rows
  double score = 0;         ///< length-normalised log-probability
  bool finished = false;    ///< false: cut at the length limit
};

class Translator {
 public:
  virtual ~Translator() = default;
  /// Search settings with the model's <start>/<end> ids; `max_length` counts <end>.
  virtual models::GenerationOptions generation_options(int64_t num_beams, int64_t max_length,
                                                       double length_penalty = 1.0) const = 0;
  /// Translates raw sentences (one Translation per sentence, in order).
  virtual std::vector<Translation> translate(const std::vector<std::string>& sentences,
                                             const models::GenerationOptions& options,
                                             const models::Constraint* constraint = nullptr,
                                             int64_t batch_size = 64) = 0;
  /// A target sentence as the ids the model can produce (no <start>/<end>), for constrained
  /// decoding; std::nullopt with the reason in `why` when it cannot be produced.
  virtual std::optional<std::vector<int64_t>> encode_target(const std::string& sentence,
                                                            std::string* why = nullptr) const = 0;
  /// The id that ends a generated sentence.
  virtual int64_t eos_id() const = 0;
  /// Which attention head the translations' attention rows show (-1: the mean of the heads);
  /// throws zoo::Error naming the model's heads for one it does not have.
  virtual void select_attention_head(int64_t head) = 0;
};

}  // namespace zoo
