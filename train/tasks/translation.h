#pragma once
// Chinese -> English translation (document 000): Tatoeba/Anki sentence pairs + any
// encoder-decoder model (models/encoder_decoder.h: the GRU with Bahdanau attention, the
// Transformer), built through the model registry and used only through that interface, so
// a new model type needs no change here. The task owns the padding-masked cross-entropy and
// the metrics: teacher-forced loss and perplexity, BLEU of greedy or beam decodes. The pair
// file, its split, the plans and batches are data/sentence_pair_dataset.h; the text side
// (preprocessing, tokenizers, Keras-style vocabularies) data/translation_text.h; inference
// predict/translator.h.
//
// Token ids are never assumed: pad is 0 (the Keras vocabulary's padding), <start> and <end>
// are looked up in the target vocabulary. What the task learns from the data goes into the
// model section under fixed names, which every translation model's options must accept:
// source_vocab_size, target_vocab_size, bos_id, eos_id and pad_id (0). So a checkpoint's
// config.json says what its source_vocab.json / target_vocab.json must hold.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/sentence_pair_dataset.h"
#include "data/translation_text.h"
#include "models/encoder_decoder.h"
#include "models/generation.h"
#include "train/task.h"

namespace zoo {

using data::TranslationDataOptions;

class TranslationTask : public Task {
 public:
  /// For training (`checkpoint_dir` empty): reads data.path, splits it, fits the
  /// vocabularies on the training split and completes config() with their sizes and the
  /// special ids. From a checkpoint: loads source_vocab.json / target_vocab.json from it and
  /// checks them against the model section; the pair file is read only by evaluate().
  TranslationTask(const json& config, const TaskContext& context, const std::string& checkpoint_dir = "");

  std::shared_ptr<torch::nn::Module> model() override { return model_->module(); }
  /// Writes train.tsv / valid.tsv / test.tsv into `output_dir` (when not empty).
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return dataset_->train_size(); }
  /// Length-bucketed batches (similar target, then source lengths), reshuffled every epoch:
  /// of `batch_size` pairs, or with data.batch_tokens of about that many tokens.
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch,
                                               int64_t batch_size) const override;
  /// input_ids (the source, B x S) and labels (the target, B x T, with <start>/<end>), int64,
  /// right-padded with 0; with data.sentencepiece_sampling_alpha the SentencePiece sides'
  /// segmentations sampled from `seed`.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  /// Token-level mean cross entropy of forward(src, tgt[:, :-1]) against tgt[:, 1:], padding
  /// ignored; teacher forcing with data.teacher_forcing_ratio drawn from batch.seed. With
  /// train.r_drop_alpha > 0, R-Drop's loss of two passes (zoo::r_drop_loss; parts "ce", "kl").
  Loss loss(const Batch& batch) override;
  /// Yes, as slices counted by their target tokens (loss_terms), unless teacher forcing draws
  /// from batch.seed or the model draws random numbers outside apply_dropout.
  bool splittable() const override;
  /// The batch's target tokens that are not padding: what loss() is a mean over.
  double loss_terms(const Batch& batch) const override;
  /// "valid" or "test", in batches of similar source lengths.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  /// input_ids and labels as for training.
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  /// The teacher-forced loss sum and target tokens, and the BLEU statistics of greedy/beam
  /// decodes against the preprocessed references, of all pairs and of those whose source is
  /// unseen (does not occur in the training split).
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  /// loss, perplexity (per target token), bleu, examples, and bleu_unseen_source /
  /// examples_unseen_source: BLEU on the pairs whose preprocessed source does not occur in the
  /// training split.
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_best_metric() const override { return "bleu"; }
  /// Yes: the others must be translation checkpoints with this one's split (data.path,
  /// num_examples, test_size, valid_size, split_seed) and tokenizers (their fingerprints).
  bool decode_as_ensemble(const std::vector<Task*>& others, const std::vector<std::string>& names) override;
  /// Writes the vocabularies and tokenizers (data::TranslationText::save).
  void save_assets(const std::string& dir) const override;

  /// The search settings of evaluation's decodes.
  models::GenerationOptions generation_options(int64_t num_beams, int64_t max_length) const;
  /// The source ids the model reads for a raw sentence (data::TranslationText::encode_source).
  std::vector<int64_t> encode_source(const std::string& sentence) const {
    return text_->encode_source(sentence, model_->max_positions());
  }
  models::EncoderDecoder& encoder_decoder() { return *model_; }
  const data::TranslationText& text() const { return *text_; }
  const data::Vocab& source_vocab() const { return text_->source_vocab(); }
  const data::Vocab& target_vocab() const { return text_->target_vocab(); }
  const TranslationDataOptions& data_options() const { return data_; }
  /// The split read from data.path (empty until training or evaluation needed it).
  const data::Split& split() const { return dataset_->split(); }
  int64_t bos_id() const { return text_->bos_id(); }
  int64_t eos_id() const { return text_->eos_id(); }

 private:
  /// loss() with train.r_drop_alpha > 0: src (B, S), tgt_in and tgt_out (B, T).
  Loss loss_twice(const torch::Tensor& src, const torch::Tensor& tgt_in, const torch::Tensor& tgt_out);

  TranslationDataOptions data_;
  std::shared_ptr<models::EncoderDecoder> model_;
  std::optional<data::TranslationText> text_;
  std::optional<data::SentencePairDataset> dataset_;  // reads through *text_
  std::string eval_split_;                            // the split eval_plan() loaded last
};

}  // namespace zoo
