#include "data/bert_examples.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <cmath>
#include <deque>
#include <string_view>
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

constexpr size_t kChunk = 1000;  // reviews per unit of work: results do not depend on threads

uint64_t mix(uint64_t x) {  // splitmix64: a seed per chunk
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

// Runs f(chunk) for chunks 0..n-1 on the machine's cores.
void for_chunks(size_t n, const std::function<void(size_t)>& f) {
  const size_t workers = std::max<size_t>(1, std::min<size_t>(n, std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  auto work = [&] {
    for (size_t c; (c = next++) < n;) {
      try {
        f(c);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
      }
    }
  };
  std::vector<std::thread> threads;
  for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  work();
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

// One chunk of reviews, tokenised: local ids numbered in order of first appearance.
struct Chunk {
  std::deque<std::string> tokens;  // local id -> token (a deque: the map below views them)
  std::vector<int64_t> counts;     // local id -> occurrences
  std::vector<std::vector<int32_t>> sentences;
  std::vector<int64_t> word_counts;
  std::vector<int64_t> sentences_per_review;
  int64_t items = 0;   // 2 per pair of consecutive sentences
  int64_t first_sentence = 0, first_item = 0;  // global offsets
};

bool ascii_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f'); }

// The whitespace-separated words of `s` as views into it (python_split's result, without
// copies, for ASCII text); other text goes through python_split into `owned`.
void split_views(const std::string& s, std::vector<std::string>& owned, std::vector<std::string_view>& out) {
  out.clear();
  if (std::any_of(s.begin(), s.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; })) {
    owned = python_split(s);
    for (const auto& w : owned) out.emplace_back(w);
    return;
  }
  for (size_t i = 0; i < s.size();) {
    if (ascii_space(s[i])) {
      ++i;
      continue;
    }
    const size_t start = i;
    while (i < s.size() && !ascii_space(s[i])) ++i;
    out.emplace_back(s.data() + start, i - start);
  }
}

void tokenize(const std::vector<std::string>& reviews, size_t begin, size_t end, Chunk& c) {
  std::unordered_map<std::string_view, int32_t> local;
  std::string spaced;
  std::vector<std::string> owned;
  std::vector<std::string_view> words;
  for (size_t r = begin; r < end; ++r) {
    const auto sentences = split_sentences(reviews[r]);
    c.sentences_per_review.push_back(static_cast<int64_t>(sentences.size()));
    c.items += 2 * (static_cast<int64_t>(sentences.size()) - 1);
    for (const auto& s : sentences) {
      c.word_counts.push_back(python_split_count(s));
      basic_english_spaced(s, spaced);
      split_views(spaced, owned, words);
      std::vector<int32_t> ids;
      ids.reserve(words.size());
      for (const auto& w : words) {
        auto it = local.find(w);
        if (it == local.end()) {
          c.tokens.emplace_back(w);
          it = local.emplace(c.tokens.back(), static_cast<int32_t>(c.counts.size())).first;
          c.counts.push_back(0);
        }
        ++c.counts[it->second];
        ids.push_back(it->second);
      }
      c.sentences.push_back(std::move(ids));
    }
  }
}

class Masker {
 public:
  Masker(const BertExampleOptions& o, int64_t vocab_size, uint64_t seed) : o_(o), vocab_size_(vocab_size), rng_(seed) {}

  // Masks a sentence of n tokens written at out[0..visible) (the rest was cut): replaced ids
  // go to out, selections to selected.
  void mask(int64_t n, int64_t visible, int32_t* out, uint8_t* selected) {
    if (n == 0) return;
    const int64_t k = round_half_even(static_cast<double>(n) * o_.mask_probability);
    if (o_.masking == "document") {  // k draws with replacement; 80% [MASK], 20% a random word
      for (int64_t d = 0; d < k; ++d) {
        const int64_t i = uniform(0, n - 1);
        const int32_t id = unit() < 0.8 ? static_cast<int32_t>(BertVocab::kMask) : random_word();
        if (i < visible) out[i] = id, selected[i] = 1;
      }
      return;
    }
    positions_.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) positions_[i] = i;
    for (int64_t d = 0; d < k; ++d) {  // partial Fisher-Yates: k distinct positions
      std::swap(positions_[d], positions_[uniform(d, n - 1)]);
      const int64_t i = positions_[d];
      const double r = unit();
      const int32_t id = r < 0.8 ? static_cast<int32_t>(BertVocab::kMask) : r < 0.9 ? random_word() : -1;
      if (i < visible) {
        if (id >= 0) out[i] = id;
        selected[i] = 1;
      }
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

// "[CLS] sentence" cut or padded to `length` at out[0..length); returns how many of the
// sentence's tokens are visible.
int64_t write_half(const std::vector<int32_t>& ids, int64_t length, int32_t* out) {
  out[0] = static_cast<int32_t>(BertVocab::kCls);
  const int64_t visible = std::min<int64_t>(static_cast<int64_t>(ids.size()), length - 1);
  std::copy(ids.begin(), ids.begin() + visible, out + 1);
  std::fill(out + 1 + visible, out + length, static_cast<int32_t>(BertVocab::kPad));
  return visible;
}

}  // namespace

BertExamples build_bert_examples(const std::vector<std::string>& reviews, const BertExampleOptions& options) {
  if (options.masking != "bert" && options.masking != "document")
    throw Error(cat("BERT masking must be bert or document, got '", options.masking, "'"));
  BertExamples out;
  // 1. Tokenise chunks of reviews in parallel, each numbering its own tokens.
  std::vector<Chunk> chunks((reviews.size() + kChunk - 1) / kChunk);
  for_chunks(chunks.size(), [&](size_t c) {
    tokenize(reviews, c * kChunk, std::min(reviews.size(), (c + 1) * kChunk), chunks[c]);
  });
  // 2. One numbering in order of first appearance (chunk by chunk), counts added up.
  std::unordered_map<std::string, int32_t> global;
  std::vector<std::string> distinct;
  std::vector<int64_t> counts, word_counts;
  std::vector<std::vector<int32_t>> to_global(chunks.size());
  int64_t sentences = 0, items = 0;
  for (size_t c = 0; c < chunks.size(); ++c) {
    Chunk& ch = chunks[c];
    for (size_t l = 0; l < ch.tokens.size(); ++l) {
      auto [it, inserted] = global.emplace(ch.tokens[l], static_cast<int32_t>(distinct.size()));
      if (inserted) {
        distinct.push_back(ch.tokens[l]);
        counts.push_back(0);
      }
      counts[it->second] += ch.counts[l];
      to_global[c].push_back(it->second);
    }
    word_counts.insert(word_counts.end(), ch.word_counts.begin(), ch.word_counts.end());
    ch.first_sentence = sentences, ch.first_item = items;
    sentences += static_cast<int64_t>(ch.sentences.size());
    items += ch.items;
  }
  out.sentence_length = percentile_floor(word_counts, options.length_percentile);
  if (out.sentence_length < 1) throw Error("BERT examples: the sentences are empty (length percentile 0)");
  const int64_t L = out.sentence_length, W = out.width = 2 * L + 1;

  // 3. The vocabulary: tokens seen at least min_freq times, in order of first appearance.
  std::vector<int32_t> final_id(counts.size(), static_cast<int32_t>(BertVocab::kUnk));
  for (size_t p = 0; p < counts.size(); ++p)
    if (counts[p] >= options.min_freq) final_id[p] = static_cast<int32_t>(out.vocab.add(distinct[p]));
  std::vector<const std::vector<int32_t>*> all;  // every sentence, by global index
  all.reserve(static_cast<size_t>(sentences));
  for (size_t c = 0; c < chunks.size(); ++c)
    for (auto& s : chunks[c].sentences) {
      for (auto& id : s) id = final_id[static_cast<size_t>(to_global[c][static_cast<size_t>(id)])];
      all.push_back(&s);
    }

  // 4. The items, chunk by chunk in parallel into their place; a random stream per chunk.
  out.input_ids.resize(static_cast<size_t>(items * W));
  out.original.resize(static_cast<size_t>(items * W));
  out.masked.assign(static_cast<size_t>(items * W), 0);
  out.is_next.resize(static_cast<size_t>(items));
  const int64_t vocab_size = out.vocab.size();
  for_chunks(chunks.size(), [&](size_t c) {
    const Chunk& ch = chunks[c];
    Masker masker(options, vocab_size, mix(options.seed * 0x100000001B3ULL + c));
    int64_t item = ch.first_item;
    auto add_item = [&](int64_t first, int64_t second, bool next) {
      const size_t at = static_cast<size_t>(item * W);
      int32_t* in = &out.input_ids[at];
      int32_t* orig = &out.original[at];
      uint8_t* sel = &out.masked[at];
      const int64_t va = write_half(*all[first], L, orig);
      orig[L] = static_cast<int32_t>(BertVocab::kSep);
      const int64_t vb = write_half(*all[second], L, orig + L + 1);
      std::copy(orig, orig + W, in);
      masker.mask(static_cast<int64_t>(all[first]->size()), va, in + 1, sel + 1);
      masker.mask(static_cast<int64_t>(all[second]->size()), vb, in + L + 2, sel + L + 2);
      out.is_next[static_cast<size_t>(item)] = next ? 1 : 0;
      ++item;
    };
    int64_t s = ch.first_sentence;
    for (int64_t n : ch.sentences_per_review) {
      for (int64_t k = 0; k + 1 < n; ++k) {
        add_item(s + k, s + k + 1, true);
        const int64_t first = masker.uniform(0, sentences - 1);
        int64_t second = masker.uniform(0, sentences - 1);
        while (second == first + 1) second = masker.uniform(0, sentences - 1);
        add_item(first, second, false);
      }
      s += n;
    }
  });
  return out;
}

}  // namespace zoo::data
