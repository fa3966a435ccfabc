#pragma once
// Text classification with BERT (IMDB sentiment; any folder-per-label tree or two-column CSV):
// the texts encoded by data/classification_text.h -> BertForSequenceClassification -> the
// label. The vocabulary is saved as vocab.txt in every checkpoint; fine-tuning takes it, and
// the body's weights, from the pretrained checkpoint (train.init_from). Inference is
// predict/text_classifier.h.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/labeled_text_dataset.h"
#include "models/bert.h"
#include "train/task.h"

namespace zoo {

using data::TextClassificationDataOptions;

class TextClassificationTask : public Task {
 public:
  TextClassificationTask(const json& config, const TaskContext& context, const std::string& checkpoint_dir = "");

  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return dataset_->train_size(); }
  /// The default seeded permutation, or batches of similar lengths with data.group_by_length.
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const override;
  /// input_ids, attention_mask, labels.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  /// Cross-entropy of the labels; with train.r_drop_alpha > 0, R-Drop's loss of two passes
  /// (zoo::r_drop_loss; parts "ce", "kl").
  Loss loss(const Batch& batch) override;
  /// "valid" or "test", in batches of similar lengths.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  /// loss_sum, correct, examples.
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  torch::Tensor eval_logits(const std::string& split, const Batch& batch) override;
  /// loss, accuracy, examples.
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_best_metric() const override { return "accuracy"; }
  void save_assets(const std::string& dir) const override;

  /// A text as the ids the model reads: [CLS] tokens [SEP], cut to data.max_length.
  std::vector<int64_t> encode(const std::string& text) const { return dataset_->encoder().encode(text); }

 private:
  /// loss() with train.r_drop_alpha > 0: one forward pass of input_ids and attention_mask twice over.
  Loss loss_twice(const Batch& batch);

  TextClassificationDataOptions data_;
  std::optional<data::LabeledTextDataset> dataset_;
  std::string eval_split_;  // the split eval_plan() planned last
  models::BertForSequenceClassification model_{nullptr};
};

}  // namespace zoo
