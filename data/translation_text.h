#pragma once
// Both sides of Chinese -> English sentence pairs as the ids a translation model reads and
// writes (document 000's preprocessing): the "data" section, each side's tokenizer
// (data/side_tokenizer.h) and Keras-style vocabulary (data/vocab.h: padding 0, an OOV token),
// and <start>/<end>, whose ids are looked up in the target vocabulary, never assumed. Training
// fits them on the training split; a checkpoint's source_vocab.json / target_vocab.json (and
// source.spm / target.spm) load them back, checked against its model section. The translation
// task and the translator (predict/translator.h) encode and decode through this one class.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/data_facts.h"
#include "core/options.h"
#include "data/pairs.h"
#include "data/side_tokenizer.h"
#include "data/vocab.h"

namespace zoo::data {

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
  double eval_length_penalty = 1.0;
  int64_t max_eval_samples = 0;  // 0: the whole split
  bool truncate_source = false;
  int64_t batch_tokens = 0;  // 0: batches of train.per_device_train_batch_size pairs
  std::string source_tokenizer = "char";
  std::string target_tokenizer = "word";
  bool joint_vocabulary = false;
  std::string sentencepiece_model_type = "unigram";
  int64_t sentencepiece_vocab_size = 8000;
  double sentencepiece_sampling_alpha = 0;  // 0: the best segmentation always
  int64_t sentencepiece_sampling_nbest = -1;
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
    v("eval_length_penalty", eval_length_penalty,
      "alpha of the BLEU beam decodes: hypotheses ranked by log_prob / length^alpha (zoo translate "
      "--length-penalty); 0 = raw log-probability",
      between(-10, 10));
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
    v("sentencepiece_sampling_alpha", sentencepiece_sampling_alpha,
      "subword regularization (Kudo 2018): every time a training pair is batched, its SentencePiece "
      "sides are segmented by sampling (SampleEncode) instead of the best segmentation; validation, "
      "test and inference keep the best. unigram: the smoothing alpha (inverse temperature; 0.1-0.2 "
      "usual, larger stays nearer the best segmentation); bpe: BPE-dropout's probability of skipping a "
      "merge, below 1. The vocabulary then holds every piece of the model. 0 = off",
      at_least(0));
    v("sentencepiece_sampling_nbest", sentencepiece_sampling_nbest,
      "with sentencepiece_sampling_alpha on a unigram model: sample from every segmentation (-1) or "
      "from the l best (2 to 512); bpe ignores it, so leave it at -1 there",
      between(-1, 512));
    v("source_tokenizer_fingerprint", source_tokenizer_fingerprint,
      "written by training: the source tokenizer's fingerprint (its cutting, source.spm and source_vocab.json); "
      "a checkpoint refuses another");
    v("target_tokenizer_fingerprint", target_tokenizer_fingerprint,
      "written by training: the target tokenizer's fingerprint (its cutting, target.spm and target_vocab.json); "
      "a checkpoint refuses another");
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

class TranslationText {
 public:
  /// Padding is index 0 of both Keras-style vocabularies; the model must agree.
  static constexpr int64_t kPadId = 0;
  /// The vocabularies in a checkpoint directory.
  static constexpr const char* kSourceVocabFile = SideTokenizer::kSourceVocabFile;
  static constexpr const char* kTargetVocabFile = SideTokenizer::kTargetVocabFile;

  /// Checks the subword-sampling keys against the tokenizers (zoo::Error naming the key and the fix).
  explicit TranslationText(const TranslationDataOptions& data);

  /// Learns the SentencePiece models (of the sides that use one) and the vocabularies from
  /// the training pairs; fingerprint() then names the models a checkpoint must hold.
  void fit(const std::vector<SentencePair>& train);
  /// From checkpoint directory `dir`: both sides' tokenizers (SentencePiece models and
  /// vocabularies), whose sizes must be the model section's (named in messages as
  /// DIR/config.json) and whose fingerprints data's.
  void load(const std::string& dir, int64_t source_vocab_size, int64_t target_vocab_size);
  /// <start>/<end> from the target vocabulary, which must hold them as ids the model can
  /// produce; `where` names the vocabulary's origin in messages.
  void find_special_ids(const std::string& where);
  /// What the vocabularies tell the model: their sizes, <start>/<end> and padding 0
  /// (after fit() or load(), and find_special_ids()).
  DataFacts facts() const;
  /// Writes source_vocab.json / target_vocab.json (+ the SentencePiece models and, for a joint
  /// one, the files Hugging Face's MarianTokenizer reads, which need the model's positions).
  void save(const std::string& dir, int64_t max_positions) const;

