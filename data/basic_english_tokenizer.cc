#include "data/basic_english_tokenizer.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/output_file.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo::data {

BasicEnglishTokenizer::BasicEnglishTokenizer(std::vector<std::string> tokens) : vocab_(std::move(tokens)) {}

std::unique_ptr<BasicEnglishTokenizer> BasicEnglishTokenizer::load(const std::string& where) {
  const std::string path = WordPiece::vocab_file(where);
  auto tokens = WordPiece::read_tokens(path);  // its errors name the file
  try {
    return std::make_unique<BasicEnglishTokenizer>(std::move(tokens));
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
}

std::vector<int64_t> BasicEnglishTokenizer::encode(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
  std::vector<int64_t> ids;
  for (const auto& word : basic_english(std::string(text))) ids.push_back(vocab_.id(word));  // [UNK] when unknown
  return ids;
}

std::string BasicEnglishTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_.size()) throw Error(cat("id ", id, " is outside the vocabulary (", vocab_.size(), " tokens)"));
    out += (out.empty() ? "" : " ") + vocab_.token(id);
  }
  return out;
}

int64_t BasicEnglishTokenizer::token_id(std::string_view token) const { return vocab_.find(std::string(token)); }

void BasicEnglishTokenizer::save(const std::string& dir) const {
  vocab_.save((fs::path(dir) / "vocab.txt").string());
  write_file_checked((fs::path(dir) / "tokenizer_config.json").string(),
                     nlohmann::json{{"zoo_kind", "basic_english"}, {"unk_token", "[UNK]"}}
                             .dump(2) + "\n");
}

std::string BasicEnglishTokenizer::fingerprint() const {
  std::string all = "basic_english\n";
  for (const auto& t : vocab_.tokens()) all += t + "\n";
  return fnv1a_hex(all);
}

}  // namespace zoo::data
