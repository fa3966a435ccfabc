#pragma once
// nanoGPT's character-level tokenizer: the vocabulary is the sorted set of code points of
// the training text (65 for tiny Shakespeare, as `sorted(list(set(data)))`), saved as
// char_vocab.json.
#include <map>
#include <string>
#include <vector>

#include "data/tokenizer.h"

namespace zoo::data {

class CharTokenizer : public Tokenizer {
 public:
  /// `chars`: the vocabulary in id order (distinct code points).
  explicit CharTokenizer(std::u32string chars);
  /// The sorted code points of `files`, read in pieces; errors name the file and byte.
  static std::unique_ptr<CharTokenizer> learn(const std::vector<std::string>& files);
  /// Reads DIR/char_vocab.json.
  static std::unique_ptr<CharTokenizer> load(const std::string& dir);

  std::string kind() const override { return "char"; }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(chars_.size()); }
  void save(const std::string& dir) const override;
  std::string fingerprint() const override;

 private:
  std::u32string chars_;
  std::map<char32_t, int64_t> ids_;
};

}  // namespace zoo::data
