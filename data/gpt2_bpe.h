#pragma once
// GPT-2's byte-level BPE (Radford et al. 2019; OpenAI's encoder.py, Hugging Face's
// GPT2Tokenizer): text is cut by GPT-2's pre-tokenisation pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (matched by hand over code points), each piece's bytes are mapped to printable characters
// (bytes_to_unicode) and merged by the ranks of merges.txt; ids come from vocab.json.
// "<|endoftext|>" in the text is the end-of-text token.
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/tokenizer.h"

namespace zoo::data {

class Gpt2Bpe : public Tokenizer {
 public:
  /// `vocab`: token string -> id; `merges`: pairs in rank order.
  Gpt2Bpe(std::map<std::string, int64_t> vocab, std::vector<std::pair<std::string, std::string>> merges);
  /// Reads DIR/vocab.json and DIR/merges.txt, or, where only it exists, Hugging Face's
  /// DIR/tokenizer.json (a byte-level BPE); errors name the file (and the line).
  static std::unique_ptr<Gpt2Bpe> load(const std::string& dir);
  /// A parsed tokenizer.json of a byte-level BPE (model.vocab, model.merges as "a b" strings or
  /// [a, b] pairs, the added tokens); anything but BPE with ByteLevel pre-tokenisation is refused,
  /// naming `path`.
  static std::unique_ptr<Gpt2Bpe> from_tokenizer_json(const nlohmann::json& j, const std::string& path);

  std::string kind() const override { return "gpt2"; }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(tokens_.size()); }
  int64_t eos_id() const override { return eos_; }
  void save(const std::string& dir) const override;
  std::string fingerprint() const override;
  /// Hugging Face's tokenizer.json for this tokenizer (save() writes it beside vocab.json and
  /// merges.txt, so that AutoTokenizer's fast tokenizer reads it).
  nlohmann::json tokenizer_json() const;

 private:
  void encode_piece(const std::string& piece, std::vector<int64_t>& out) const;
  std::map<std::string, int64_t> vocab_;
  std::vector<std::string> tokens_;  // id -> token string
  std::vector<std::pair<std::string, std::string>> merges_;
  std::map<std::pair<std::string, std::string>, int64_t> ranks_;
  int64_t eos_ = -1;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::vector<int64_t>> cache_;
};

/// GPT-2's pre-tokenisation of UTF-8 text (the pattern above), as UTF-8 pieces.
std::vector<std::string> gpt2_pretokenize(std::string_view text);

}  // namespace zoo::data
