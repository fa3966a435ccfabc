#pragma once
// Unicode text helpers and the sentence preprocessing of the Chinese->English translation
// tutorial, ported from its Python:
//
//   unicode_to_ascii(s) = ''.join(c for c in unicodedata.normalize('NFD', s)
//                                 if unicodedata.category(c) != 'Mn')
//   preprocess_eng(w)     -> '<start> ' + ... + ' <end>'   (words and ?.!, separated by spaces)
//   preprocess_chinese(w) -> '<start> ' + ... + ' <end>'   (one token per code point)
//
// Every function takes and returns UTF-8 and throws zoo::Error on invalid UTF-8 (as Python's
// strict utf-8 codec would refuse to decode it). The Python regexes are implemented by hand over
// code points (std::regex is slow and not Unicode-aware).
//
// Known differences from CPython 3.11 (Unicode 14.0) with ICU 72 (Unicode 15.0): code points
// assigned in Unicode 15 (lower-casing, NFD, category Mn) can differ. Lower-casing is ICU's
// full, language-independent (root locale) mapping, which like str.lower() applies the
// SpecialCasing.txt unconditional mappings ("İ" -> "i̇") and the Final_Sigma rule.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace zoo::data {

/// Byte offset of the first invalid UTF-8 sequence in `s`, or std::string::npos when `s` is
/// valid. Overlong forms, surrogates (U+D800..U+DFFF) and values above U+10FFFF are invalid.
size_t find_invalid_utf8(std::string_view s);

/// Throws zoo::Error "<what>: invalid UTF-8 at byte N" when `s` is not valid UTF-8.
void check_utf8(std::string_view s, std::string_view what = "text");

/// UTF-8 -> code points; throws zoo::Error on invalid UTF-8.
std::u32string utf8_to_utf32(std::string_view s);

/// Code points -> UTF-8 (the input must hold valid scalar values).
std::string utf32_to_utf8(std::u32string_view s);

/// Python's str.isspace() for one code point (Unicode White_Space of CPython: \t\n\v\f\r,
/// \x1c-\x1f, space, U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F, U+205F,
/// U+3000).
bool is_python_space(char32_t c);
/// str.isspace() for an ASCII byte: \t\n\v\f\r, \x1c-\x1f and the space.
bool ascii_space(char c);

/// re.sub(r"([class])", r" \1 ", s): a space before and after every code point for which
/// `in_class` is true. Shared by preprocess_eng and BLEU's 13a tokeniser.
std::u32string space_around(std::u32string_view s, bool (*in_class)(char32_t));

/// Python's str.strip() without arguments: removes leading and trailing Unicode whitespace.
std::string python_strip(const std::string& utf8);

/// Python's str.split() without arguments: splits on runs of Unicode whitespace.
std::vector<std::string> python_split(const std::string& utf8);
/// len(s.split()), without building the pieces.
int64_t python_split_count(const std::string& utf8);

/// Python's str.lower() (full Unicode lower-casing, root locale).
std::string to_lower(const std::string& utf8);

/// NFD, then drops every non-spacing mark (general category Mn): "Crème brûlée" -> "Creme
/// brulee". Not an ASCII folding despite its name: "ß", "ø", CJK are kept.
std::string unicode_to_ascii(const std::string& utf8);

/// The tutorial's preprocess_eng: lower-case, strip, unicode_to_ascii, put spaces around
/// ?.!, and replace every run of other characters (digits, quotes, apostrophes, non-ASCII
/// letters...) by one space, then wrap in "<start> ... <end>".
/// "He said \"Stop!\"" -> "<start> he said stop ! <end>".
std::string preprocess_eng(const std::string& s);

/// The tutorial's preprocess_chinese: lower-case, strip, unicode_to_ascii, delete ASCII spaces
/// and double quotes, strip again, separate every code point by a space, then wrap in
/// "<start> ... <end>". "我爱你。" -> "<start> 我 爱 你 。 <end>".
std::string preprocess_chinese(const std::string& s);

/// torchtext's get_tokenizer("basic_english") (document 000's BERT data): lower-case, then in
/// order: ' -> " '  ", drop ", . -> " . ", "<br />" -> " ", , ( ) ! ? -> spaced, ; : -> " ",
/// and split on whitespace. "Don't stop." -> {"don", "'", "t", "stop", "."}.
std::vector<std::string> basic_english(const std::string& text);
/// basic_english before the split: the lower-cased text with its replacements, into `out`.
void basic_english_spaced(const std::string& text, std::string& out);

/// Splits on ' ' only, dropping empty pieces (Keras text_to_word_sequence with split=' ').
/// Other whitespace (tabs, U+3000) stays inside tokens.
std::vector<std::string> split_tokens(const std::string& s);

}  // namespace zoo::data
