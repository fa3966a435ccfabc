#include "data/wordpiece_tokenizer.h"
#include "core/output_file.h"

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/input_file.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo::data {

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::from_tokenizer_json(const nlohmann::json& j,
                                                                            const std::string& path) {
  try {
    const auto& model = j.at("model");
    if (model.value("type", std::string()) != "WordPiece" || model.value("continuing_subword_prefix", "##") != "##")
      throw Error(cat(path, ": not a WordPiece model with \"##\" continuations"));
    std::vector<std::string> tokens(model.at("vocab").size());
    for (const auto& [token, id] : model.at("vocab").items()) {
      const auto i = id.get<int64_t>();
      if (i < 0 || i >= static_cast<int64_t>(tokens.size()) || !tokens[static_cast<size_t>(i)].empty())
        throw Error(cat(path, ": model.vocab id ", i, " of '", token, "' is out of range or given twice"));
      tokens[static_cast<size_t>(i)] = token;
    }
    const auto& norm = j.contains("normalizer") && j["normalizer"].is_object() ? j["normalizer"] : nlohmann::json::object();
    return std::make_unique<WordPieceTokenizer>(WordPiece(std::move(tokens), norm.value("lowercase", true)));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": malformed (", e.what(), "); expected a WordPiece model's vocab {token: id}"));
  }
}

std::string WordPieceTokenizer::file(const std::string& where) {
  const std::string vocab = WordPiece::vocab_file(where);
  if (vocab == where || fs::exists(vocab) || !fs::exists(fs::path(where) / "tokenizer.json")) return vocab;
  return (fs::path(where) / "tokenizer.json").string();
}

std::unique_ptr<WordPieceTokenizer> WordPieceTokenizer::load(const std::string& where) {
  const std::string path = file(where);
  if (path == where) return std::make_unique<WordPieceTokenizer>(WordPiece::load(path));
  if (fs::path(path).filename() == "tokenizer.json") return from_tokenizer_json(read_tokenizer_json(path), path);
  bool lower_case = true;
  const fs::path config = fs::path(where) / "tokenizer_config.json";
  if (std::ifstream in(config); in) {
    try {
      lower_case = nlohmann::json::parse(in).value("do_lower_case", true);
    } catch (const nlohmann::json::exception& e) {
      throw Error(cat(config.string(), ": malformed JSON (", e.what(), ")"));
    }
  }
  return std::make_unique<WordPieceTokenizer>(WordPiece::load(path, lower_case));
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

nlohmann::json WordPieceTokenizer::tokenizer_json() const {
  nlohmann::json vocab = nlohmann::json::object(), added = nlohmann::json::array();
  for (int64_t id = 0; id < wordpiece_.size(); ++id) {
    const std::string& t = wordpiece_.token(id);
    vocab[t] = id;
    if (t.size() > 2 && t.front() == '[' && t.back() == ']')
      added.push_back({{"id", id}, {"content", t}, {"single_word", false}, {"lstrip", false}, {"rstrip", false},
                       {"normalized", false}, {"special", true}});
  }
  auto special = [&](const std::string& t) {
    const int64_t id = wordpiece_.id(t);
    return nlohmann::json{{"id", t}, {"ids", {id}}, {"tokens", {t}}};
  };
  auto piece = [](const char* kind, const std::string& id, int type) {
    return nlohmann::json{{kind, {{"id", id}, {"type_id", type}}}};
  };
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true},
                          {"strip_accents", nullptr}, {"lowercase", wordpiece_.lower_case()}}},
          {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {piece("SpecialToken", "[CLS]", 0), piece("Sequence", "A", 0), piece("SpecialToken", "[SEP]", 0)}},
            {"pair", {piece("SpecialToken", "[CLS]", 0), piece("Sequence", "A", 0), piece("SpecialToken", "[SEP]", 0),
                      piece("Sequence", "B", 1), piece("SpecialToken", "[SEP]", 1)}},
            {"special_tokens", {{"[CLS]", special("[CLS]")}, {"[SEP]", special("[SEP]")}}}}},
          {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
          {"model", {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
                     {"max_input_chars_per_word", 100}, {"vocab", vocab}}}};
}

void WordPieceTokenizer::save(const std::string& dir) const {
  wordpiece_.save((fs::path(dir) / "vocab.txt").string());
  write_file_checked((fs::path(dir) / "tokenizer.json").string(), tokenizer_json().dump() + "\n");
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
