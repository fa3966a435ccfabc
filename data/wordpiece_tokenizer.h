#pragma once
// BERT's WordPiece (data/wordpiece.h) as one of the tokenizers of data/tokenizer.h: what
// `zoo tokenizer train --model-type wordpiece` learns (data/wordpiece_trainer.h) and writes as
// Hugging Face's BertTokenizer reads it (vocab.txt + tokenizer_config.json), and what
// `zoo tokenizer encode/decode` and the tasks load from such a directory.
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizer.h"
#include "data/wordpiece.h"

namespace zoo::data {

class WordPieceTokenizer : public Tokenizer {
 public:
  explicit WordPieceTokenizer(WordPiece wordpiece) : wordpiece_(std::move(wordpiece)) {}
  /// `where`: a vocab.txt (lower-casing), or a directory: DIR/vocab.txt, lower-casing as
  /// DIR/tokenizer_config.json's do_lower_case says (else uncased); without vocab.txt, Hugging
  /// Face's DIR/tokenizer.json of a WordPiece model (its vocab by id, its BertNormalizer's
  /// lowercase).
  static std::unique_ptr<WordPieceTokenizer> load(const std::string& where);
  /// The file load(where) reads the vocabulary from, for messages.
  static std::string file(const std::string& where);
  /// A parsed tokenizer.json of a WordPiece model (vocab by id, the normalizer's lowercase),
  /// errors naming `path`.
  static std::unique_ptr<WordPieceTokenizer> from_tokenizer_json(const nlohmann::json& j, const std::string& path);
  /// Hugging Face's tokenizer.json for this vocabulary (BertTokenizerFast's layout: BertNormalizer,
  /// BertPreTokenizer, WordPiece with "##", [CLS] A [SEP] templates); save() writes it.
  nlohmann::json tokenizer_json() const;

  std::string kind() const override { return "wordpiece"; }
  /// The WordPiece ids of the text (no [CLS] / [SEP]).
  std::vector<int64_t> encode(std::string_view text) const override;
  /// The tokens joined by spaces, "##" continuations glued to the piece before (BertTokenizer's
  /// convert_tokens_to_string).
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return wordpiece_.size(); }
  int64_t token_id(std::string_view token) const override { return wordpiece_.find(std::string(token)); }
  void save(const std::string& dir) const override;
  std::string fingerprint() const override;
  const WordPiece& wordpiece() const { return wordpiece_; }

 private:
  WordPiece wordpiece_;
};

}  // namespace zoo::data
