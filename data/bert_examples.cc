#include "data/bert_examples.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "core/error.h"
#include "data/text.h"

namespace zoo::data {

BertVocab::BertVocab() {
  for (const char* s : {"[CLS]", "[PAD]", "[MASK]", "[SEP]", "[UNK]"}) add(s);
}

int64_t BertVocab::add(const std::string& token) {
  auto [it, inserted] = ids_.emplace(token, static_cast<int64_t>(tokens_.size()));
  if (inserted) tokens_.push_back(token);
  return it->second;
}

int64_t BertVocab::id(const std::string& token) const {
  auto it = ids_.find(token);
  return it == ids_.end() ? kUnk : it->second;
}

std::vector<std::string> split_sentences(const std::string& review) {
  std::vector<std::string> out;
  size_t begin = 0;
  for (size_t at = review.find(". "); at != std::string::npos; at = review.find(". ", begin)) {
    out.push_back(review.substr(begin, at - begin));
    begin = at + 2;
  }
  out.push_back(review.substr(begin));
  return out;
}

int64_t percentile_floor(std::vector<int64_t> values, double q) {
  if (values.empty()) throw Error("percentile of no values (no sentences)");
  std::sort(values.begin(), values.end());
  const double rank = q / 100.0 * static_cast<double>(values.size() - 1);
  const auto lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, values.size() - 1);
  const double value = static_cast<double>(values[lo]) + (rank - static_cast<double>(lo)) *
                                                             static_cast<double>(values[hi] - values[lo]);
  return static_cast<int64_t>(value);  // int() truncates
}

namespace {

// Python's round() for the masked-token count: halves go to the even neighbour.
int64_t round_half_even(double x) { return static_cast<int64_t>(std::nearbyint(x)); }

class Masker {
 public:
  Masker(const BertExampleOptions& o, int64_t vocab_size) : o_(o), vocab_size_(vocab_size), rng_(o.seed) {}

  // Masks `ids` in place; sets selected[i] for every position chosen for MLM.
  void mask(std::vector<int32_t>& ids, std::vector<uint8_t>& selected) {
    const auto n = static_cast<int64_t>(ids.size());
    selected.assign(ids.size(), 0);
    if (n == 0) return;
    const int64_t k = round_half_even(static_cast<double>(n) * o_.mask_probability);
    if (o_.masking == "document") {  // k draws with replacement; 80% [MASK], 20% a random word
      for (int64_t d = 0; d < k; ++d) {
        const int64_t i = uniform(0, n - 1);
        ids[i] = unit() < 0.8 ? static_cast<int32_t>(BertVocab::kMask) : random_word();
        selected[i] = 1;
      }
      return;
    }
    positions_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) positions_[i] = i;
    for (int64_t d = 0; d < k; ++d) {  // partial Fisher-Yates: k distinct positions
      std::swap(positions_[d], positions_[uniform(d, n - 1)]);
      const int64_t i = positions_[d];
      const double r = unit();
      if (r < 0.8) ids[i] = static_cast<int32_t>(BertVocab::kMask);
      else if (r < 0.9) ids[i] = random_word();
      selected[i] = 1;
    }
  }
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }

 private:
  double unit() { return std::uniform_real_distribution<double>(0.0, 1.0)(rng_); }
  int32_t random_word() {
    return static_cast<int32_t>(vocab_size_ > BertVocab::kFirstWord ? uniform(BertVocab::kFirstWord, vocab_size_ - 1)
                                                                    : BertVocab::kUnk);
  }
  const BertExampleOptions& o_;
  int64_t vocab_size_;
  std::mt19937_64 rng_;
  std::vector<int64_t> positions_;
};

// "[CLS] sentence" cut or padded to `length` (ids and selection flags), appended to the item.
void append_half(const std::vector<int32_t>& ids, const std::vector<uint8_t>& selected, int64_t length,
                 std::vector<int32_t>& out_ids, std::vector<uint8_t>* out_selected) {
  for (int64_t p = 0; p < length; ++p) {
    const int64_t i = p - 1;  // position in the sentence; p = 0 is [CLS]
    const bool inside = i >= 0 && i < static_cast<int64_t>(ids.size());
    out_ids.push_back(p == 0 ? static_cast<int32_t>(BertVocab::kCls)
                             : inside ? ids[i] : static_cast<int32_t>(BertVocab::kPad));
    if (out_selected) out_selected->push_back(inside ? selected[i] : 0);
  }
}

}  // namespace

BertExamples build_bert_examples(const std::vector<std::string>& reviews, const BertExampleOptions& options) {
  if (options.masking != "bert" && options.masking != "document")
    throw Error(cat("BERT masking must be bert or document, got '", options.masking, "'"));
  BertExamples out;
  // Sentences of every review, their word counts and tokens.
  std::vector<std::vector<std::string>> tokens;
  std::vector<int64_t> word_counts, first_sentence;  // first_sentence[r]: review r's first index
  for (const auto& review : reviews) {
    first_sentence.push_back(static_cast<int64_t>(tokens.size()));
    for (const auto& s : split_sentences(review)) {
      word_counts.push_back(static_cast<int64_t>(python_split(s).size()));
      tokens.push_back(basic_english(s));
    }
  }
  first_sentence.push_back(static_cast<int64_t>(tokens.size()));
  out.sentence_length = percentile_floor(word_counts, options.length_percentile);
  if (out.sentence_length < 1) throw Error("BERT examples: the sentences are empty (length percentile 0)");
  out.width = 2 * out.sentence_length + 1;

  // Vocabulary: tokens seen at least min_freq times, in order of first appearance.
  std::unordered_map<std::string, int64_t> counts;
  std::vector<const std::string*> order;
  for (const auto& sentence : tokens)
    for (const auto& t : sentence)
      if (counts[t]++ == 0) order.push_back(&t);
  for (const std::string* t : order)
    if (counts[*t] >= options.min_freq) out.vocab.add(*t);

  std::vector<std::vector<int32_t>> ids(tokens.size());
  for (size_t s = 0; s < tokens.size(); ++s)
    for (const auto& t : tokens[s]) ids[s].push_back(static_cast<int32_t>(out.vocab.id(t)));
  tokens.clear();

  Masker masker(options, out.vocab.size());
  std::vector<int32_t> a, b;
  std::vector<uint8_t> sa, sb;
  auto add_item = [&](int64_t first, int64_t second, bool next) {
    a = ids[first], b = ids[second];
    masker.mask(a, sa);
    masker.mask(b, sb);
    append_half(a, sa, out.sentence_length, out.input_ids, &out.masked);
    out.input_ids.push_back(static_cast<int32_t>(BertVocab::kSep));
    out.masked.push_back(0);
    append_half(b, sb, out.sentence_length, out.input_ids, &out.masked);
    append_half(ids[first], {}, out.sentence_length, out.original, nullptr);
    out.original.push_back(static_cast<int32_t>(BertVocab::kSep));
    append_half(ids[second], {}, out.sentence_length, out.original, nullptr);
    out.is_next.push_back(next ? 1 : 0);
  };
  const auto n_sentences = static_cast<int64_t>(ids.size());
  for (size_t r = 0; r + 1 < first_sentence.size(); ++r) {
    for (int64_t s = first_sentence[r]; s + 1 < first_sentence[r + 1]; ++s) {
      add_item(s, s + 1, true);
      const int64_t first = masker.uniform(0, n_sentences - 1);
      int64_t second = masker.uniform(0, n_sentences - 1);
      while (second == first + 1) second = masker.uniform(0, n_sentences - 1);
      add_item(first, second, false);
    }
  }
  return out;
}

}  // namespace zoo::data
