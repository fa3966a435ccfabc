#include "data/wordpiece_trainer.h"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <queue>
#include <set>
#include <unordered_map>

#include "core/error.h"
#include "data/text.h"
#include "data/wordpiece.h"

namespace zoo::data {

namespace {

// The words of the files and how often each occurs.
std::unordered_map<std::string, int64_t> count_words(const std::vector<std::string>& files, bool lower_case) {
  const WordPiece basic({"[UNK]"}, lower_case);  // for its basic tokenizer
  std::unordered_map<std::string, int64_t> counts;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw Error(cat(file, ": cannot open"));
    std::string line;
    int64_t offset = 0, n = 0;
    while (std::getline(in, line)) {
      ++n;
      const size_t bad = find_invalid_utf8(line);
      if (bad != std::string::npos)
        throw Error(cat(file, ":", n, ": invalid UTF-8 at byte ", offset + static_cast<int64_t>(bad),
                        " of the file; convert it to UTF-8"));
      offset += static_cast<int64_t>(line.size()) + 1;
      for (auto& w : basic.basic_tokens(line)) ++counts[std::move(w)];
    }
    if (offset == 0) throw Error(cat(file, ": empty file; give text files with content"));
  }
  if (counts.empty()) throw Error("no words to learn a WordPiece vocabulary from");
  return counts;
}

using Pair = std::pair<int32_t, int32_t>;
struct PairHash {
  size_t operator()(const Pair& p) const { return std::hash<uint64_t>()((uint64_t(uint32_t(p.first)) << 32) | uint32_t(p.second)); }
};

// Byte-pair merges over the words, with a lazily updated heap of pair counts.
class Merger {
 public:
  // Appends the alphabet to `symbols` (in code point order: ids follow it) and counts the
  // words' pairs.
  Merger(const std::unordered_map<std::string, int64_t>& counts, std::vector<std::string>& symbols) : symbols_(symbols) {
    std::vector<std::pair<std::string, int64_t>> words(counts.begin(), counts.end());
    std::sort(words.begin(), words.end());  // deterministic
    std::vector<std::pair<std::vector<std::string>, int64_t>> pieces;
    std::set<std::string> alphabet;
    for (const auto& [word, count] : words) {
      const std::u32string chars = utf8_to_utf32(word);
      if (chars.empty() || chars.size() > WordPiece::kMaxWordChars) continue;
      auto& p = pieces.emplace_back(std::vector<std::string>{}, count).first;
      for (size_t i = 0; i < chars.size(); ++i) p.push_back((i ? "##" : "") + utf32_to_utf8(chars.substr(i, 1)));
      alphabet.insert(p.begin(), p.end());
    }
    for (const auto& s : alphabet) symbol(s);
    for (const auto& [p, count] : pieces) {
      Word& w = words_.emplace_back(Word{{}, count});
      for (const auto& s : p) w.symbols.push_back(symbol(s));
      add_pairs(words_.size() - 1, +1);
    }
    for (const auto& [pair, count] : counts_) heap_.push({count, pair});
  }

  // The next merge (most frequent pair, ties to the smaller ids), applied; false when no pair
  // is seen min_frequency times.
  bool merge_next(int64_t min_frequency) {
    while (!heap_.empty()) {
      auto [count, pair] = heap_.top();
      heap_.pop();
      auto it = counts_.find(pair);
      if (it == counts_.end() || it->second != count) continue;  // stale
      if (count < min_frequency) return false;
      apply(pair);
      return true;
    }
    return false;
  }

 private:
  struct Word {
    std::vector<int32_t> symbols;
    int64_t count;
  };
  struct ByCount {
    bool operator()(const std::pair<int64_t, Pair>& a, const std::pair<int64_t, Pair>& b) const {
      return a.first != b.first ? a.first < b.first : a.second > b.second;
    }
  };

  int32_t symbol(const std::string& s) {
    auto [it, inserted] = ids_.emplace(s, static_cast<int32_t>(symbols_.size()));
    if (inserted) symbols_.push_back(s);
    return it->second;
  }

  // Adds (sign +1) or takes away (-1) word w's pairs, noting them in `changed` if given.
  void add_pairs(size_t w, int sign, std::set<Pair>* changed = nullptr) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const Pair p{word.symbols[i], word.symbols[i + 1]};
      counts_[p] += sign * word.count;
      if (changed) changed->insert(p);
      if (sign > 0) where_[p].push_back(static_cast<int32_t>(w));
    }
  }

  void apply(const Pair& pair) {
    const std::string& right = symbols_[static_cast<size_t>(pair.second)];
    const int32_t merged = symbol(symbols_[static_cast<size_t>(pair.first)] +
                                  (right.rfind("##", 0) == 0 ? right.substr(2) : right));
    std::vector<int32_t> in = std::move(where_[pair]);
    where_.erase(pair);
    std::sort(in.begin(), in.end());
    in.erase(std::unique(in.begin(), in.end()), in.end());
    std::set<Pair> changed;
    for (int32_t w : in) {
      auto& s = words_[static_cast<size_t>(w)].symbols;
      std::vector<int32_t> out;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == pair.first && s[i + 1] == pair.second) {
          out.push_back(merged);
          ++i;
        } else {
          out.push_back(s[i]);
        }
      }
      if (out.size() == s.size()) continue;  // the list may name words that no longer hold the pair
      add_pairs(static_cast<size_t>(w), -1, &changed);
      s = std::move(out);
      add_pairs(static_cast<size_t>(w), +1, &changed);
    }
    for (const auto& p : changed) {
      auto it = counts_.find(p);
      if (it == counts_.end()) continue;
      if (it->second <= 0) {
        counts_.erase(it);
        where_.erase(p);
      } else {
        heap_.push({it->second, p});
      }
    }
  }

  std::vector<std::string>& symbols_;
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<Word> words_;
  std::unordered_map<Pair, int64_t, PairHash> counts_;
  std::unordered_map<Pair, std::vector<int32_t>, PairHash> where_;  // words that held the pair (may repeat)
  std::priority_queue<std::pair<int64_t, Pair>, std::vector<std::pair<int64_t, Pair>>, ByCount> heap_;
};

}  // namespace

std::vector<std::string> learn_wordpiece(const std::vector<std::string>& files, const WordPieceTrainOptions& options) {
  if (files.empty()) throw Error("WordPiece training needs at least one text file");
  std::vector<std::string> vocab = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"};
  const auto counts = count_words(files, options.lower_case);
  std::cerr << "zoo: " << counts.size() << " distinct words; learning merges" << std::endl;
  Merger merger(counts, vocab);
  const auto alphabet = static_cast<int64_t>(vocab.size());
  if (alphabet > options.vocab_size)
    throw Error(cat("the text has ", alphabet - 5, " distinct characters (as word starts and continuations): more "
                    "than --vocab-size ", options.vocab_size, " allows; raise it"));
  for (int64_t last = 0; static_cast<int64_t>(vocab.size()) < options.vocab_size;) {
    if (!merger.merge_next(options.min_frequency)) break;
    const auto n = static_cast<int64_t>(vocab.size());
    if (n - last >= 5000) std::cerr << "zoo: " << n << " / " << options.vocab_size << " tokens" << std::endl, last = n;
  }
  return vocab;
}

}  // namespace zoo::data
