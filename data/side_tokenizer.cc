#include "data/side_tokenizer.h"
#include "core/output_file.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo::data {

namespace {
constexpr const char* kStart = "<start>";
constexpr const char* kEnd = "<end>";
constexpr const char* kWordBoundary = "\xE2\x96\x81";  // U+2581, SentencePiece's "▁"

// preprocess_eng without its <start>/<end> frame.
std::string english_inner(const std::string& raw) {
  std::string out;
  for (const auto& t : data::split_tokens(data::preprocess_eng(raw)))
    if (t != kStart && t != kEnd) out += (out.empty() ? "" : " ") + t;
  return out;
}
}  // namespace

SideTokenizer::SideTokenizer(std::string kind, bool source) : kind_(std::move(kind)), source_(source) {
  if ((kind_ != "char" || !source) && kind_ != "word" && kind_ != "sentencepiece")
    throw Error(cat("config: data.", source ? "source" : "target", "_tokenizer must be ", source ? "char, " : "", "word or sentencepiece, got '",
                    kind_, "'"));
}

std::string SideTokenizer::normalize(const std::string& raw) const {
  return source_ ? data::python_strip(raw) : english_inner(raw);
}

std::string SideTokenizer::tokens(const std::string& raw) const {
  if (kind_ == "char") return data::preprocess_chinese(raw);
  if (kind_ == "word" && !source_) return data::preprocess_eng(raw);
  if (kind_ == "word") {
    std::string out = kStart;
    for (const auto& w : data::python_split(raw)) out += " " + w;
    return out + " " + kEnd;
  }
  if (!spm_) throw Error("SentencePiece tokenizer used before it was trained or loaded");
  std::string out = source_ ? "" : kStart;
  for (const auto& piece : spm_->encode_pieces(normalize(raw))) out += (out.empty() ? "" : " ") + piece;
  return out + (out.empty() ? "" : " ") + kEnd;
}

std::string SideTokenizer::detokenize(const std::vector<std::string>& tokens) const {
  std::string out;
  if (!subwords()) {
    for (const auto& t : tokens) out += (out.empty() ? "" : " ") + t;
    return out;
  }
  for (const auto& t : tokens) out += t;
  for (size_t at = out.find(kWordBoundary); at != std::string::npos; at = out.find(kWordBoundary, at + 1))
    out.replace(at, 3, " ");
  return data::python_strip(out);
}

void SideTokenizer::train(const std::vector<std::string>& texts, const std::string& model_type, int64_t vocab_size) {
  const fs::path file = fs::temp_directory_path() / cat("zoo-translation-", ::getpid(), source_ ? "-src.txt" : "-tgt.txt");
  {
    std::ofstream out(file, std::ios::binary);
    for (const auto& t : texts)
      if (!t.empty()) out << t << "\n";
    if (!out) throw Error(cat(file.string(), ": cannot write the SentencePiece training text"));
  }
  try {
    spm_ = data::SentencePieceTokenizer::train({file.string()}, model_type, vocab_size);
  } catch (const Error& e) {
    fs::remove(file);
    throw Error(cat("data.", source_ ? "source" : "target", "_tokenizer: ", e.what(),
                    "; adjust data.sentencepiece_vocab_size"));
  }
  fs::remove(file);
}

void SideTokenizer::save(const std::string& dir, const std::string& file) const {
  if (!spm_) return;
  const fs::path path = fs::path(dir) / file;
  write_file_checked(path.string(), spm_->proto());
}

void SideTokenizer::load(const std::string& dir, const std::string& file) {
  if (!subwords()) return;
  const std::string path = (fs::path(dir) / file).string();
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw Error(cat(path, ": missing; this checkpoint was trained with a SentencePiece ", source_ ? "source" : "target",
                    " tokenizer (zoo train writes it into every checkpoint)"));
  spm_ = data::SentencePieceTokenizer::load(path);
}

std::string SideTokenizer::fingerprint() const { return spm_ ? spm_->fingerprint() : ""; }

}  // namespace zoo::data
