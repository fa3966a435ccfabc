#include "data/gpt2_bpe.h"
#include "core/output_file.h"

#include <unicode/uchar.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/input_file.h"
#include "data/text.h"

namespace zoo::data {

namespace fs = std::filesystem;

namespace {

constexpr const char* kEndOfText = "<|endoftext|>";

// encoder.py's bytes_to_unicode: byte -> a printable code point (as UTF-8), and back.
struct ByteMap {
  std::string to_unicode[256];
  std::map<char32_t, unsigned char> to_byte;
  ByteMap() {
    std::vector<int> printable;
    for (int b = '!'; b <= '~'; ++b) printable.push_back(b);
    for (int b = 0xA1; b <= 0xAC; ++b) printable.push_back(b);
    for (int b = 0xAE; b <= 0xFF; ++b) printable.push_back(b);
    std::vector<bool> is_printable(256, false);
    for (int b : printable) is_printable[b] = true;
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const char32_t c = is_printable[b] ? static_cast<char32_t>(b) : static_cast<char32_t>(256 + extra++);
      to_unicode[b] = utf32_to_utf8(std::u32string(1, c));
      to_byte[c] = static_cast<unsigned char>(b);
    }
  }
};
const ByteMap& byte_map() {
  static const ByteMap m;
  return m;
}

bool is_letter(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_UPPERCASE_LETTER: case U_LOWERCASE_LETTER: case U_TITLECASE_LETTER: case U_MODIFIER_LETTER:
    case U_OTHER_LETTER: return true;
    default: return false;
  }
}
bool is_number(char32_t c) {
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_DECIMAL_DIGIT_NUMBER: case U_LETTER_NUMBER: case U_OTHER_NUMBER: return true;
    default: return false;
  }
}
bool is_other(char32_t c) { return !is_python_space(c) && !is_letter(c) && !is_number(c); }

// Length of the contraction ('s 't 're 've 'm 'll 'd) at s[i], or 0.
size_t contraction(const std::u32string& s, size_t i) {
  if (s[i] != U'\'' || i + 1 >= s.size()) return 0;
  const char32_t a = s[i + 1], b = i + 2 < s.size() ? s[i + 2] : 0;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// Length of " ?X+" at s[i] for the class X, or 0.
size_t run(const std::u32string& s, size_t i, bool (*in)(char32_t)) {
  size_t j = i + (s[i] == U' ' ? 1 : 0);
  const size_t start = j;
  while (j < s.size() && in(s[j])) ++j;
  return j > start ? j - i : 0;
}

size_t match_at(const std::u32string& s, size_t i) {
  if (size_t n = contraction(s, i)) return n;
  for (auto cls : {is_letter, is_number, is_other})
    if (size_t n = run(s, i, cls)) return n;
  size_t j = i;  // \s+(?!\S), else \s+
  while (j < s.size() && is_python_space(s[j])) ++j;
  if (j < s.size() && j - i > 1) return j - i - 1;  // leave the last space to the next word
  return std::max<size_t>(1, j - i);
}

}  // namespace

std::vector<std::string> gpt2_pretokenize(std::string_view text) {
  const std::u32string s = utf8_to_utf32(text);
  std::vector<std::string> pieces;
  for (size_t i = 0; i < s.size();) {
    const size_t n = match_at(s, i);
    pieces.push_back(utf32_to_utf8(s.substr(i, n)));
    i += n;
  }
  return pieces;
}

Gpt2Bpe::Gpt2Bpe(std::map<std::string, int64_t> vocab, std::vector<std::pair<std::string, std::string>> merges)
    : vocab_(std::move(vocab)), merges_(std::move(merges)) {
  tokens_.resize(vocab_.size());
  for (const auto& [token, id] : vocab_) {
    if (id < 0 || id >= static_cast<int64_t>(vocab_.size()) || !tokens_[id].empty())
      throw Error(cat("vocab.json: ids must be 0..", vocab_.size() - 1, " without gaps or repeats (token '", token,
                      "' has ", id, ")"));
    tokens_[id] = token;
  }
  for (int b = 0; b < 256; ++b)
    if (!vocab_.count(byte_map().to_unicode[b]))
      throw Error(cat("vocab.json: no token for byte ", b, "; a byte-level BPE vocabulary has all 256"));
  for (size_t r = 0; r < merges_.size(); ++r) ranks_.emplace(merges_[r], static_cast<int64_t>(r));
  const auto eos = vocab_.find(kEndOfText);
  if (eos != vocab_.end()) eos_ = eos->second;
}

