#pragma once
// Chinese -> English translation (document 000): Tatoeba/Anki sentence pairs + any
// encoder-decoder model (models/encoder_decoder.h: the GRU with Bahdanau attention, the
// Transformer), built through the model registry and used only through that interface, so
// a new model type needs no change here. The task owns the data side (pair file,
// deterministic split, document-000 preprocessing, Keras-style vocabularies: characters
// for Chinese, words for English), the padding-masked cross-entropy, and the metrics:
// teacher-forced loss and perplexity, BLEU of greedy or beam decodes.
//
// Token ids are never assumed: pad is 0 (the Keras vocabulary's padding), <start> and <end>
// are looked up in the target vocabulary. What the task learns from the data goes into the
// model section under fixed names, which every translation model's options must accept:
// source_vocab_size, target_vocab_size, bos_id, eos_id and pad_id (0). So a checkpoint's
// config.json says what its source_vocab.json / target_vocab.json must hold.
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "data/pairs.h"
#include "data/vocab.h"
#include "models/encoder_decoder.h"
#include "models/generation.h"
#include "train/capabilities.h"
#include "train/task.h"
#include "train/tasks/translation_text.h"

namespace zoo {

/// The "data" section of translation configs.
struct TranslationDataOptions {
  std::string path;  // required for training and evaluation
  bool strict = false;
  int64_t num_examples = 0;  // 0: every pair of the file
  int64_t test_size = 1000;
  int64_t valid_size = 1000;
  int64_t split_seed = 1234;
  int64_t source_num_words = 0;  // 0: no limit
  int64_t target_num_words = 0;
  std::string oov_token = "<unk>";
  int64_t max_source_length = 0;  // 0: no limit
  int64_t max_target_length = 0;
  double teacher_forcing_ratio = 1.0;
  int64_t eval_beam_size = 1;
  int64_t eval_max_length = 50;
  int64_t max_eval_samples = 0;  // 0: the whole split
  bool truncate_source = false;
  int64_t batch_tokens = 0;  // 0: batches of train.per_device_train_batch_size pairs
  std::string source_tokenizer = "char";
  std::string target_tokenizer = "word";
  bool joint_vocabulary = false;
  std::string sentencepiece_model_type = "unigram";
  int64_t sentencepiece_vocab_size = 8000;
  std::string source_tokenizer_fingerprint;  // filled in by training
  std::string target_tokenizer_fingerprint;

