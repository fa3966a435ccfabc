#pragma once
// Document 000's words as one of the tokenizers of data/tokenizer.h: torchtext's basic_english
// (data/text.h) looked up in a vocab.txt (one token per line, the line number is the id),
// a word the vocabulary does not hold becoming [UNK]. What bert_pretraining builds from the
// reviews and text classification reads with data.tokenizer=basic_english. Saved as vocab.txt
// + tokenizer_config.json ("zoo_kind": "basic_english"); Hugging Face has no tokenizer of this
// kind, so no tokenizer.json is written.
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "data/wordpiece.h"

namespace zoo::data {

class BasicEnglishTokenizer : public Tokenizer {
 public:
  /// `tokens` in id order; throws zoo::Error when [UNK] is missing or a token repeats.
  explicit BasicEnglishTokenizer(std::vector<std::string> tokens);
  /// `where`: a vocab.txt, or a directory holding one; errors name the file.
  static std::unique_ptr<BasicEnglishTokenizer> load(const std::string& where);

  std::string kind() const override { return "basic_english"; }
  /// The ids of basic_english(text).
  std::vector<int64_t> encode(std::string_view text) const override;
  /// The tokens joined by spaces.
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return vocab_.size(); }
  int64_t token_id(std::string_view token) const override;
  void save(const std::string& dir) const override;
  std::string fingerprint() const override;
  const std::vector<std::string>& tokens() const { return vocab_.tokens(); }

 private:
  WordPiece vocab_;  // the table alone: token <-> id, [UNK]
};

}  // namespace zoo::data
