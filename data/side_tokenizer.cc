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
constexpr const char* kWordBoundary = "\xE2\x96\x81";  // U+2581, SentencePiece's "▁"

// preprocess_eng without its <start>/<end> frame.
std::string english_inner(const std::string& raw) {
  std::string out;
  for (const auto& t : data::split_tokens(data::preprocess_eng(raw)))
    if (t != kStartToken && t != kEndToken) out += (out.empty() ? "" : " ") + t;
  return out;
}
}  // namespace

SideTokenizer::SideTokenizer(std::string cutting, bool source) : cutting_(std::move(cutting)), source_(source) {
  if ((cutting_ != "char" || !source) && cutting_ != "word" && cutting_ != "sentencepiece")
    throw Error(cat("config: data.", source ? "source" : "target", "_tokenizer must be ", source ? "char, " : "", "word or sentencepiece, got '",
                    cutting_, "'"));
}

std::vector<int64_t> SideTokenizer::encode(std::string_view raw) const {
  const size_t bad = find_invalid_utf8(raw);
  if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
  return vocab_.encode(tokens(std::string(raw)));
}

int64_t SideTokenizer::token_id(std::string_view token) const {
  const std::string t(token);
  return vocab_.contains(t) ? vocab_.index(t) : -1;
}

std::string SideTokenizer::normalize(const std::string& raw) const {
  return source_ ? data::python_strip(raw) : english_inner(raw);
}

std::string SideTokenizer::tokens(const std::string& raw) const {
  if (cutting_ == "char") return data::preprocess_chinese(raw);
  if (cutting_ == "word" && !source_) return data::preprocess_eng(raw);
  if (cutting_ == "word") {
    std::string out = kStartToken;
    for (const auto& w : data::python_split(raw)) out += " " + w;
    return out + " " + kEndToken;
  }
  return framed(spm().encode_pieces(normalize(raw)));
}

const data::SentencePieceTokenizer& SideTokenizer::spm() const {
  if (!spm_) throw Error("SentencePiece tokenizer used before it was trained or loaded");
  return *spm_;
}

std::string SideTokenizer::framed(const std::vector<std::string>& pieces) const {
  std::string out = source_ ? "" : kStartToken;
  for (const auto& piece : pieces) out += (out.empty() ? "" : " ") + piece;
  return out + (out.empty() ? "" : " ") + kEndToken;
}

// The pieces are framed and looked up as tokens() frames and encode() looks up the best
// segmentation's, so both give the same ids for the same pieces.
std::vector<std::vector<int64_t>> SideTokenizer::sample(const std::vector<std::string>& raws, int nbest_size,
                                                        float alpha, uint32_t seed) const {
  std::vector<std::string> texts;
  texts.reserve(raws.size());
  for (const auto& raw : raws) texts.push_back(normalize(raw));
  const auto& table = spm().pieces();
  std::vector<std::vector<int64_t>> out;
  out.reserve(raws.size());
  for (const auto& ids : spm().sample(texts, nbest_size, alpha, seed)) {
    std::vector<std::string> pieces;
    for (int64_t id : ids) pieces.push_back(table.at(static_cast<size_t>(id)));
    out.push_back(vocab_.encode(framed(pieces)));
  }
  return out;
}

std::vector<std::string> SideTokenizer::sampleable_pieces() const {
  const auto& table = spm().pieces();
  std::vector<std::string> out;
  for (int64_t id : spm().sampleable_ids()) out.push_back(table.at(static_cast<size_t>(id)));
  return out;
}

std::string SideTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::vector<int64_t> words;
  const int64_t start = token_id(kStartToken), end = token_id(kEndToken);
  for (int64_t id : ids)
    if (id != end && id != start && id != 0) words.push_back(id);
  if (!subwords()) return vocab_.decode(words);
  std::string out;
  for (int64_t id : words) out += id > 0 && id < vocab_.size() ? vocab_.word(id) : vocab_.oov_token();
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

void SideTokenizer::save(const std::string& dir) const {
  if (spm_) write_file_checked((fs::path(dir) / model_file()).string(), spm_->proto());
  vocab_.save((fs::path(dir) / vocab_file()).string());
}

void SideTokenizer::load(const std::string& dir) {
  std::error_code ec;
  if (subwords()) {
    const std::string path = (fs::path(dir) / model_file()).string();
    if (!fs::exists(path, ec))
      throw Error(cat(path, ": missing; this checkpoint was trained with a SentencePiece ", source_ ? "source" : "target",
                      " tokenizer (zoo train writes it into every checkpoint)"));
    spm_ = data::SentencePieceTokenizer::load(path);
  }
  const std::string path = (fs::path(dir) / vocab_file()).string();
  if (!fs::exists(path, ec))
    throw Error(cat(path, ": missing; a translation checkpoint needs the vocabularies it was trained with (zoo train "
                          "writes ", kSourceVocabFile, " and ", kTargetVocabFile, " into every checkpoint)"));
  vocab_ = Vocab::load(path);
}

std::string SideTokenizer::fingerprint() const {
  std::string all = cat(kind(), source_ ? " source\n" : " target\n", model_fingerprint(), "\n", vocab_.num_words(), " ",
                        vocab_.oov_token(), "\n");
  for (int64_t id = 1; id < vocab_.size(); ++id) all += vocab_.word(id) + "\n";
  return fnv1a_hex(all);
}

}  // namespace zoo::data