  template <class V>
  void fields(V& v) {
    v("path", path,
      "pair file, English<TAB>Chinese[<TAB>attribution] per line (Tatoeba/Anki cmn.txt; "
      "tools/fetch_data.sh cmn-eng); without a leading /, ./, ../ or ~/ it is looked up in the "
      "data home (ZOO_DATA_DIR)");
    v("strict", strict, "stop at the first malformed line instead of skipping and counting it");
    v("num_examples", num_examples, "use only the first N pairs of the file; 0 = all", at_least(0));
    v("test_size", test_size, "pairs held out as the test split", at_least(0));
    v("valid_size", valid_size, "pairs held out as the validation split", at_least(0));
    v("split_seed", split_seed, "seed of the train/valid/test split (independent of train.seed)",
      between(0, 9.0e15));
    v("source_num_words", source_num_words,
      "keep the N-1 most frequent source characters (Keras num_words); 0 = all", at_least(0));
    v("target_num_words", target_num_words,
      "keep the N-1 most frequent target words (Keras num_words); 0 = all", at_least(0));
    v("oov_token", oov_token,
      "token for characters/words outside the vocabulary; \"\" drops them (Keras default)");
    v("max_source_length", max_source_length,
      "drop training pairs with more source characters (<start>/<end> not counted); 0 = keep all",
      at_least(0));
    v("max_target_length", max_target_length,
      "drop training pairs with more target words (<start>/<end> not counted); 0 = keep all",
      at_least(0));
    v("teacher_forcing_ratio", teacher_forcing_ratio,
      "probability of feeding the reference token (else the model's own) at each training step",
      between(0, 1));
    v("eval_beam_size", eval_beam_size, "beam size of the BLEU decodes; 1 = greedy",
      between(1, 64));
    v("eval_max_length", eval_max_length, "most tokens decoded per sentence for BLEU",
      between(1, 1000));
    v("max_eval_samples", max_eval_samples, "evaluate on the first N pairs of the split; 0 = all",
      at_least(0));
    v("source_tokenizer", source_tokenizer,
      "Chinese side: char (document 000: a token per character) | word (the text's own "
      "whitespace-separated words, for segmented text) | sentencepiece (subwords learned from the "
      "training split)",
      one_of({"char", "word", "sentencepiece"}));
    v("target_tokenizer", target_tokenizer,
      "English side: word (document 000's preprocessing) | sentencepiece (subwords of that "
      "preprocessed text)",
      one_of({"word", "sentencepiece"}));
    v("joint_vocabulary", joint_vocabulary,
      "one vocabulary (and one SentencePiece model) for both sides, so the model can share "
      "its embeddings (model.share_encoder_decoder_embeddings)");
    v("sentencepiece_model_type", sentencepiece_model_type, "SentencePiece algorithm",
      one_of({"unigram", "bpe"}));
    v("sentencepiece_vocab_size", sentencepiece_vocab_size,
      "pieces of each SentencePiece model (of the joint one with joint_vocabulary)", at_least(8));
    v("source_tokenizer_fingerprint", source_tokenizer_fingerprint,
      "written by training: the SentencePiece model a checkpoint's source.spm must be");
    v("target_tokenizer_fingerprint", target_tokenizer_fingerprint,
      "written by training: the SentencePiece model a checkpoint's target.spm must be");
    v("batch_tokens", batch_tokens,
      "training batches of about N tokens (pairs x the longest source or target, padding "
      "included; fairseq's and Marian's max_tokens) instead of per_device_train_batch_size "
      "pairs; with data parallelism N counts the whole global batch; 0 = by pairs",
      at_least(0));
    v("truncate_source", truncate_source,
      "cut a source longer than the model can read (a Transformer's position table) to that "
      "length instead of stopping with an error (zoo translate --truncate)");
  }
};

class TranslationTask : public Task, public Translator {
 public:
  /// Padding is index 0 of both Keras-style vocabularies; the model must agree.
  static constexpr int64_t kPadId = 0;
  /// The vocabularies in a checkpoint directory.
  static constexpr const char* kSourceVocabFile = "source_vocab.json";
  static constexpr const char* kTargetVocabFile = "target_vocab.json";

  /// For training (`checkpoint_dir` empty): reads data.path, splits it, fits the
  /// vocabularies on the training split and completes config() with their sizes and the
  /// special ids. From a checkpoint: loads source_vocab.json / target_vocab.json from it and
  /// checks them against the model section; the pair file is read only by evaluate().
  TranslationTask(const json& config, const TaskContext& context, const std::string& checkpoint_dir = "");

