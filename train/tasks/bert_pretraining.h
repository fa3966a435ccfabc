#pragma once
// BERT pretraining (document 000's BertTrainer): masked-language-model + next-sentence
// prediction on examples built with IMDBBertDataset's semantics (data/bert_examples.h) from
// IMDB reviews (the archive's folders or the Kaggle CSV, data/reviews.h). The loss is the
// MLM cross-entropy over the selected tokens plus the NSP cross-entropy; both parts and both
// accuracies are logged apart. The vocabulary is saved in every checkpoint as a word tokenizer
// (data/basic_english_tokenizer.h: vocab.txt + tokenizer_config.json), the sentence length and the
// tokenizer's fingerprint in the config.
#include <memory>
#include <string>
#include <vector>

#include "data/bert_examples.h"
#include "data/basic_english_tokenizer.h"
#include "models/bert.h"
#include "train/task.h"

namespace zoo {

struct BertPretrainingDataOptions {
  std::string path;  // required for training
  std::vector<std::string> folders = {"train/pos", "train/neg", "test/pos", "test/neg"};
  std::string text_column = "review";
  int64_t max_reviews = 0;
  std::string masking = "bert";
  double mask_probability = 0.15;
  int64_t min_freq = 2;
  double length_percentile = 70;
  std::string layout = "sentence_pairs";
  int64_t max_length = 256;
  std::string position_offset = "zero";
  bool next_sentence_prediction = true;
  bool dynamic_masking = false;
  double validation_fraction = 0.02;
  bool strict = false;
  bool replace_invalid_utf8 = false;
  int64_t sentence_length = 0;  // filled in by training
  std::string tokenizer_fingerprint;  // filled in by training

  template <class V>
  void fields(V& v) {
    v("path", path,
      "the IMDB folder (aclImdb, with data.folders below it) or a CSV file with a header (Kaggle's "
      "\"IMDB Dataset.csv\"); without a leading /, ./, ../ or ~/ looked up in the data home "
      "(tools/fetch_data.sh imdb puts imdb/aclImdb there)");
    v("folders", folders, "with a folder path: the sub-folders whose *.txt files are the reviews, in this order");
    v("text_column", text_column, "with a CSV path: the column holding the text");
    v("max_reviews", max_reviews, "use the first N reviews only; 0 = all", at_least(0));
    v("masking", masking,
      "bert: 15% of the tokens, 80% [MASK] / 10% random / 10% unchanged (the paper); document: document "
      "000's code (round(15%) draws with replacement, 80% [MASK] / 20% random)",
      one_of({"bert", "document"}));
    v("mask_probability", mask_probability, "share of each sentence's tokens selected for MLM", between(0, 1));
    v("min_freq", min_freq, "tokens seen fewer times become [UNK]", at_least(1));
    v("length_percentile", length_percentile, "sentence length: this percentile of the sentences' word counts",
      between(1, 100));
    v("layout", layout,
      "sentence_pairs: document 000's items ([CLS] sentence [SEP] [CLS] sentence, each cut or padded to the "
      "sentence length); segments: the BERT paper's ([CLS] A [SEP] B [SEP] from consecutive windows of a review, "
      "up to data.max_length tokens), so the model sees the lengths it is fine-tuned on",
      one_of({"sentence_pairs", "segments"}));
    v("max_length", max_length, "segments: the width of an item in tokens", at_least(5));
    v("position_offset", position_offset,
      "zero: items sit at positions 0 .. width-1; random: each training batch starts at a random position "
      "(the same for its rows), so short items train the whole position table (model.max_position_embeddings) "
      "for a later phase or fine-tuning on longer texts. Evaluation uses zero",
      one_of({"zero", "random"}));
    v("next_sentence_prediction", next_sentence_prediction,
      "true: MLM + NSP, half the items pairing A with a B from another review (the BERT paper, document 000); "
      "false: MLM only, B always the text after A (RoBERTa found NSP does not help); needs data.layout segments");
    v("dynamic_masking", dynamic_masking,
      "false: each item's masked positions are drawn once; true: a new draw for every training batch, from the "
      "batch's seed (RoBERTa's dynamic masking; evaluation keeps the fixed draw)");
    v("validation_fraction", validation_fraction, "the last share of the examples held out for validation",
      between(0, 0.5));
    v("strict", strict, "a bad review (empty, invalid UTF-8, malformed CSV row) stops the run instead of being skipped");
    v("replace_invalid_utf8", replace_invalid_utf8, "replace invalid UTF-8 bytes with U+FFFD instead");
    v("sentence_length", sentence_length, "filled in by training: the sentence length the model was trained with",
      at_least(0));
    v("tokenizer_fingerprint", tokenizer_fingerprint,
      "filled in by training: the vocabulary's fingerprint; a checkpoint refuses another vocab.txt");
  }
};

class BertPretrainingTask : public Task {
 public:
  BertPretrainingTask(const json& config, const TaskContext& context, const std::string& checkpoint_dir = "");

  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return train_items_; }
  /// input_ids, token_type_ids, attention_mask, labels (the MLM targets, -100 where not
  /// selected) and next_sentence_label (0 = is next), as Hugging Face's BertForPreTraining.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  /// MLM + NSP cross-entropy; parts "mlm" and "nsp".
  Loss loss(const Batch& batch) override;
  /// "valid": the held-out items.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  /// loss, loss_mlm, mlm_accuracy (on the selected tokens), examples; with NSP also loss_nsp
  /// and nsp_accuracy.
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_eval_split() const override { return "valid"; }
  /// The word tokenizer: vocab.txt (one token per line, the line number is its id) and
  /// tokenizer_config.json.
  void save_assets(const std::string& dir) const override;

  const data::BertExamples& examples() const { return examples_; }

 private:
  void build_examples();
  Batch batch_of(const std::vector<int64_t>& items) const;
  /// data.dynamic_masking: the batch's MLM positions drawn anew from its seed.
  void remask(Batch& batch) const;
  BertPretrainingDataOptions data_;
  data::BertExamples examples_;
  std::unique_ptr<data::BasicEnglishTokenizer> tokenizer_;  // the reviews' vocabulary, or a checkpoint's
  int64_t train_items_ = 0;
  int64_t positions_ = 0;  // model.max_position_embeddings
  models::BertForPreTraining model_{nullptr};
};

}  // namespace zoo
