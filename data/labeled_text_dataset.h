#pragma once
// Labelled texts as a dataset, text classification's data: the texts of label folders or a
// CSV (data/reviews.h), the validation texts held out of the training ones by
// data.split_seed, each text encoded once (data/classification_text.h), the plans of an
// epoch (a seeded permutation, or batches of similar lengths with data.group_by_length) and
// of an evaluation split (longest first: a batch pads to its longest text), and named batches
// of input_ids, attention_mask and labels.
#include <cstdint>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/classification_text.h"
#include "data/reviews.h"

namespace zoo::data {

class LabeledTextDataset {
 public:
  LabeledTextDataset(TextClassificationDataOptions data, ClassificationTextEncoder encoder);

  const ClassificationTextEncoder& encoder() const { return encoder_; }
  /// The vocabulary's facts and data.labels (see ClassificationTextEncoder::facts).
  DataFacts facts() const { return encoder_.facts(data_.labels); }

  /// Reads the training texts and holds out the validation ones; errors name the file, and
  /// an empty training or validation split is an error before any training.
  void load_training();
  int64_t train_size() const { return static_cast<int64_t>(train_.size()); }
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const;
  Batch train_batch(const std::vector<int64_t>& indices) const { return batch_of(train_, indices); }

  /// Loads split "valid" (the held-out texts) or "test" (data.max_eval_samples of them drawn
  /// across the labels) and plans its batches.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size);
  /// A batch of the split eval_plan() loaded last.
  Batch eval_batch(const std::vector<int64_t>& indices) const { return batch_of(*eval_examples_, indices); }

 private:
  struct Example {
    std::vector<int64_t> ids;
    int64_t label;
  };
  std::vector<LabeledText> read(const std::string& split) const;
  std::vector<Example> examples_of(const std::vector<LabeledText>& texts) const;
  Batch batch_of(const std::vector<Example>& examples, const std::vector<int64_t>& indices) const;

  TextClassificationDataOptions data_;
  ClassificationTextEncoder encoder_;
  std::vector<Example> train_, valid_, test_;
  const std::vector<Example>* eval_examples_ = &valid_;
};

}  // namespace zoo::data
