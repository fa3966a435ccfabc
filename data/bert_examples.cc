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

constexpr size_t kReviewsPerChunk = 1000;  // reviews per unit of work: results do not depend on threads

uint64_t splitmix(uint64_t x) {  // splitmix64: a seed per chunk
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
  int64_t first_sentence = 0, first_item = 0, first_review = 0;  // global offsets
};

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

// Steps 1-3 of both layouts: the chunks' sentences in final vocabulary ids, the vocabulary
// and the sentence length in `out`.
struct Tokenized {
  std::vector<Chunk> chunks;
  std::vector<const std::vector<int32_t>*> all;  // every sentence, by global index
  int64_t reviews = 0, pair_items = 0;
};

Tokenized tokenize_all(const std::vector<std::string>& reviews, const BertExampleOptions& options, BertExamples& out) {
  Tokenized t;
  // 1. Tokenise chunks of reviews in parallel, each numbering its own tokens.
  t.chunks.resize((reviews.size() + kReviewsPerChunk - 1) / kReviewsPerChunk);
  for_chunks(t.chunks.size(), [&](size_t c) {
    tokenize(reviews, c * kReviewsPerChunk, std::min(reviews.size(), (c + 1) * kReviewsPerChunk), t.chunks[c]);
  });
  // 2. One numbering in order of first appearance (chunk by chunk), counts added up.
  std::unordered_map<std::string, int32_t> global;
  std::vector<std::string> distinct;
  std::vector<int64_t> counts, word_counts;
  std::vector<std::vector<int32_t>> to_global(t.chunks.size());
  int64_t sentences = 0;
  for (size_t c = 0; c < t.chunks.size(); ++c) {
    Chunk& ch = t.chunks[c];
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
    ch.first_sentence = sentences, ch.first_item = t.pair_items, ch.first_review = t.reviews;
    sentences += static_cast<int64_t>(ch.sentences.size());
    t.pair_items += ch.items;
    t.reviews += static_cast<int64_t>(ch.sentences_per_review.size());
  }
  out.sentence_length = percentile_floor(word_counts, options.length_percentile);
  if (out.sentence_length < 1) throw Error("BERT examples: the sentences are empty (length percentile 0)");

  // 3. The vocabulary: tokens seen at least min_freq times, in order of first appearance.
  std::vector<int32_t> final_id(counts.size(), static_cast<int32_t>(BertVocab::kUnk));
  for (size_t p = 0; p < counts.size(); ++p)
    if (counts[p] >= options.min_freq) final_id[p] = static_cast<int32_t>(out.vocab.add(distinct[p]));
  t.all.reserve(static_cast<size_t>(sentences));
  for (size_t c = 0; c < t.chunks.size(); ++c)
    for (auto& s : t.chunks[c].sentences) {
      for (auto& id : s) id = final_id[static_cast<size_t>(to_global[c][static_cast<size_t>(id)])];
      t.all.push_back(&s);
    }
  return t;
}

void allocate(BertExamples& out, int64_t items) {
  const auto cells = static_cast<size_t>(items * out.width);
  out.input_ids.resize(cells);
  out.original.resize(cells);
  out.masked.assign(cells, 0);
  out.is_next.resize(static_cast<size_t>(items));
  out.second_start.resize(static_cast<size_t>(items));
}