std::unique_ptr<Gpt2Bpe> Gpt2Bpe::from_tokenizer_json(const nlohmann::json& j, const std::string& path) {
  const auto& model = j.contains("model") && j["model"].is_object() ? j["model"] : nlohmann::json::object();
  const std::string type = model.value("type", std::string());
  const auto& pre = j.contains("pre_tokenizer") && j["pre_tokenizer"].is_object() ? j["pre_tokenizer"] : nlohmann::json();
  if (type != "BPE" || pre.is_null() || pre.value("type", std::string()) != "ByteLevel")
    throw Error(cat(path, ": model ", type.empty() ? "(none)" : type, " with pre_tokenizer ",
                    pre.is_null() ? "(none)" : pre.value("type", std::string("(none)")),
                    "; zoo reads byte-level BPE (GPT-2's) from tokenizer.json"));
  if (pre.value("add_prefix_space", false))
    throw Error(cat(path, ": pre_tokenizer.add_prefix_space is true; zoo's GPT-2 BPE adds no prefix space"));
  std::map<std::string, int64_t> vocab;
  std::vector<std::pair<std::string, std::string>> merges;
  try {
    for (const auto& [k, v] : model.at("vocab").items()) vocab[k] = v.get<int64_t>();
    for (const auto& m : model.at("merges")) {
      if (m.is_array() && m.size() == 2) {
        merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
        continue;
      }
      const std::string line = m.get<std::string>();
      const auto space = line.find(' ');
      if (space == std::string::npos || space == 0 || space + 1 == line.size() || line.find(' ', space + 1) != std::string::npos)
        throw Error(cat(path, ": model.merges entry '", line, "' is not two symbols separated by one space"));
      merges.emplace_back(line.substr(0, space), line.substr(space + 1));
    }
    if (j.contains("added_tokens") && j["added_tokens"].is_array())
      for (const auto& t : j["added_tokens"]) vocab.emplace(t.at("content").get<std::string>(), t.at("id").get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": malformed model (", e.what(), "); expected model.vocab {token: id} and model.merges"));
  }
  try {
    return std::make_unique<Gpt2Bpe>(std::move(vocab), std::move(merges));
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
}

std::unique_ptr<Gpt2Bpe> Gpt2Bpe::load(const std::string& dir) {
  const std::string vocab_path = dir + "/vocab.json", merges_path = dir + "/merges.txt";
  if (!fs::exists(vocab_path) && !fs::exists(merges_path) && fs::exists(dir + "/tokenizer.json"))
    return from_tokenizer_json(read_tokenizer_json(dir + "/tokenizer.json"), dir + "/tokenizer.json");
  std::ifstream vin(vocab_path);
  if (!vin) throw Error(cat(vocab_path, ": missing (GPT-2 tokenizers need vocab.json and merges.txt)"));
  std::map<std::string, int64_t> vocab;
  try {
    const auto parsed = nlohmann::json::parse(vin);
    for (const auto& [k, v] : parsed.items()) vocab[k] = v.get<int64_t>();
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(vocab_path, ": malformed (", e.what(), "); expected {\"token\": id, ...}"));
  }
  std::ifstream min(merges_path);
  if (!min) throw Error(cat(merges_path, ": missing (GPT-2 tokenizers need vocab.json and merges.txt)"));
  std::vector<std::pair<std::string, std::string>> merges;
  std::string line;
  for (int64_t n = 1; std::getline(min, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || (n == 1 && line.rfind("#version", 0) == 0)) continue;
    const auto space = line.find(' ');
    if (space == std::string::npos || space == 0 || space + 1 == line.size() ||
        line.find(' ', space + 1) != std::string::npos)
      throw Error(cat(merges_path, ":", n, ": expected two symbols separated by one space, got '", line, "'"));
    merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  try {
    return std::make_unique<Gpt2Bpe>(std::move(vocab), std::move(merges));
  } catch (const Error& e) {
    throw Error(cat(dir, ": ", e.what()));
  }
}

