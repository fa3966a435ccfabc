#include "train/bleu.h"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <unordered_map>

#include "data/text.h"
#include "core/error.h"

namespace zoo {
namespace {

constexpr int kMaxOrder = 4;

void replace_all(std::string& s, std::string_view from, std::string_view to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t hit = s.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(s, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  if (pos == 0) return;  // nothing replaced
  out.append(s, pos, std::string::npos);
  s = std::move(out);
}

bool is_digit(char32_t c) { return c >= U'0' && c <= U'9'; }
bool is_dot_comma(char32_t c) { return c == U'.' || c == U','; }

// [\{-\~\[-\` -\&\(-\+\:-\@\/]: { | } ~  [ \ ] ^ _ `  space ! " # $ % &  ( ) * +
// : ; < = > ? @  /
bool is_13a_symbol(char32_t c) {
  return (c >= 0x7B && c <= 0x7E) || (c >= 0x5B && c <= 0x60) || (c >= 0x20 && c <= 0x26) ||
         (c >= 0x28 && c <= 0x2B) || (c >= 0x3A && c <= 0x40) || c == 0x2F;
}

// re.sub over a two-character pattern (first, second) -> first + mid + second + tail, scanning
// left to right without overlaps, as Python's re.sub does.
template <class First, class Second>
std::u32string sub_pair(const std::u32string& s, First first, Second second,
                        const std::u32string& lead, const std::u32string& mid,
                        const std::u32string& tail) {
  std::u32string out;
  out.reserve(s.size() + s.size() / 4);
  size_t i = 0;
  while (i < s.size()) {
    if (i + 1 < s.size() && first(s[i]) && second(s[i + 1])) {
      out += lead;
      out += s[i];
      out += mid;
      out += s[i + 1];
      out += tail;
      i += 2;
    } else {
      out += s[i++];
    }
  }
  return out;
}

std::string python_rstrip(const std::string& utf8) {
  std::u32string s = data::utf8_to_utf32(utf8);
  while (!s.empty() && data::is_python_space(s.back())) s.pop_back();
  return data::utf32_to_utf8(s);
}

using NgramCounts = std::unordered_map<std::string, int64_t>;

// All n-grams (n = 1..4) of the tokens, each keyed by its tokens joined with ' ' (tokens never
// contain whitespace, so the key is unambiguous).
NgramCounts count_ngrams(const std::vector<std::string>& tokens) {
  NgramCounts counts;
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string key;
    for (int n = 1; n <= kMaxOrder && i + n <= tokens.size(); ++n) {
      if (n > 1) key += ' ';
      key += tokens[i + n - 1];
      ++counts[std::to_string(n) + '|' + key];
    }
  }
  return counts;
}

}  // namespace

std::string tokenize_13a(const std::string& line_in) {
  data::check_utf8(line_in, "BLEU segment");
  std::string line = line_in;
  replace_all(line, "<skipped>", "");
  replace_all(line, "-\n", "");
  replace_all(line, "\n", " ");
  if (line.find('&') != std::string::npos) {
    replace_all(line, "&quot;", "\"");
    replace_all(line, "&amp;", "&");
    replace_all(line, "&lt;", "<");
    replace_all(line, "&gt;", ">");
  }
  const std::u32string padded = data::utf8_to_utf32(" " + line + " ");

  // ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
  std::u32string s = data::space_around(padded, is_13a_symbol);
  const auto not_digit = [](char32_t c) { return !is_digit(c); };
  const auto is_dash = [](char32_t c) { return c == U'-'; };
  s = sub_pair(s, not_digit, is_dot_comma, U"", U" ", U" ");  // ([^0-9])([\.,]) -> "\1 \2 "
  s = sub_pair(s, is_dot_comma, not_digit, U" ", U" ", U"");  // ([\.,])([^0-9]) -> " \1 \2"
  s = sub_pair(s, is_digit, is_dash, U"", U" ", U" ");        // ([0-9])(-) -> "\1 \2 "

  // ' '.join(line.split())
  std::string out;
  for (const std::string& token : data::python_split(data::utf32_to_utf8(s))) {
    if (!out.empty()) out += ' ';
    out += token;
  }
  return out;
}

BleuResult bleu_statistics(const std::vector<std::string>& hypotheses,
                           const std::vector<std::string>& references) {
  if (hypotheses.size() != references.size()) {
    throw Error(cat("BLEU: ", hypotheses.size(), " hypotheses but ", references.size(),
                    " references; need one reference per hypothesis"));
  }
  BleuResult r;
  for (size_t k = 0; k < hypotheses.size(); ++k) {
    const auto hyp = data::python_split(tokenize_13a(python_rstrip(hypotheses[k])));
    const auto ref = data::python_split(tokenize_13a(python_rstrip(references[k])));
    r.sys_len += static_cast<int64_t>(hyp.size());
    r.ref_len += static_cast<int64_t>(ref.size());
    const NgramCounts ref_counts = count_ngrams(ref);
    for (const auto& [key, count] : count_ngrams(hyp)) {
      const int n = key[0] - '0';
      const auto it = ref_counts.find(key);
      if (it != ref_counts.end()) r.correct[n - 1] += std::min(count, it->second);
    }
    for (int n = 1; n <= kMaxOrder; ++n) {
      r.total[n - 1] += std::max<int64_t>(0, static_cast<int64_t>(hyp.size()) - n + 1);
    }
  }
  return r;
}

BleuResult bleu_score(BleuResult r) {
  if (r.sys_len < r.ref_len) {
    r.bp = r.sys_len > 0 ? std::exp(1.0 - static_cast<double>(r.ref_len) / r.sys_len) : 0.0;
  } else {
    r.bp = 1.0;
  }
  r.precisions.fill(0.0);
  if (std::all_of(r.correct.begin(), r.correct.end(), [](int64_t c) { return c == 0; })) {
    r.score = 0.0;
    return r;
  }
  double smooth = 1.0;
  double log_sum = 0.0;
  bool zero = false;
  for (int n = 0; n < kMaxOrder; ++n) {
    if (r.total[n] == 0) {  // sacreBLEU stops here; the remaining precisions stay 0
      zero = true;
      break;
    }
    if (r.correct[n] == 0) {
      smooth *= 2.0;
      r.precisions[n] = 100.0 / (smooth * static_cast<double>(r.total[n]));
    } else {
      r.precisions[n] = 100.0 * static_cast<double>(r.correct[n]) / static_cast<double>(r.total[n]);
    }
    log_sum += std::log(r.precisions[n]);
  }
  // sacreBLEU takes log(0) as -9999999999, which makes exp() of the mean 0.
  r.score = zero ? 0.0 : r.bp * std::exp(log_sum / kMaxOrder);
  return r;
}

BleuResult corpus_bleu(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references) {
  return bleu_score(bleu_statistics(hypotheses, references));
}

void add_bleu_sums(const BleuResult& statistics, const std::string& prefix, std::map<std::string, double>& sums) {
  sums[prefix + "sys_len"] += static_cast<double>(statistics.sys_len);
  sums[prefix + "ref_len"] += static_cast<double>(statistics.ref_len);
  for (int n = 1; n <= kMaxOrder; ++n) {
    sums[prefix + "correct_" + std::to_string(n)] += static_cast<double>(statistics.correct[n - 1]);
    sums[prefix + "total_" + std::to_string(n)] += static_cast<double>(statistics.total[n - 1]);
  }
}

BleuResult bleu_from_sums(const std::map<std::string, double>& sums, const std::string& prefix) {
  const auto get = [&](const std::string& key) {
    const auto it = sums.find(prefix + key);
    return it == sums.end() ? int64_t{0} : static_cast<int64_t>(std::llround(it->second));
  };
  BleuResult r;
  r.sys_len = get("sys_len");
  r.ref_len = get("ref_len");
  for (int n = 1; n <= kMaxOrder; ++n) {
    r.correct[n - 1] = get("correct_" + std::to_string(n));
    r.total[n - 1] = get("total_" + std::to_string(n));
  }
  return r;
}

}  // namespace zoo
