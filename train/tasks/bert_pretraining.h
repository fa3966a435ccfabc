#pragma once
// BERT pretraining (document 000's BertTrainer): masked-language-model + next-sentence
// prediction on the items of IMDB reviews (data/bert_items.h). The loss is the MLM
// cross-entropy over the selected tokens plus the NSP cross-entropy; both parts and both
// accuracies are logged apart. The vocabulary is saved in every checkpoint as a tokenizer
// (data/basic_english_tokenizer.h: vocab.txt + tokenizer_config.json), the sentence length
// and the tokenizer's fingerprint in the config.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/bert_items.h"
#include "data/basic_english_tokenizer.h"
#include "models/bert.h"
#include "models/bert_electra.h"
#include "train/task.h"

namespace zoo {

using data::BertPretrainingDataOptions;

class BertPretrainingTask : public Task {
 public:
  BertPretrainingTask(const json& config, const TaskContext& context, const std::string& checkpoint_dir = "");

  std::shared_ptr<torch::nn::Module> model() override {
    return electra_ ? std::static_pointer_cast<torch::nn::Module>(electra_.ptr()) : model_.ptr();
  }
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return items_->train_size(); }
  /// input_ids, token_type_ids, attention_mask, labels (the MLM targets, -100 where not
  /// selected) and next_sentence_label (0 = is next), as Hugging Face's BertForPreTraining.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  /// MLM + NSP cross-entropy; parts "mlm" and "nsp". With model.pretraining_head electra: the
  /// generator's MLM cross-entropy + 50 x the discriminator's replaced-or-not binary
  /// cross-entropy over every token (ELECTRA's weight); parts "mlm" and "rtd".
  Loss loss(const Batch& batch) override;
  /// MLM alone: slices of a batch, each a mean over its masked tokens.
  bool splittable() const override;
  double loss_terms(const Batch& batch) const override;
  /// "valid": the held-out items.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  /// loss, loss_mlm, mlm_accuracy (on the selected tokens), examples; with NSP also loss_nsp
  /// and nsp_accuracy; with ELECTRA loss_rtd, rtd_accuracy (over every token) and replaced
  /// (the share of tokens the generator's samples changed).
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_eval_split() const override { return "valid"; }
  /// The word tokenizer: vocab.txt (one token per line, the line number is its id) and
  /// tokenizer_config.json.
  void save_assets(const std::string& dir) const override;

  const data::BertExamples& examples() const { return items_->examples(); }

 private:
  BertPretrainingDataOptions data_;
  std::optional<data::BertItems> items_;
  std::unique_ptr<data::BasicEnglishTokenizer> tokenizer_;  // the reviews' vocabulary, or a checkpoint's
  int64_t positions_ = 0;  // model.max_position_embeddings
  Loss electra_loss(const Batch& batch, int64_t position_offset);
  Metrics electra_eval_sums(const Batch& batch);
  Metrics electra_metrics(const Metrics& sums) const;

  models::BertForPreTraining model_{nullptr};             // model.pretraining_head mlm
  models::BertForReplacedTokenDetection electra_{nullptr};  // or electra
};

}  // namespace zoo
