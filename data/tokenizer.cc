#include "data/tokenizer.h"

#include <cstdio>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/hash.h"
#include "core/input_file.h"
#include "core/output_file.h"
#include "data/char_tokenizer.h"
#include "data/gpt2_bpe.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/basic_english_tokenizer.h"
#include "data/wordpiece_tokenizer.h"
#include "data/wordpiece_trainer.h"

namespace fs = std::filesystem;

namespace zoo::data {

std::string fnv1a_hex(std::string_view bytes) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(fnv1a(bytes)));
  return buf;
}

nlohmann::json read_tokenizer_json(const std::string& path) {
  const std::string text = read_text_input(path, "tokenizer.json");
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": malformed JSON (", e.what(), ")"));
  }
}

nlohmann::json read_tokenizer_config(const std::string& dir) {
  const fs::path path = fs::path(dir) / "tokenizer_config.json";
  std::error_code ec;
  if (!fs::exists(path, ec)) return nlohmann::json::object();
  const std::string text = read_text_input(path.string(), "tokenizer_config.json");
  try {
    auto j = nlohmann::json::parse(text);
    if (!j.is_object()) throw Error(cat(path.string(), ": expected a JSON object"));
    return j;
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path.string(), ": malformed JSON (", e.what(), ")"));
  }
}

void add_to_tokenizer_config(const std::string& dir, const nlohmann::json& fields) {
  auto j = read_tokenizer_config(dir);
  j.update(fields);
  write_file_checked((fs::path(dir) / "tokenizer_config.json").string(), j.dump(2) + "\n");
}

namespace {
// The kind named by DIR/tokenizer_config.json ("zoo_kind", or Hugging Face's GPT-2 class), or "".
std::string configured_kind(const std::string& dir) {
  const auto j = read_tokenizer_config(dir);
  if (j.contains("zoo_kind")) {
    if (!j["zoo_kind"].is_string())
      throw Error(cat((fs::path(dir) / "tokenizer_config.json").string(), ": zoo_kind must be a string"));
    return j["zoo_kind"].get<std::string>();
  }
  const auto cls = j.contains("tokenizer_class") && j["tokenizer_class"].is_string() ? j["tokenizer_class"].get<std::string>() : "";
  if (cls == "GPT2Tokenizer" || cls == "GPT2TokenizerFast") return "gpt2";
  if (cls == "BertTokenizer" || cls == "BertTokenizerFast") return "wordpiece";
  return "";
}

std::string detected_kind(const std::string& dir) {
  const std::string kind = configured_kind(dir);
  if (!kind.empty()) return kind;
  const fs::path d(dir);
  if (fs::exists(d / "vocab.json") && fs::exists(d / "merges.txt")) return "gpt2";
  if (fs::exists(d / "tokenizer.model")) return "sentencepiece";
  if (fs::exists(d / "char_vocab.json")) return "char";
  if (fs::exists(d / "vocab.txt")) return "wordpiece";
  if (fs::exists(d / "tokenizer.json")) return "tokenizer.json";  // Hugging Face's fast tokenizer alone
  return "";
}
}  // namespace

DataFacts language_model_facts(const Tokenizer& tokenizer) {
  DataFacts facts;
  facts.origin = cat("the ", tokenizer.kind(), " tokenizer");
  facts.vocab_size = tokenizer.vocab_size();
  facts.vocab_size_at_least = true;
  facts.bos_id = facts.eos_id = tokenizer.eos_id();
  return facts;
}

void check_tokenizer_fingerprint(const Tokenizer& tokenizer, const std::string& expected, const std::string& source) {
  const std::string found = tokenizer.fingerprint();
  if (!expected.empty() && expected != found)
    throw Error(cat(source, ": this tokenizer (", tokenizer.kind(), ", ", tokenizer.vocab_size(), " ids, fingerprint ",
                    found, ") is not the one the model was trained with (fingerprint ", expected,
                    "); put the checkpoint's own tokenizer files back, or train a new model for this tokenizer"));
}

bool has_tokenizer(const std::string& dir) { return !detected_kind(dir).empty(); }

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir) {
  const std::string kind = detected_kind(dir);
  if (kind == "char") return CharTokenizer::load(dir);
  if (kind == "gpt2") return Gpt2Bpe::load(dir);
  if (kind == "sentencepiece") return SentencePieceTokenizer::load((fs::path(dir) / "tokenizer.model").string());
  if (kind == "wordpiece") return WordPieceTokenizer::load(dir);
  if (kind == "basic_english") return BasicEnglishTokenizer::load(dir);
  if (kind == "tokenizer.json") {  // read once; its model's type says which tokenizer it is
    const std::string path = (fs::path(dir) / "tokenizer.json").string();
    const nlohmann::json j = read_tokenizer_json(path);
    if (j.contains("model") && j["model"].is_object() && j["model"].value("type", std::string()) == "WordPiece")
      return WordPieceTokenizer::from_tokenizer_json(j, path);
    return Gpt2Bpe::from_tokenizer_json(j, path);  // names any other kind of model
  }
  if (kind.empty())
    throw Error(cat(dir, ": no tokenizer here (char_vocab.json, vocab.json + merges.txt, tokenizer.model or vocab.txt); "
                    "make one with zoo tokenizer train"));
  throw Error(cat(dir, "/tokenizer_config.json: unknown tokenizer kind '", kind, "' (char, gpt2, sentencepiece, wordpiece, basic_english)"));
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
