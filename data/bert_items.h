#pragma once
// BERT pretraining's data as a dataset: the "data" section, the reviews (IMDB folders or a CSV,
// data/reviews.h), the items built from them with document 000's semantics or the paper's
// segments (data/bert_examples.h) from the run's seed, the last data.validation_fraction of
// them held out, and named batches as Hugging Face's BertForPreTraining reads them:
// input_ids, token_type_ids, attention_mask, labels (the MLM targets, -100 where not
// selected) and next_sentence_label (0 = is next). With data.dynamic_masking a training
// batch is masked anew from its seed.
#include <cstdint>
#include <string>
#include <vector>

#include "core/options.h"
#include "data/batch.h"
#include "data/bert_examples.h"

namespace zoo::data {

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
  std::string mask_weighting = "uniform";
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
    v("max_reviews", max_reviews, "use N reviews only, taken in turn from each folder; 0 = all", at_least(0));
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
    v("mask_weighting", mask_weighting,
      "with dynamic_masking, which words the draw favours (data/mask_weights.h): uniform (the paper); frequency "
      "(count^-1/2: content words over \"the\" and \".\"); label_odds (words that tell the two labels of the "
      "labelled folders apart, e.g. train/pos and train/neg: task-guided masking; the model reads no label). "
      "Evaluation keeps the uniform fixed draw, so held-out MLM figures compare across weightings",
      one_of({"uniform", "frequency", "label_odds"}));
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

class BertItems {
 public:
  /// The label of a position whose token is not an MLM target.
  static constexpr int64_t kIgnore = -100;

  /// `seed`: the run's, from which the items and their static masks are drawn.
  BertItems(BertPretrainingDataOptions data, uint64_t seed);

  /// Reads the reviews and builds the items (with progress on stderr); errors name the path.
  void build();
  const BertExamples& examples() const { return examples_; }
  int64_t train_size() const { return train_items_; }
  /// Training items `indices`; the batch's `seed` draws the dynamic masks.
  Batch train_batch(const std::vector<int64_t>& indices, uint64_t seed) const;
  /// The held-out items in consecutive batches, and a batch of them.
  std::vector<std::vector<int64_t>> eval_plan(int64_t batch_size) const;
  Batch eval_batch(const std::vector<int64_t>& indices) const;

 private:
  Batch batch_of(const std::vector<int64_t>& items) const;
  void remask(Batch& batch) const;
  void weigh_masks(const std::vector<std::string>& reviews, const std::vector<std::string>& labels,
                   const std::string& where);

  BertPretrainingDataOptions data_;
  uint64_t seed_ = 0;
  BertExamples examples_;
  int64_t train_items_ = 0;
  std::vector<float> mask_weights_;  // per vocabulary id; empty = uniform
};

}  // namespace zoo::data
