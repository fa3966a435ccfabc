#pragma once
// BERT's tokenizer (Devlin et al. 2019; Hugging Face's BertTokenizer): the basic tokenizer
// (drop control characters, whitespace to spaces, spaces around CJK ideographs, lower-case
// and strip accents when uncased, split on whitespace and punctuation), then WordPiece:
// each word split greedily into the longest vocabulary pieces from the left, continuations
// prefixed "##", a word that cannot be split (or longer than 100 characters) becoming
// [UNK]. The vocabulary is BERT's vocab.txt: one token per line, the line number is the id.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace zoo::data {

class WordPiece {
 public:
  /// Longer words become [UNK] (Hugging Face's max_input_chars_per_word).
  static constexpr size_t kMaxWordChars = 100;
  /// From tokens in id order; throws zoo::Error when [UNK] is missing or a token repeats.
  WordPiece(std::vector<std::string> tokens, bool lower_case = true);
  /// `where` itself, or where/vocab.txt when `where` is a directory.
  static std::string vocab_file(const std::string& where);
  /// vocab.txt; errors name the file and line.
  static WordPiece load(const std::string& path, bool lower_case = true);
  /// The tokens of a vocab.txt in id order, unchecked (load() checks them); errors name the
  /// file and line.
  static std::vector<std::string> read_tokens(const std::string& path);
  void save(const std::string& path) const;

  /// The basic tokenizer alone: the words and punctuation marks of `text`.
  std::vector<std::string> basic_tokens(const std::string& text) const;
  /// Text -> WordPiece tokens / ids (no [CLS] / [SEP]).
  std::vector<std::string> tokenize(const std::string& text) const;
  std::vector<int64_t> encode(const std::string& text) const;
  /// The id of a token, or that of [UNK].
  int64_t id(const std::string& token) const;
  /// The id of a token, or -1 when the vocabulary does not hold it.
  int64_t find(const std::string& token) const;
  const std::string& token(int64_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::vector<std::string>& tokens() const { return tokens_; }
  bool lower_case() const { return lower_case_; }

 private:
  void word_pieces(const std::string& word, std::vector<std::string>& out) const;
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
  bool lower_case_;
  int64_t unk_ = 0;
};

}  // namespace zoo::data
