#include "data/text.h"

#include <algorithm>

#include <unicode/locid.h>
#include <unicode/normalizer2.h>
#include <unicode/uchar.h>
#include <unicode/unistr.h>

#include "core/error.h"

namespace zoo::data {
namespace {

bool is_continuation(unsigned char b) { return (b & 0xC0) == 0x80; }

// Decodes the sequence starting at s[i]; returns its length, or 0 when it is invalid.
size_t decode_one(std::string_view s, size_t i, char32_t* cp) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    *cp = b0;
    return 1;
  }
  size_t len;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0) lo = 0xA0;  // overlong
    if (b0 == 0xED) hi = 0x9F;  // surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0) lo = 0x90;  // overlong
    if (b0 == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > s.size()) return 0;
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < lo || b1 > hi) return 0;
  char32_t c = b0 & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (!is_continuation(b)) return 0;
    c = (c << 6) | (b & 0x3F);
  }
  *cp = c;
  return len;
}

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18));
    out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

bool is_ascii(std::string_view s) {
  for (char ch : s) {
    if (static_cast<unsigned char>(ch) >= 0x80) return false;
  }
  return true;
}

std::u32string strip32(const std::u32string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_python_space(s[b])) ++b;
  while (e > b && is_python_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// re.sub(r"[class]+", replacement, s) where `in_class` is the character class.
template <class Pred>
std::u32string replace_runs(const std::u32string& s, Pred in_class,
                            const std::u32string& replacement) {
  std::u32string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    if (in_class(s[i])) {
      while (i < s.size() && in_class(s[i])) ++i;
      out += replacement;
    } else {
      out += s[i++];
    }
  }
  return out;
}

bool is_eng_punct(char32_t c) { return c == U'?' || c == U'.' || c == U'!' || c == U','; }
bool is_ascii_letter(char32_t c) { return (c >= U'a' && c <= U'z') || (c >= U'A' && c <= U'Z'); }
bool is_space_or_quote(char32_t c) { return c == U' ' || c == U'"'; }

// lower(), strip(), unicode_to_ascii() as both preprocess functions start.
std::u32string normalize_for_preprocess(const std::string& s) {
  return utf8_to_utf32(unicode_to_ascii(python_strip(to_lower(s))));
}

const icu::Normalizer2& nfd() {
  static const icu::Normalizer2* instance = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = icu::Normalizer2::getNFDInstance(status);
    if (U_FAILURE(status) || n == nullptr) {
      throw Error(cat("ICU: cannot load the NFD normalizer: ", u_errorName(status)));
    }
    return n;
  }();
  return *instance;
}

}  // namespace

size_t find_invalid_utf8(std::string_view s) {
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    const size_t n = decode_one(s, i, &c);
    if (n == 0) return i;
    i += n;
  }
  return std::string::npos;
}

void check_utf8(std::string_view s, std::string_view what) {
  const size_t bad = find_invalid_utf8(s);
  if (bad != std::string::npos) throw Error(cat(what, ": invalid UTF-8 at byte ", bad));
}

std::u32string space_around(std::u32string_view s, bool (*in_class)(char32_t)) {
  std::u32string out;
  out.reserve(s.size() + 16);
  for (char32_t c : s) {
    if (in_class(c)) {
      out += U' ';
      out += c;
      out += U' ';
    } else {
      out += c;
    }
  }
  return out;
}

std::u32string utf8_to_utf32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  char32_t c;
  for (size_t i = 0; i < s.size();) {
    const size_t n = decode_one(s, i, &c);
    if (n == 0) throw Error(cat("text: invalid UTF-8 at byte ", i));
    out += c;
    i += n;
  }
  return out;
}

std::string utf32_to_utf8(std::u32string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) append_utf8(out, c);
  return out;
}

