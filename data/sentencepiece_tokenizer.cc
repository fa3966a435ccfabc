#include "data/sentencepiece_tokenizer.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo::data {

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_proto, const std::string& source)
    : proto_(model_proto), sp_(std::make_unique<sentencepiece::SentencePieceProcessor>()) {
  const auto status = sp_->LoadFromSerializedProto(proto_);
  if (!status.ok()) throw Error(cat(source, ": not a SentencePiece model (", status.ToString(), ")"));
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": missing (a SentencePiece model)"));
  std::stringstream ss;
  ss << in.rdbuf();
  return std::make_unique<SentencePieceTokenizer>(ss.str(), path);
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::train(const std::vector<std::string>& files,
                                                                      const std::string& model_type,
                                                                      int64_t vocab_size) {
  std::string inputs;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw Error(cat(f, ": cannot open"));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.empty()) throw Error(cat(f, ": empty file; give text files with content"));
    const size_t bad = find_invalid_utf8(text);
    if (bad != std::string::npos) throw Error(cat(f, ": invalid UTF-8 at byte ", bad, "; convert the file to UTF-8"));
    inputs += (inputs.empty() ? "" : ",") + f;
  }
  const fs::path tmp = fs::temp_directory_path() / cat("zoo-spm-", ::getpid());
  fs::create_directories(tmp);
  const std::string prefix = (tmp / "tokenizer").string();
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      cat("--input=", inputs, " --model_prefix=", prefix, " --model_type=", model_type, " --vocab_size=", vocab_size,
          " --character_coverage=1.0 --minloglevel=2 --hard_vocab_limit=true"));
  std::unique_ptr<SentencePieceTokenizer> out;
  if (status.ok()) out = load(prefix + ".model");
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!status.ok())
    throw Error(cat("SentencePiece training (", model_type, ", vocab_size ", vocab_size, ") failed: ",
                    status.ToString(), " (a vocab_size too large for the text: use a smaller one)"));
  return out;
}

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
  std::vector<int> ids;
  const auto status = sp_->Encode(std::string(text), &ids);
  if (!status.ok()) throw Error(cat("SentencePiece: ", status.ToString()));
  return std::vector<int64_t>(ids.begin(), ids.end());
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int> narrow;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw Error(cat("id ", id, " is outside the SentencePiece vocabulary of ", vocab_size()));
    narrow.push_back(static_cast<int>(id));
  }
  std::string text;
  const auto status = sp_->Decode(narrow, &text);
  if (!status.ok()) throw Error(cat("SentencePiece: ", status.ToString()));
  return text;
}

int64_t SentencePieceTokenizer::vocab_size() const { return sp_->GetPieceSize(); }
int64_t SentencePieceTokenizer::eos_id() const { return sp_->eos_id(); }

void SentencePieceTokenizer::save(const std::string& dir) const {
  std::ofstream(dir + "/tokenizer.model", std::ios::binary) << proto_;
  std::ofstream(dir + "/tokenizer_config.json") << nlohmann::json{{"zoo_kind", "sentencepiece"}}.dump(2) << "\n";
}

}  // namespace zoo::data
