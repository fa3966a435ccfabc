#pragma once
// How one side of the translation pairs becomes the tokens its vocabulary indexes:
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
// The pieces are then ids through Keras-style vocabularies (data/vocab.h, padding 0, an OOV
// token; data/translation_text.h holds both sides), as the characters and words are. A
// SentencePiece model is saved beside the vocabularies as source.spm / target.spm, the names
// Marian's tokenizer reads.
#include <memory>
#include <string>
#include <vector>

#include "data/sentencepiece_tokenizer.h"

namespace zoo::data {

class SideTokenizer {
 public:
  /// kind: "char", "word" or "sentencepiece"; `source`: the source side (else the target).
  SideTokenizer(std::string kind, bool source);

  const std::string& kind() const { return kind_; }
  bool subwords() const { return kind_ == "sentencepiece"; }
  /// The text a SentencePiece model of this side learns from (and encodes).
  std::string normalize(const std::string& raw) const;
  /// A raw sentence as space-separated tokens, framed as this side frames them.
  std::string tokens(const std::string& raw) const;
  /// Target tokens (no <start>/<end>) -> the text BLEU compares with the preprocessed
  /// reference: words joined by spaces; pieces concatenated, "▁" becoming a space.
  std::string detokenize(const std::vector<std::string>& tokens) const;

  /// Learns this side's SentencePiece model from `texts` (normalized sentences).
  void train(const std::vector<std::string>& texts, const std::string& model_type, int64_t vocab_size);
  /// Shares another side's model (a joint vocabulary).
  void share(const SideTokenizer& other) { spm_ = other.spm_; }
  /// Writes / reads the model as `file` in `dir` (no-op for char and word); load errors name
  /// the file.
  void save(const std::string& dir, const std::string& file) const;
  void load(const std::string& dir, const std::string& file);
  /// The model's fingerprint ("" for char and word).
  std::string fingerprint() const;

 private:
  std::string kind_;
  bool source_;
  std::shared_ptr<data::SentencePieceTokenizer> spm_;
};

}  // namespace zoo::data
