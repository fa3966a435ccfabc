#include "data/char_tokenizer.h"
#include "core/output_file.h"

#include <cstdio>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/text.h"

namespace zoo::data {

namespace {
std::string code_point_name(char32_t c) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "U+%04X", static_cast<unsigned>(c));
  return buf;
}
}  // namespace

CharTokenizer::CharTokenizer(std::u32string chars) : chars_(std::move(chars)) {
  for (size_t i = 0; i < chars_.size(); ++i)
    if (!ids_.emplace(chars_[i], static_cast<int64_t>(i)).second)
      throw Error(cat("character vocabulary: ", code_point_name(chars_[i]), " appears twice"));
}

std::unique_ptr<CharTokenizer> CharTokenizer::learn(const std::vector<std::string>& files) {
  std::set<char32_t> seen;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(cat(file, ": cannot open"));
    std::string carry, buf(1 << 20, '\0');
    int64_t offset = 0, total = 0;  // offset: file position of carry[0]
    while (in) {
      in.read(&buf[0], static_cast<std::streamsize>(buf.size()));
      const auto got = static_cast<size_t>(in.gcount());
      if (got == 0) break;
      total += static_cast<int64_t>(got);
      carry.append(buf, 0, got);
      size_t cut = carry.size();  // keep an unfinished character for the next piece
      size_t back = 0;
      while (cut > 0 && back < 3 && (static_cast<unsigned char>(carry[cut - 1]) & 0xC0) == 0x80) --cut, ++back;
      if (cut > 0 && static_cast<unsigned char>(carry[cut - 1]) >= 0xC0 && in) --cut;
      else cut = carry.size();
      const std::string_view piece(carry.data(), cut);
      const size_t bad = find_invalid_utf8(piece);
      if (bad != std::string::npos)
        throw Error(cat(file, ": invalid UTF-8 at byte ", offset + static_cast<int64_t>(bad),
                        "; convert the file to UTF-8"));
      for (char32_t c : utf8_to_utf32(piece)) seen.insert(c);
      offset += static_cast<int64_t>(cut);
      carry.erase(0, cut);
    }
    if (!carry.empty()) throw Error(cat(file, ": invalid UTF-8 at byte ", offset, " (a truncated character)"));
    if (total == 0) throw Error(cat(file, ": empty file; give text files with content"));
  }
  if (seen.empty()) throw Error("no text to learn characters from");
  return std::make_unique<CharTokenizer>(std::u32string(seen.begin(), seen.end()));
}

std::unique_ptr<CharTokenizer> CharTokenizer::load(const std::string& dir) {
  const std::string path = dir + "/char_vocab.json";
  std::ifstream in(path);
  if (!in) throw Error(cat(path, ": missing (a character tokenizer's vocabulary)"));
  try {
    const auto j = nlohmann::json::parse(in);
    return std::make_unique<CharTokenizer>(utf8_to_utf32(j.at("chars").get<std::string>()));
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat(path, ": malformed (", e.what(), "); expected {\"chars\": \"...\"}"));
  }
}

std::vector<int64_t> CharTokenizer::encode(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
  std::vector<int64_t> out;
  size_t byte = 0;
  for (char32_t c : utf8_to_utf32(text)) {
    const auto it = ids_.find(c);
    if (it == ids_.end())
      throw Error(cat("text: the character ", code_point_name(c), " at byte ", byte,
                      " is not in this character vocabulary (", chars_.size(),
                      " characters learnt from the training text); remove it or retrain with text that has it"));
    out.push_back(it->second);
    byte += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return out;
}

std::string CharTokenizer::decode(const std::vector<int64_t>& ids) const {
  std::u32string s;
  for (int64_t id : ids) {
    if (id < 0 || id >= vocab_size())
      throw Error(cat("id ", id, " is outside the character vocabulary of ", vocab_size()));
    s.push_back(chars_[id]);
  }
  return utf32_to_utf8(s);
}

void CharTokenizer::save(const std::string& dir) const {
  write_file_checked(dir + "/char_vocab.json", nlohmann::json{{"chars", utf32_to_utf8(chars_)}}.dump() + "\n");
  write_file_checked(dir + "/tokenizer_config.json", nlohmann::json{{"zoo_kind", "char"}}.dump(2) + "\n");
}

std::string CharTokenizer::fingerprint() const { return fnv1a_hex("char\n" + utf32_to_utf8(chars_)); }

}  // namespace zoo::data