  std::shared_ptr<torch::nn::Module> model() override { return model_->module(); }
  /// Writes train.tsv / valid.tsv / test.tsv into `output_dir` (when not empty).
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return static_cast<int64_t>(train_src_.size()); }
  /// Length-bucketed batches (similar target, then source lengths), reshuffled every epoch:
  /// of `batch_size` pairs, or with data.batch_tokens of about that many tokens.
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch,
                                               int64_t batch_size) const override;
  /// input_ids (the source, B x S) and labels (the target, B x T, with <start>/<end>), int64,
  /// right-padded with 0.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  /// Token-level mean cross entropy of forward(src, tgt[:, :-1]) against tgt[:, 1:], padding
  /// ignored; teacher forcing with data.teacher_forcing_ratio drawn from batch.seed.
  Loss loss(const Batch& batch) override;
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
  Translator* translator() override { return this; }
  /// Writes source_vocab.json and target_vocab.json.
  void save_assets(const std::string& dir) const override;

  /// Search settings with this model's <start>/<end> ids; `max_length` counts <end>.
  models::GenerationOptions generation_options(int64_t num_beams, int64_t max_length,
                                               double length_penalty = 1.0) const override;
  /// Translates raw Chinese sentences (one Translation per sentence, in order), batched by
  /// length on the model's device. Empty (all-space) sentences give an empty Translation;
  /// characters outside the vocabulary become the OOV token. Throws zoo::Error on invalid
  /// UTF-8.
  std::vector<Translation> translate(const std::vector<std::string>& sentences,
                                     const models::GenerationOptions& options,
                                     const models::Constraint* constraint = nullptr,
                                     int64_t batch_size = 64) override;
  /// An English sentence as the target ids the model can produce (preprocessed like the
  /// training targets, without <start>/<end>), for constrained decoding. std::nullopt with
  /// the reason in `why` when a word is not in the vocabulary or nothing is left.
  std::optional<std::vector<int64_t>> encode_target(const std::string& sentence,
                                                    std::string* why = nullptr) const override;
  /// The source ids the model reads for a raw sentence, and the token shown for each id
  /// (framed as data.source_tokenizer frames it). A sentence longer than the model reads is a
  /// zoo::Error naming the limit, or cut with data.truncate_source.
  std::vector<int64_t> encode_source(const std::string& sentence,
                                     std::vector<std::string>* tokens = nullptr) const;
  /// Preprocessed English without <start>/<end>: what BLEU compares against.
  static std::string reference_text(const std::string& english);

  models::EncoderDecoder& encoder_decoder() { return *model_; }
  const data::Vocab& source_vocab() const { return source_vocab_; }
  const data::Vocab& target_vocab() const { return target_vocab_; }
  const TranslationDataOptions& data_options() const { return data_; }
  /// The split read from data.path (empty until training or evaluation needed it).
  const data::Split& split() const { return split_; }
  int64_t bos_id() const { return bos_id_; }
  int64_t eos_id() const override { return eos_id_; }
  void select_attention_head(int64_t head) override { model_->select_attention_head(head); }

 private:
  // Reads data.path and splits it (idempotent).
  void load_split();
  // Pairs of `split` ("valid"/"test") for evaluation, possibly from the training run's
  // <split>.tsv next to the checkpoint when data.path is not available.
  std::vector<data::SentencePair> eval_pairs(const std::string& split);
  // The preprocessed sources of the training split (for BLEU on unseen sources).
  const std::set<std::string>& training_sources();
  void fit_vocabularies();
  // Trains the SentencePiece models of the sides that use one, on the training split.
  void train_tokenizers();
  // Loads them from a checkpoint, checking they are the ones it was trained with.
  void load_tokenizers(const std::string& dir);
  // vocab.json + tokenizer_config.json for Hugging Face's MarianTokenizer (joint SentencePiece).
  void save_marian_tokenizer(const std::string& dir) const;
  void load_vocabularies(const std::string& dir);
  // Vocabulary sizes from the data, checked against (or filled into) the model section's.
  void check_vocabulary_sizes();
  // bos_id_/eos_id_ from the target vocabulary, checked against the model section's;
  // `where` names the vocabulary's origin in messages.
  void find_special_ids(const std::string& where);
  void encode_training_pairs();
  std::string detokenize(const std::vector<int64_t>& ids) const;

  TranslationDataOptions data_;
  // The model section's facts about the data (0 / -1: not given, filled in from the data).
  int64_t source_vocab_size_ = 0, target_vocab_size_ = 0;
  int64_t config_bos_ = -1, config_eos_ = -1;
  std::shared_ptr<models::EncoderDecoder> model_;
  std::string checkpoint_dir_;
  data::Vocab source_vocab_, target_vocab_;
  SideTokenizer source_text_{"char", true}, target_text_{"word", false};
  int64_t bos_id_ = -1, eos_id_ = -1;
  bool split_loaded_ = false;
  data::Split split_;
  std::vector<std::vector<int64_t>> train_src_, train_tgt_;  // encoded training pairs
  std::vector<int64_t> train_order_key_;                     // bucketing key per pair
  std::vector<int64_t> train_cost_;                          // longest side in tokens per pair
  std::optional<std::set<std::string>> training_sources_;    // see training_sources()
  // The split eval_plan() loaded last: encoded sources and targets, BLEU references, and
  // whether each source is unseen in training.
  std::string eval_split_;
  std::vector<std::vector<int64_t>> eval_src_, eval_tgt_;
  std::vector<std::string> eval_references_;
  std::vector<bool> eval_unseen_;
};

}  // namespace zoo