  /// The training encoding of a raw pair's sides: framed as the side frames them.
  std::vector<int64_t> source_ids(const std::string& raw) const;
  std::vector<int64_t> target_ids(const std::string& raw) const;
  /// Subword regularization (data.sentencepiece_sampling_alpha > 0): whether training batches
  /// sample the segmentation of this side, which then must be cut by SentencePiece.
  bool samples_source() const { return sampling() && source_.subwords(); }
  bool samples_target() const { return sampling() && target_.subwords(); }
  /// The ids of sampled segmentations of raw sentences of a side that samples, framed as
  /// source_ids() / target_ids() frame them (one request to the SentencePiece helper); the same
  /// seed gives the same ids. Every piece a sample can produce has an id (fit() saw to it).
  std::vector<std::vector<int64_t>> sample_source_ids(const std::vector<std::string>& raws, uint64_t seed) const;
  std::vector<std::vector<int64_t>> sample_target_ids(const std::vector<std::string>& raws, uint64_t seed) const;
  /// The most source tokens (<start>/<end> included) given to a model without a position table
  /// (the GRU encoder-decoder): its time and memory grow with the source (100,000 characters took
  /// 2 minutes and 2 GB), and the sentences it is trained on have tens.
  static constexpr int64_t kMaxSourceTokensWithoutPositions = 1024;
  /// The source ids the model reads for a raw sentence, and the token shown for each id. A
  /// sentence longer than `limit` (the model's positions; 0: none, then
  /// kMaxSourceTokensWithoutPositions) is a zoo::Error naming the limit, or cut to it with
  /// data.truncate_source.
  std::vector<int64_t> encode_source(const std::string& sentence, int64_t limit,
                                     std::vector<std::string>* tokens = nullptr) const {
    return encode_source(sentence, limit, tokens, data_.truncate_source);
  }
  /// The same, cutting a longer sentence when `truncate` (whatever data.truncate_source says).
  std::vector<int64_t> encode_source(const std::string& sentence, int64_t limit, std::vector<std::string>* tokens,
                                     bool truncate) const;
  /// An English sentence as the target ids the model can produce (preprocessed like the
  /// training targets, without <start>/<end>), for constrained decoding. std::nullopt with
  /// the reason in `why` when a word is not in the vocabulary or nothing is left.
  std::optional<std::vector<int64_t>> encode_target(const std::string& sentence, std::string* why = nullptr) const;
  /// Generated target ids -> the text BLEU compares (<start>, <end> and padding dropped).
  std::string detokenize(const std::vector<int64_t>& ids) const;
  /// The token of each generated id, for heat maps ("<pad>", the OOV token where unknown).
  std::vector<std::string> target_tokens(const std::vector<int64_t>& ids) const;
  /// Preprocessed English without <start>/<end>: what BLEU compares against.
  static std::string reference_text(const std::string& english);

  /// The sides' tokenizers.
  const SideTokenizer& source() const { return source_; }
  const SideTokenizer& target() const { return target_; }
  const Vocab& source_vocab() const { return source_.vocab(); }
  const Vocab& target_vocab() const { return target_.vocab(); }
  int64_t bos_id() const { return bos_id_; }
  int64_t eos_id() const { return eos_id_; }
  /// The sides' tokenizers' fingerprints.
  std::string source_fingerprint() const { return source_.fingerprint(); }
  std::string target_fingerprint() const { return target_.fingerprint(); }
  /// Whether `other` cuts and numbers both sides as this one does (the same fingerprints): what
  /// models decoded as one ensemble must share.
  bool same_tokenizers(const TranslationText& other) const {
    return source_fingerprint() == other.source_fingerprint() && target_fingerprint() == other.target_fingerprint();
  }

 private:
  void train_tokenizers(const std::vector<SentencePair>& train);
  void fit_vocabularies(const std::vector<SentencePair>& train);
  void save_marian_tokenizer(const std::string& dir, int64_t max_positions) const;
  bool sampling() const { return data_.sentencepiece_sampling_alpha > 0; }

  TranslationDataOptions data_;
  SideTokenizer source_, target_;
  int64_t bos_id_ = -1, eos_id_ = -1;
};

}  // namespace zoo::data