bool is_python_space(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F);
  if (c < 0x85) return false;
  switch (c) {
    case 0x85:
    case 0xA0:
    case 0x1680:
    case 0x2028:
    case 0x2029:
    case 0x202F:
    case 0x205F:
    case 0x3000:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

std::string python_strip(const std::string& utf8) {
  return utf32_to_utf8(strip32(utf8_to_utf32(utf8)));
}

bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

int64_t python_split_count(const std::string& utf8) {
  if (!is_ascii(utf8)) return static_cast<int64_t>(python_split(utf8).size());
  int64_t n = 0;
  bool in_word = false;
  for (char c : utf8) {
    const bool space = ascii_space(c);
    n += !space && !in_word;
    in_word = !space;
  }
  return n;
}

std::vector<std::string> python_split(const std::string& utf8) {
  if (is_ascii(utf8)) {  // the common case, without the code-point round trip
    std::vector<std::string> out;
    for (size_t i = 0; i < utf8.size();) {
      if (ascii_space(utf8[i])) {
        ++i;
        continue;
      }
      const size_t start = i;
      while (i < utf8.size() && !ascii_space(utf8[i])) ++i;
      out.emplace_back(utf8, start, i - start);
    }
    return out;
  }
  const std::u32string s = utf8_to_utf32(utf8);
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    if (is_python_space(s[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < s.size() && !is_python_space(s[i])) ++i;
    out.push_back(utf32_to_utf8(s.substr(start, i - start)));
  }
  return out;
}

std::string to_lower(const std::string& utf8) {
  if (is_ascii(utf8)) {
    std::string out = utf8;
    for (char& ch : out) {
      if (ch >= 'A' && ch <= 'Z') ch = static_cast<char>(ch - 'A' + 'a');
    }
    return out;
  }
  check_utf8(utf8);
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), utf8.size()));
  u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

std::string unicode_to_ascii(const std::string& utf8) {
  if (is_ascii(utf8)) return utf8;  // ASCII is NFD already and has no marks
  check_utf8(utf8);
  const icu::UnicodeString u =
      icu::UnicodeString::fromUTF8(icu::StringPiece(utf8.data(), utf8.size()));
  UErrorCode status = U_ZERO_ERROR;
  const icu::UnicodeString d = nfd().normalize(u, status);
  if (U_FAILURE(status)) throw Error(cat("ICU: NFD normalisation failed: ", u_errorName(status)));
  std::string out;
  out.reserve(utf8.size());
  for (int32_t i = 0; i < d.length();) {
    const UChar32 c = d.char32At(i);
    i += U16_LENGTH(c);
    if (u_charType(c) != U_NON_SPACING_MARK) append_utf8(out, static_cast<char32_t>(c));
  }
  return out;
}

std::string preprocess_eng(const std::string& s) {
  const std::u32string w = normalize_for_preprocess(s);
  // re.sub(r"([?.!,])", r" \1 ", w)
  const std::u32string padded = space_around(w, is_eng_punct);
  // re.sub(r'[" "]+', " ", w)
  std::u32string collapsed = replace_runs(padded, is_space_or_quote, U" ");
  // re.sub(r"[^a-zA-Z?.!,]+", " ", w)
  collapsed = replace_runs(
      collapsed, [](char32_t c) { return !is_ascii_letter(c) && !is_eng_punct(c); }, U" ");
  // w.rstrip().strip()
  return "<start> " + utf32_to_utf8(strip32(collapsed)) + " <end>";
}

std::string preprocess_chinese(const std::string& s) {
  const std::u32string w = normalize_for_preprocess(s);
  // re.sub(r'[" "]+', "", w), then w.rstrip().strip()
  const std::u32string kept = strip32(replace_runs(w, is_space_or_quote, U""));
  // " ".join(list(w))
  std::string out = "<start> ";
  for (size_t i = 0; i < kept.size(); ++i) {
    if (i > 0) out += ' ';
    append_utf8(out, kept[i]);
  }
  out += " <end>";
  return out;
}

std::vector<std::string> split_tokens(const std::string& s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t end = std::min(s.find(' ', i), s.size());
    if (end > i) out.emplace_back(s, i, end - i);
    i = end + 1;
  }
  return out;
}

std::vector<std::string> basic_english(const std::string& text) {
  std::string spaced;
  basic_english_spaced(text, spaced);
  return python_split(spaced);
}

void basic_english_spaced(const std::string& text, std::string& out) {
  const std::string lower = to_lower(text);
  out.clear();
  out.reserve(lower.size() + lower.size() / 4);
  for (size_t i = 0; i < lower.size(); ++i) {
    const char c = lower[i];
    switch (c) {
      case '\'': out += " '  "; break;
      case '"': break;
      case '.': out += " . "; break;
      case ',': out += " , "; break;
      case '(': out += " ( "; break;
      case ')': out += " ) "; break;
      case '!': out += " ! "; break;
      case '?': out += " ? "; break;
      case ';':
      case ':': out += ' '; break;
      case '<':
        if (lower.compare(i, 6, "<br />") == 0) {
          out += ' ';
          i += 5;
          break;
        }
        out += c;
        break;
      default: out += c;
    }
  }
}

}  // namespace zoo::data