void Gpt2Bpe::encode_piece(const std::string& piece, std::vector<int64_t>& out) const {
  {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    const auto hit = cache_.find(piece);
    if (hit != cache_.end()) {
      out.insert(out.end(), hit->second.begin(), hit->second.end());
      return;
    }
  }
  std::vector<std::string> symbols;
  for (unsigned char b : piece) symbols.push_back(byte_map().to_unicode[b]);
  while (symbols.size() > 1) {  // merge the best-ranked adjacent pair everywhere
    int64_t best = -1;
    std::pair<std::string, std::string> pair;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = ranks_.find({symbols[i], symbols[i + 1]});
      if (it != ranks_.end() && (best < 0 || it->second < best)) best = it->second, pair = it->first;
    }
    if (best < 0) break;
    std::vector<std::string> merged;
    for (size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] == pair.first && symbols[i + 1] == pair.second) {
        merged.push_back(symbols[i] + symbols[i + 1]);
        ++i;
      } else {
        merged.push_back(symbols[i]);
      }
    }
    symbols = std::move(merged);
  }
  std::vector<int64_t> ids;
  for (const auto& s : symbols) {
    const auto it = vocab_.find(s);
    if (it == vocab_.end()) throw Error(cat("GPT-2 BPE: the merged symbol '", s, "' is not in vocab.json"));
    ids.push_back(it->second);
  }
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard<std::mutex> lock(cache_mutex_);
  if (cache_.size() < 100000) cache_.emplace(piece, std::move(ids));
}

std::vector<int64_t> Gpt2Bpe::encode(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
  std::vector<int64_t> out;
  while (!text.empty()) {
    const size_t special = eos_ >= 0 ? text.find(kEndOfText) : std::string_view::npos;
    for (const auto& piece : gpt2_pretokenize(text.substr(0, special))) encode_piece(piece, out);
    if (special == std::string_view::npos) break;
    out.push_back(eos_);
    text.remove_prefix(special + std::char_traits<char>::length(kEndOfText));
  }
  return out;
}

nlohmann::json Gpt2Bpe::tokenizer_json() const {
  const nlohmann::json byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true},
                                     {"use_regex", true}};
  nlohmann::json vocab = nlohmann::json::object();
  for (const auto& [token, id] : vocab_) vocab[token] = id;
  nlohmann::json merges = nlohmann::json::array();
  for (const auto& [a, b] : merges_) merges.push_back(a + " " + b);
  nlohmann::json added = nlohmann::json::array();
  if (eos_ >= 0)
    added.push_back({{"id", eos_}, {"content", kEndOfText}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", true}, {"special", true}});
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", byte_level},
          {"post_processor", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", false}, {"use_regex", true}}},
          {"decoder", {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
          {"model",
           {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", ""},
            {"end_of_word_suffix", ""}, {"fuse_unk", false}, {"byte_fallback", false}, {"vocab", vocab},
            {"merges", merges}}}};
}

std::string Gpt2Bpe::decode(const std::vector<int64_t>& ids) const {
  std::string bytes;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size()) throw Error(cat("id ", id, " is outside the GPT-2 vocabulary of ", vocab_size()));
    if (id == eos_) {
      bytes += kEndOfText;
      continue;
    }
    for (char32_t c : utf8_to_utf32(tokens_[id])) {
      const auto it = byte_map().to_byte.find(c);
      if (it == byte_map().to_byte.end()) throw Error(cat("vocab.json: token '", tokens_[id], "' is not byte-level"));
      bytes.push_back(static_cast<char>(it->second));
    }
  }
  return bytes;
}

void Gpt2Bpe::save(const std::string& dir) const {
  nlohmann::json vocab = nlohmann::json::object();
  for (const auto& [token, id] : vocab_) vocab[token] = id;
  write_file_checked(dir + "/vocab.json", vocab.dump() + "\n");
  std::string merges = "#version: 0.2\n";
  for (const auto& [a, b] : merges_) merges += a + " " + b + "\n";
  write_file_checked(dir + "/merges.txt", merges);
  write_file_checked(dir + "/tokenizer.json", tokenizer_json().dump() + "\n");
  write_file_checked(dir + "/tokenizer_config.json",
                     nlohmann::json{{"tokenizer_class", "GPT2Tokenizer"}, {"zoo_kind", "gpt2"}, {"bos_token", kEndOfText},
                                    {"eos_token", kEndOfText}, {"unk_token", kEndOfText}, {"add_prefix_space", false}}
                             .dump(2) + "\n");
}

std::string Gpt2Bpe::fingerprint() const {
  std::ostringstream all;
  all << "gpt2\n";
  for (const auto& t : tokens_) all << t << '\x1f';
  all << '\n';
  for (const auto& [a, b] : merges_) all << a << ' ' << b << '\n';
  return fnv1a_hex(all.str());
}

}  // namespace zoo::data
