#include "data/wordpiece_tokenizer.h"
#include "core/output_file.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo::data {

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::load(const std::string& dir) {
  bool lower_case = true;
  const fs::path config = fs::path(dir) / "tokenizer_config.json";
  if (std::ifstream in(config); in) {
    try {
      lower_case = nlohmann::json::parse(in).value("do_lower_case", true);
    } catch (const nlohmann::json::exception& e) {
      throw Error(cat(config.string(), ": malformed JSON (", e.what(), ")"));
    }
  }
  return std::make_unique<WordPieceTokenizer>(WordPiece::load((fs::path(dir) / "vocab.txt").string(), lower_case));
}

std::vector<int64_t> WordPieceTokenizer::encode(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
  return wordpiece_.encode(std::string(text));
}

std::string WordPieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  for (int64_t id : ids) {
    if (id < 0 || id >= wordpiece_.size())
      throw Error(cat("id ", id, " is outside the vocabulary (", wordpiece_.size(), " tokens)"));
    const std::string& t = wordpiece_.token(id);
    if (t.rfind("##", 0) == 0 && !out.empty()) out += t.substr(2);
    else out += (out.empty() ? "" : " ") + t;
  }
  return out;
}

void WordPieceTokenizer::save(const std::string& dir) const {
  wordpiece_.save((fs::path(dir) / "vocab.txt").string());
  write_file_checked((fs::path(dir) / "tokenizer_config.json").string(),
                     nlohmann::json{{"zoo_kind", "wordpiece"},
                        {"tokenizer_class", "BertTokenizer"},
                        {"do_lower_case", wordpiece_.lower_case()},
                        {"unk_token", "[UNK]"},
                        {"sep_token", "[SEP]"},
                        {"pad_token", "[PAD]"},
                        {"cls_token", "[CLS]"},
                        {"mask_token", "[MASK]"}}
                             .dump(2) + "\n");
}

std::string WordPieceTokenizer::fingerprint() const {
  std::string all = wordpiece_.lower_case() ? "wordpiece uncased\n" : "wordpiece cased\n";
  for (const auto& t : wordpiece_.tokens()) all += t + "\n";
  return fnv1a_hex(all);
}

}  // namespace zoo::data
