#pragma once
// Sentence pairs as a dataset, translation's data: the pair file (data/pairs.h) read and
// split deterministically by data.split_seed (or, away from it, the split a training run
// wrote beside its checkpoints), the training pairs encoded once through both sides'
// tokenizers (data/translation_text.h) and dropped when longer than the limits (with subword
// sampling, their SentencePiece sides segmented anew in every batch), the plans of
// an epoch (length buckets of pairs, or of about data.batch_tokens tokens, reshuffled every
// epoch) and of an evaluation split (buckets of similar source lengths), and named batches
// of input_ids (the source) and labels (the target with <start>/<end>), right-padded with 0.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/pairs.h"
#include "data/translation_text.h"

namespace zoo::data {

class SentencePairDataset {
 public:
  /// `text`: both sides' tokenizers, kept by reference (fitted on split().train for
  /// training). `checkpoint_dir`: the checkpoint evaluated, whose run directory may hold the
  /// split ("" when training).
  SentencePairDataset(TranslationDataOptions data, const TranslationText& text, std::string checkpoint_dir);

  /// Reads data.path and splits it (once); errors name the file.
  void load_split();
  const Split& split() const { return split_; }
  /// Writes train.tsv / valid.tsv / test.tsv into `dir`.
  void write_split(const std::string& dir) const { data::write_split(split_, dir); }

  /// Encodes the training pairs (once), dropping those longer than data.max_source_length /
  /// max_target_length or the model's `max_positions` (0: none), with a note on stderr.
  void encode_training(int64_t max_positions);
  int64_t train_size() const { return static_cast<int64_t>(train_src_.size()); }
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const;
  /// The encoded pairs; with subword sampling (TranslationText::samples_source / samples_target)
  /// the sampling sides segmented anew, drawn from `seed` (the best segmentation where a sample
  /// is longer than the model's positions). Lengths, buckets and limits stay the best
  /// segmentation's.
  Batch train_batch(const std::vector<int64_t>& indices, uint64_t seed) const;

  /// Loads "valid", "test" or "train" (its first data.max_eval_samples pairs), the sources
  /// encoded for a model of `max_positions`, and plans its batches.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size, int64_t max_positions);
  /// A batch of the split eval_plan() loaded last, and each pair's BLEU reference and whether
  /// its source is unseen in training.
  Batch eval_batch(const std::vector<int64_t>& indices) const;
  const std::string& reference(int64_t example) const { return eval_references_.at(static_cast<size_t>(example)); }
  bool unseen(int64_t example) const { return eval_unseen_.at(static_cast<size_t>(example)); }

 private:
  std::vector<SentencePair> eval_pairs(const std::string& split);
  void resample(const std::vector<int64_t>& indices, uint64_t seed, std::vector<std::vector<int64_t>>& src,
                std::vector<std::vector<int64_t>>& tgt) const;
  const std::set<std::string>& training_sources();

  TranslationDataOptions data_;
  const TranslationText* text_;
  std::string checkpoint_dir_;
  bool split_loaded_ = false;
  Split split_;
  std::vector<std::vector<int64_t>> train_src_, train_tgt_;  // encoded training pairs
  std::vector<size_t> train_pair_;                           // each one's pair in split_.train
  int64_t max_positions_ = 0;                                // encode_training's
  std::vector<int64_t> train_order_key_;                     // bucketing key per pair
  std::vector<int64_t> train_cost_;                          // longest side in tokens per pair
  std::optional<std::set<std::string>> training_sources_;    // see training_sources()
  // The split eval_plan() loaded last: encoded sources and targets, BLEU references, and
  // whether each source is unseen in training.
  std::vector<std::vector<int64_t>> eval_src_, eval_tgt_;
  std::vector<std::string> eval_references_;
  std::vector<bool> eval_unseen_;
};

}  // namespace zoo::data
