#pragma once
// One side of the translation pairs as one of the tokenizers of data/tokenizer.h: how a
// sentence becomes the tokens its Keras-style vocabulary (data/vocab.h: padding 0, an OOV
// token) indexes, and those ids.
//
//   char           document 000's Chinese: preprocess_chinese, a token per character,
//                  framed "<start> ... <end>"
//   word           targets: document 000's English, preprocess_eng, a token per word;
//                  sources: the text's own whitespace-separated words (segmented Chinese);
//                  framed
//   sentencepiece  subwords of a SentencePiece model (unigram or bpe) trained on the training
//                  split: the text (English after preprocess_eng, so BLEU compares alike;
//                  Chinese stripped only) -> pieces. Sources end with <end> only, as Marian's
//                  tokenizer ends them with </s>; targets are framed. A joint model serves
//                  both sides.
//
// A side is saved as SIDE_vocab.json (+ SIDE.spm, the name Marian's tokenizer reads), SIDE
// being source or target: both sides live in one checkpoint directory. Its fingerprint covers
// the cutting, the SentencePiece model and the vocabulary.
#include <memory>
#include <string>
#include <vector>

#include "data/sentencepiece_tokenizer.h"
#include "data/tokenizer.h"
#include "data/vocab.h"

namespace zoo::data {

/// The markers around every sentence of a translation pair (Keras's vocabulary has them).
inline constexpr const char* kStartToken = "<start>";
inline constexpr const char* kEndToken = "<end>";

class SideTokenizer : public Tokenizer {
 public:
  static constexpr const char* kSourceVocabFile = "source_vocab.json";
  static constexpr const char* kTargetVocabFile = "target_vocab.json";

  /// cutting: "char", "word" or "sentencepiece"; `source`: the source side (else the target).
  SideTokenizer(std::string cutting, bool source);

  /// "keras_char", "keras_word" or "keras_sentencepiece".
  std::string kind() const override { return "keras_" + cutting_; }
  /// A raw sentence -> its framed ids (unknown tokens: the OOV id, or dropped without one).
  std::vector<int64_t> encode(std::string_view raw) const override;
  /// Ids -> the text BLEU compares with the preprocessed reference: padding, <start> and <end>
  /// dropped; words joined by spaces, pieces concatenated ("▁" becoming a space).
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return vocab_.size(); }
  int64_t token_id(std::string_view token) const override;
  /// SIDE_vocab.json and, with SentencePiece, SIDE.spm.
  void save(const std::string& dir) const override;
  std::string fingerprint() const override;
  /// What an older zoo recorded as this side's fingerprint: the SentencePiece model's ("" for
  /// char and word), accepted on load.
  std::string model_fingerprint() const { return spm_ ? spm_->fingerprint() : ""; }

  bool source() const { return source_; }
  bool subwords() const { return cutting_ == "sentencepiece"; }
  const char* vocab_file() const { return source_ ? kSourceVocabFile : kTargetVocabFile; }
  const char* model_file() const { return source_ ? "source.spm" : "target.spm"; }
  /// The text a SentencePiece model of this side learns from (and encodes).
  std::string normalize(const std::string& raw) const;
  /// A raw sentence as space-separated tokens, framed as this side frames them.
  std::string tokens(const std::string& raw) const;
  /// Subword regularization: raw sentences -> framed ids of segmentations sampled by the
  /// SentencePiece model (SentencePieceTokenizer::sample: one request, drawn from `seed`).
  std::vector<std::vector<int64_t>> sample(const std::vector<std::string>& raws, int nbest_size, float alpha,
                                           uint32_t seed) const;
  /// The pieces a sample can produce (SentencePieceTokenizer::sampleable_ids), in id order.
  std::vector<std::string> sampleable_pieces() const;
  /// Learns this side's SentencePiece model from `texts` (normalized sentences).
  void train(const std::vector<std::string>& texts, const std::string& model_type, int64_t vocab_size);
  /// Shares another side's model (a joint vocabulary).
  void share(const SideTokenizer& other) { spm_ = other.spm_; }
  const Vocab& vocab() const { return vocab_; }
  void set_vocab(Vocab vocab) { vocab_ = std::move(vocab); }
  /// Reads SIDE.spm (SentencePiece) and SIDE_vocab.json from checkpoint directory `dir`; errors
  /// name the file.
  void load(const std::string& dir);

 private:
  // The SentencePiece model; throws zoo::Error before it is trained or loaded.
  const data::SentencePieceTokenizer& spm() const;
  // Subword pieces as this side's token line: <start> first on the target side, <end> last.
  std::string framed(const std::vector<std::string>& pieces) const;
  std::string cutting_;
  bool source_;
  std::shared_ptr<data::SentencePieceTokenizer> spm_;
  Vocab vocab_;
};

}  // namespace zoo::data