// 4. The document's items, chunk by chunk in parallel into their place; a random stream per chunk.
void write_sentence_pairs(const Tokenized& t, const BertExampleOptions& options, BertExamples& out) {
  const int64_t L = out.sentence_length, W = out.width = 2 * L + 1;
  const auto sentences = static_cast<int64_t>(t.all.size());
  allocate(out, t.pair_items);
  const int64_t vocab_size = out.vocab.size();
  for_chunks(t.chunks.size(), [&](size_t c) {
    const Chunk& ch = t.chunks[c];
    Masker masker(options, vocab_size, splitmix(options.seed * 0x100000001B3ULL + c));
    int64_t item = ch.first_item;
    auto add_item = [&](int64_t first, int64_t second, bool next) {
      const size_t at = static_cast<size_t>(item * W);
      int32_t* in = &out.input_ids[at];
      int32_t* orig = &out.original[at];
      uint8_t* sel = &out.masked[at];
      const int64_t va = write_half(*t.all[first], L, orig);
      orig[L] = static_cast<int32_t>(BertVocab::kSep);
      const int64_t vb = write_half(*t.all[second], L, orig + L + 1);
      std::copy(orig, orig + W, in);
      masker.mask(static_cast<int64_t>(t.all[first]->size()), va, in + 1, sel + 1);
      masker.mask(static_cast<int64_t>(t.all[second]->size()), vb, in + L + 2, sel + L + 2);
      out.is_next[static_cast<size_t>(item)] = next ? 1 : 0;
      out.second_start[static_cast<size_t>(item)] = static_cast<int32_t>(L + 1);  // the second [CLS]
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
}

// The windows of a review of n tokens in items of `budget` tokens: whole windows, and the
// rest when it has two tokens (one for each part).
int64_t segment_count(int64_t n, int64_t budget) { return n / budget + (n % budget >= 2 ? 1 : 0); }

// Each review's tokens: its sentences joined by "." (which split_sentences took away) when the
// vocabulary has it.
std::vector<std::vector<int32_t>> review_streams(const Tokenized& t, const BertVocab& vocab) {
  const auto period = static_cast<int32_t>(vocab.id("."));
  std::vector<std::vector<int32_t>> streams(static_cast<size_t>(t.reviews));
  for_chunks(t.chunks.size(), [&](size_t c) {
    const Chunk& ch = t.chunks[c];
    size_t s = 0;
    for (size_t r = 0; r < ch.sentences_per_review.size(); ++r) {
      auto& stream = streams[static_cast<size_t>(ch.first_review) + r];
      for (int64_t k = 0; k < ch.sentences_per_review[r]; ++k, ++s) {
        if (k > 0 && period != BertVocab::kUnk) stream.push_back(period);
        stream.insert(stream.end(), ch.sentences[s].begin(), ch.sentences[s].end());
      }
    }
  });
  return streams;
}

// 4. The paper's items ("[CLS] A [SEP] B [SEP]"), chunk by chunk in parallel.
void write_segments(const Tokenized& t, const BertExampleOptions& options, BertExamples& out) {
  const int64_t W = out.width = options.max_length, budget = W - 3;
  if (budget < 2) throw Error(cat("BERT examples: max_length ", W, " leaves no room for two parts (at least 5)"));
  const auto streams = review_streams(t, out.vocab);
  const auto reviews = static_cast<int64_t>(streams.size());
  std::vector<int64_t> first_item(t.chunks.size() + 1, 0);
  for (size_t c = 0; c < t.chunks.size(); ++c) {
    int64_t n = 0;
    for (size_t r = 0; r < t.chunks[c].sentences_per_review.size(); ++r)
      n += segment_count(static_cast<int64_t>(streams[t.chunks[c].first_review + r].size()), budget);
    first_item[c + 1] = first_item[c] + n;
  }
  allocate(out, first_item.back());
  const int64_t vocab_size = out.vocab.size();
  for_chunks(t.chunks.size(), [&](size_t c) {
    const Chunk& ch = t.chunks[c];
    Masker masker(options, vocab_size, splitmix(options.seed * 0x100000001B3ULL + c));
    int64_t item = first_item[c];
    for (size_t k = 0; k < ch.sentences_per_review.size(); ++k) {
      const int64_t r = ch.first_review + static_cast<int64_t>(k);
      const auto& tokens = streams[static_cast<size_t>(r)];
      const auto n = static_cast<int64_t>(tokens.size());
      for (int64_t pos = 0, m = 0; n - pos >= 2; pos += m, ++item) {
        m = std::min(budget, n - pos);
        const int64_t a = masker.uniform(1, m - 1);
        int64_t b = m - a;
        const int32_t* second = tokens.data() + pos + a;
        bool next = !options.next_sentence || masker.uniform(0, 1) == 0;
        for (int tries = 0; !next && tries < 10; ++tries) {  // a place in another review
          const int64_t other = masker.uniform(0, reviews - 1);
          const auto& o = streams[static_cast<size_t>(other)];
          if (other == r || o.empty()) continue;
          b = std::min<int64_t>(b, static_cast<int64_t>(o.size()));
          second = o.data() + masker.uniform(0, static_cast<int64_t>(o.size()) - b);
          break;
        }
        if (second == tokens.data() + pos + a) next = true;  // no other review to draw from
        const size_t at = static_cast<size_t>(item * W);
        int32_t* orig = &out.original[at];
        orig[0] = static_cast<int32_t>(BertVocab::kCls);
        std::copy(tokens.data() + pos, tokens.data() + pos + a, orig + 1);
        orig[a + 1] = static_cast<int32_t>(BertVocab::kSep);
        std::copy(second, second + b, orig + a + 2);
        orig[a + b + 2] = static_cast<int32_t>(BertVocab::kSep);
        std::fill(orig + a + b + 3, orig + W, static_cast<int32_t>(BertVocab::kPad));
        int32_t* in = &out.input_ids[at];
        std::copy(orig, orig + W, in);
        masker.mask(a, a, in + 1, &out.masked[at] + 1);
        masker.mask(b, b, in + a + 2, &out.masked[at] + a + 2);
        out.is_next[static_cast<size_t>(item)] = next ? 1 : 0;
        out.second_start[static_cast<size_t>(item)] = static_cast<int32_t>(a + 2);
      }
    }
  });
}

}  // namespace

BertExamples build_bert_examples(const std::vector<std::string>& reviews, const BertExampleOptions& options) {
  if (options.masking != "bert" && options.masking != "document")
    throw Error(cat("BERT masking must be bert or document, got '", options.masking, "'"));
  if (options.layout != "sentence_pairs" && options.layout != "segments")
    throw Error(cat("BERT examples: layout must be sentence_pairs or segments, got '", options.layout, "'"));
  BertExamples out;
  const Tokenized t = tokenize_all(reviews, options, out);
  if (options.layout == "segments")
    write_segments(t, options, out);
  else
    write_sentence_pairs(t, options, out);
  return out;
}

}  // namespace zoo::data
