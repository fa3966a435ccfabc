#pragma once
// Corpus BLEU as sacreBLEU computes it by default (BLEU() with tokenize='13a',
// smooth_method='exp', lowercase=False, max_ngram_order=4, effective_order=False), for one
// reference per hypothesis:
//
//  * each segment is rstrip()ed and tokenised with tokenize_13a (the mteval-v13a rules), then
//    split on whitespace;
//  * clipped n-gram matches and n-gram totals (n = 1..4) and the lengths are summed over the
//    corpus;
//  * brevity penalty bp = exp(1 - ref_len / sys_len) when sys_len < ref_len (0 when sys_len is
//    0), else 1;
//  * no matching n-gram of any order -> score 0; otherwise precision_n = 100 * correct / total,
//    and an order with 0 correct gets 100 / (2^k * total), k counting such orders so far
//    ('exp' smoothing, as mteval-v13a). An order with no hypothesis n-gram at all (total 0,
//    i.e. the whole corpus has fewer than n tokens per segment) makes the score 0.
//  * score = bp * exp(mean(log precision_n)), on a 0..100 scale.
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace zoo {

/// The score and its statistics; precisions are in percent, as sacreBLEU reports them.
struct BleuResult {
  double score = 0.0;                  ///< 0..100
  std::array<double, 4> precisions{};  ///< smoothed n-gram precisions, percent
  double bp = 0.0;                     ///< brevity penalty
  int64_t sys_len = 0;                 ///< hypothesis tokens
  int64_t ref_len = 0;                 ///< reference tokens
  std::array<int64_t, 4> correct{};    ///< clipped n-gram matches
  std::array<int64_t, 4> total{};      ///< hypothesis n-grams
};

/// sacreBLEU's Tokenizer13a: drops "<skipped>", joins "-\n", maps "\n" to " ", unescapes
/// &quot; &amp; &lt; &gt; (in that order), puts spaces around ASCII punctuation and symbols
/// except ' - . , ; before '.' and ',' unless a digit precedes, after them unless a digit
/// follows; around '-' after a digit; then collapses whitespace.
/// "It's 3.5-4, (a) test." -> "It's 3.5 - 4 , ( a ) test ."  Throws zoo::Error on invalid UTF-8.
std::string tokenize_13a(const std::string& line);

/// The statistics BLEU is computed from (sys_len, ref_len, correct, total), which add up over
/// the parts of a corpus; score, precisions and bp are left 0. Throws as corpus_bleu.
BleuResult bleu_statistics(const std::vector<std::string>& hypotheses, const std::vector<std::string>& references);

/// `statistics` (summed over a corpus's parts) with score, precisions and bp computed.
BleuResult bleu_score(BleuResult statistics);

/// The statistics as evaluation sums named prefix + "sys_len", "ref_len", "correct_1".. "correct_4",
/// "total_1".. "total_4", added to `sums`; and read back (0 where a key is absent).
void add_bleu_sums(const BleuResult& statistics, const std::string& prefix, std::map<std::string, double>& sums);
BleuResult bleu_from_sums(const std::map<std::string, double>& sums, const std::string& prefix);

/// Corpus BLEU of `hypotheses` against one reference each (raw, untokenised text). Throws
/// zoo::Error when the two lists differ in length or a segment is not valid UTF-8.
BleuResult corpus_bleu(const std::vector<std::string>& hypotheses,
                       const std::vector<std::string>& references);

}  // namespace zoo
