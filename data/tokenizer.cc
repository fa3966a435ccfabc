#include "data/tokenizer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/input_file.h"
#include "data/char_tokenizer.h"
#include "data/gpt2_bpe.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/wordpiece_tokenizer.h"
#include "data/wordpiece_trainer.h"

namespace fs = std::filesystem;

namespace zoo::data {

std::string fnv1a_hex(std::string_view bytes) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {
// The kind named by DIR/tokenizer_config.json ("zoo_kind", or Hugging Face's GPT-2 class), or "".
std::string configured_kind(const std::string& dir) {
  const fs::path path = fs::path(dir) / "tokenizer_config.json";
  std::ifstream in(path);
  if (!in) return "";
  try {
    const auto j = nlohmann::json::parse(in);
    if (j.contains("zoo_kind")) return j["zoo_kind"].get<std::string>();
    const std::string cls = j.value("tokenizer_class", "");
    if (cls == "GPT2Tokenizer" || cls == "GPT2TokenizerFast") return "gpt2";
    if (cls == "BertTokenizer" || cls == "BertTokenizerFast") return "wordpiece";
    return "";
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path.string(), ": malformed JSON (", e.what(), ")"));
  }
}

std::string detected_kind(const std::string& dir) {
  const std::string kind = configured_kind(dir);
  if (!kind.empty()) return kind;
  const fs::path d(dir);
  if (fs::exists(d / "vocab.json") && fs::exists(d / "merges.txt")) return "gpt2";
  if (fs::exists(d / "tokenizer.model")) return "sentencepiece";
  if (fs::exists(d / "char_vocab.json")) return "char";
  if (fs::exists(d / "vocab.txt")) return "wordpiece";
  if (fs::exists(d / "tokenizer.json")) {  // Hugging Face's fast tokenizer alone: its model's type
    const std::string text = read_input_file((d / "tokenizer.json").string(), "tokenizer.json",
                                             number_from_env("ZOO_MAX_TEXT_MIB", 64) << 20, "set ZOO_MAX_TEXT_MIB to raise it");
    try {
      const auto j = nlohmann::json::parse(text);
      if (j.contains("model") && j["model"].value("type", std::string()) == "WordPiece") return "wordpiece";
    } catch (const nlohmann::json::exception&) {  // the loader names the file and the problem
    }
    return "gpt2";  // Gpt2Bpe::load names any other kind of model
  }
  return "";
}
}  // namespace

bool has_tokenizer(const std::string& dir) { return !detected_kind(dir).empty(); }

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const std::string kind = detected_kind(dir);
  if (kind == "char") return CharTokenizer::load(dir);
  if (kind == "gpt2") return Gpt2Bpe::load(dir);
  if (kind == "sentencepiece") return SentencePieceTokenizer::load((fs::path(dir) / "tokenizer.model").string());
  if (kind == "wordpiece") return WordPieceTokenizer::load(dir);
  if (kind.empty())
    throw Error(cat(dir, ": no tokenizer here (char_vocab.json, vocab.json + merges.txt, tokenizer.model or vocab.txt); "
                    "make one with zoo tokenizer train"));
  throw Error(cat(dir, "/tokenizer_config.json: unknown tokenizer kind '", kind, "' (char, gpt2, sentencepiece, wordpiece)"));
}

std::unique_ptr<Tokenizer> train_tokenizer(const std::vector<std::string>& files, const TokenizerTrainOptions& o) {
  if (files.empty()) throw Error("tokenizer training needs at least one text file");
  if (o.model_type == "char") return CharTokenizer::learn(files);
  if (o.model_type == "bpe" || o.model_type == "unigram" || o.model_type == "word")
    return SentencePieceTokenizer::train(files, o.model_type, o.vocab_size);
  if (o.model_type == "wordpiece") {
    WordPieceTrainOptions w;
    w.vocab_size = o.vocab_size;
    return std::make_unique<WordPieceTokenizer>(WordPiece(learn_wordpiece(files, w)));
  }
  throw Error(cat("unknown tokenizer model type '", o.model_type, "'; use char, bpe, unigram, word or wordpiece"));
}

}  // namespace zoo::data
