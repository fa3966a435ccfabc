#include "data/wordpiece.h"

#include <filesystem>
#include "core/output_file.h"

#include <fstream>

#include <unicode/uchar.h>

#include "core/error.h"
#include "data/text.h"

namespace zoo::data {

namespace {


bool is_whitespace(char32_t c) {
  return c == U' ' || c == U'\t' || c == U'\n' || c == U'\r' || u_charType(static_cast<UChar32>(c)) == U_SPACE_SEPARATOR;
}

bool is_control(char32_t c) {
  if (c == U'\t' || c == U'\n' || c == U'\r') return false;
  const auto t = u_charType(static_cast<UChar32>(c));
  return t == U_CONTROL_CHAR || t == U_FORMAT_CHAR;
}

bool is_punctuation(char32_t c) {
  if ((c >= 33 && c <= 47) || (c >= 58 && c <= 64) || (c >= 91 && c <= 96) || (c >= 123 && c <= 126)) return true;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_DASH_PUNCTUATION:
    case U_START_PUNCTUATION:
    case U_END_PUNCTUATION:
    case U_CONNECTOR_PUNCTUATION:
    case U_OTHER_PUNCTUATION:
    case U_INITIAL_PUNCTUATION:
    case U_FINAL_PUNCTUATION:
      return true;
    default:
      return false;
  }
}

bool is_cjk(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF) ||
         (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

}  // namespace

WordPiece::WordPiece(std::vector<std::string> tokens, bool lower_case)
    : tokens_(std::move(tokens)), lower_case_(lower_case) {
  for (size_t i = 0; i < tokens_.size(); ++i)
    if (!ids_.emplace(tokens_[i], static_cast<int64_t>(i)).second)
      throw Error(cat("WordPiece vocabulary: '", tokens_[i], "' appears twice (ids ", ids_[tokens_[i]], " and ", i, ")"));
  auto it = ids_.find("[UNK]");
  if (it == ids_.end()) throw Error("WordPiece vocabulary: no [UNK] token");
  unk_ = it->second;
}

std::string WordPiece::vocab_file(const std::string& where) {
  std::error_code ec;
  return std::filesystem::is_directory(where, ec) ? (std::filesystem::path(where) / "vocab.txt").string() : where;
}

WordPiece WordPiece::load(const std::string& path, bool lower_case) {
  auto tokens = read_tokens(path);  // its errors name the file
  try {
    return WordPiece(std::move(tokens), lower_case);
  } catch (const Error& e) {
    throw Error(cat(path, ": ", e.what()));
  }
}

std::vector<std::string> WordPiece::read_tokens(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": missing (a BERT vocab.txt: one token per line)"));
  std::vector<std::string> tokens;
  std::string line;
  for (int64_t n = 1; std::getline(in, line); ++n) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const size_t bad = find_invalid_utf8(line);
    if (bad != std::string::npos) throw Error(cat(path, ":", n, ": invalid UTF-8 at byte ", bad, " of the line"));
    tokens.push_back(line);
  }
  return tokens;
}

void WordPiece::save(const std::string& path) const {
  std::string text;
  for (const auto& t : tokens_) text += t + "\n";
  write_file_checked(path, text);
}

std::vector<std::string> WordPiece::basic_tokens(const std::string& text) const {
  // Clean, space out CJK ideographs, split on whitespace.
  std::u32string spaced;
  for (char32_t c : utf8_to_utf32(text)) {
    if (c == 0 || c == 0xFFFD || is_control(c)) continue;
    if (is_whitespace(c)) {
      spaced += U' ';
    } else if (is_cjk(c)) {
      spaced += U' ';
      spaced += c;
      spaced += U' ';
    } else {
      spaced += c;
    }
  }
  std::vector<std::string> out;
  for (std::string word : python_split(utf32_to_utf8(spaced))) {
    if (lower_case_) word = unicode_to_ascii(to_lower(word));  // lower-case, strip accents
    // Punctuation marks become tokens of their own.
    std::u32string piece;
    for (char32_t c : utf8_to_utf32(word)) {
      if (is_punctuation(c)) {
        if (!piece.empty()) out.push_back(utf32_to_utf8(piece));
        piece.clear();
        out.push_back(utf32_to_utf8(std::u32string(1, c)));
      } else {
        piece += c;
      }
    }
    if (!piece.empty()) out.push_back(utf32_to_utf8(piece));
  }
  return out;
}

void WordPiece::word_pieces(const std::string& word, std::vector<std::string>& out) const {
  const std::u32string chars = utf8_to_utf32(word);
  if (chars.size() > kMaxWordChars) {
    out.push_back(tokens_[static_cast<size_t>(unk_)]);
    return;
  }
  std::vector<std::string> pieces;
  for (size_t start = 0; start < chars.size();) {
    size_t end = chars.size();
    std::string found;
    for (; start < end; --end) {
      std::string candidate = utf32_to_utf8(chars.substr(start, end - start));
      if (start > 0) candidate = "##" + candidate;
      if (ids_.count(candidate)) {
        found = std::move(candidate);
        break;
      }
    }
    if (found.empty()) {  // no piece fits: the whole word is unknown
      out.push_back(tokens_[static_cast<size_t>(unk_)]);
      return;
    }
    pieces.push_back(std::move(found));
    start = end;
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

std::vector<std::string> WordPiece::tokenize(const std::string& text) const {
  std::vector<std::string> out;
  for (const auto& word : basic_tokens(text)) word_pieces(word, out);
  return out;
}

std::vector<int64_t> WordPiece::encode(const std::string& text) const {
  std::vector<int64_t> ids;
  for (const auto& t : tokenize(text)) ids.push_back(id(t));
  return ids;
}

int64_t WordPiece::find(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? -1 : it->second;
}

int64_t WordPiece::id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? unk_ : it->second;
}

}  // namespace zoo::data
