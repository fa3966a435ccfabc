#include "data/pairs.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "data/text.h"
#include "core/error.h"

namespace zoo::data {
namespace {

namespace fs = std::filesystem;

// Column layout of a pair file.
struct Layout {
  bool source_first;       // tsv: source<TAB>target; cmn.txt: english(target)<TAB>chinese
  const char* first_name;  // for messages
  const char* second_name;
  const char* expected;  // the expected line format, for messages
  size_t max_columns;    // more tab-separated columns than this: malformed
};

constexpr Layout kAnkiLayout{false, "English", "Chinese", "'English<TAB>Chinese[<TAB>attribution]'", 3};
constexpr Layout kTsvLayout{true, "source", "target", "'source<TAB>target'", 2};

std::string read_whole_file(const std::string& path, const char* what) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(cat(what, " '", path, "' is a directory"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat("cannot open ", what, " '", path, "': ", std::strerror(errno)));
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) throw Error(cat("cannot read ", what, " '", path, "'"));
  return ss.str();
}

bool is_blank(std::string_view line) {
  return std::all_of(line.begin(), line.end(), [](char c) { return c == ' '; });
}

// Parses one line (without its line end). Returns "" and fills `pair`, or the reason it is
// malformed.
std::string parse_line(std::string_view line, const Layout& layout, SentencePair& pair) {
  const size_t bad = find_invalid_utf8(line);
  if (bad != std::string::npos) return cat("invalid UTF-8 at byte ", bad + 1, " of the line");
  const size_t tab1 = line.find('\t');
  if (tab1 == std::string_view::npos) return cat("no tab: expected ", layout.expected);
  const size_t tab2 = line.find('\t', tab1 + 1);
  const size_t end2 = tab2 == std::string_view::npos ? line.size() : tab2;
  // Anki's third column is the attribution; a tab more shifts the columns.
  const size_t columns = static_cast<size_t>(std::count(line.begin(), line.end(), '\t')) + 1;
  if (columns > layout.max_columns)
    return cat(columns, " tab-separated columns, expected ", layout.expected, " (a tab inside a sentence?)");
  std::string first = python_strip(std::string(line.substr(0, tab1)));
  std::string second = python_strip(std::string(line.substr(tab1 + 1, end2 - tab1 - 1)));
  if (first.empty()) return cat("empty ", layout.first_name, " side");
  if (second.empty()) return cat("empty ", layout.second_name, " side");
  if (layout.source_first) {
    pair.source = std::move(first);
    pair.target = std::move(second);
  } else {
    pair.source = std::move(second);
    pair.target = std::move(first);
  }
  return "";
}

std::vector<SentencePair> read_pairs(const std::string& path, const Layout& layout, bool strict,
                                     bool allow_empty, const char* what, PairReadReport& report) {
  report = PairReadReport{};
  const std::string content = read_whole_file(path, what);
  std::string_view rest(content);
  if (rest.substr(0, 3) == "\xEF\xBB\xBF") rest.remove_prefix(3);

  std::vector<SentencePair> pairs;
  int64_t line_no = 0;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(nl == std::string_view::npos ? rest.size() : nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (is_blank(line)) {
      ++report.blank;
      continue;
    }
    SentencePair pair;
    pair.line = line_no;
    const std::string reason = parse_line(line, layout, pair);
    if (reason.empty()) {
      pairs.push_back(std::move(pair));
      continue;
    }
    if (strict) throw Error(cat(path, ":", line_no, ": ", reason));
    ++report.malformed;
    if (report.messages.size() < PairReadReport::kMaxMessages) {
      report.messages.push_back(cat(path, ":", line_no, ": ", reason));
    }
  }
  report.lines = line_no;
  report.pairs = static_cast<int64_t>(pairs.size());
  if (pairs.empty() && !allow_empty) {
    if (report.malformed == 0) {
      throw Error(cat(what, " '", path, "' is empty: expected lines ", layout.expected));
    }
    throw Error(cat(what, " '", path, "' has no valid sentence pair: all ", report.malformed,
                    " non-blank lines are malformed, the first: ", report.messages.front()));
  }
  return pairs;
}

void write_tsv(const std::vector<SentencePair>& pairs, const std::string& path) {
  for (const SentencePair& p : pairs) {
    for (const std::string* text : {&p.source, &p.target}) {
      if (text->find_first_of("\t\r\n") != std::string::npos) {
        throw Error(cat("cannot write '", path, "': the pair from line ", p.line,
                        " contains a tab or line break"));
      }
    }
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(cat("cannot write '", tmp, "': ", std::strerror(errno)));
    for (const SentencePair& p : pairs) out << p.source << '\t' << p.target << '\n';
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw Error(cat("cannot write '", tmp, "' (disk full?)"));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) throw Error(cat("cannot rename '", tmp, "' to '", path, "': ", ec.message()));
}

template <class T>
void fisher_yates(std::vector<T>& v, std::mt19937_64& rng) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(uniform_below(rng, i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace

std::vector<SentencePair> read_pair_file(const std::string& path, bool strict,
                                         PairReadReport& report) {
  return read_pairs(path, kAnkiLayout, strict, /*allow_empty=*/false, "pair file", report);
}

std::vector<SentencePair> read_tsv_pairs(const std::string& path) {
  PairReadReport report;
  return read_pairs(path, kTsvLayout, /*strict=*/true, /*allow_empty=*/true, "split file", report);
}

Split split_pairs(std::vector<SentencePair> pairs, int64_t n_test, int64_t n_valid, uint64_t seed) {
  if (n_test < 0 || n_valid < 0) {
    throw Error(
        cat("split: n_test (", n_test, ") and n_valid (", n_valid, ") must not be negative"));
  }
  const auto n = static_cast<int64_t>(pairs.size());
  if (n <= n_test + n_valid) {
    throw Error(cat("split: only ", n, " sentence pairs, need more than ", n_test, " (test) + ",
                    n_valid, " (valid) to leave any for training"));
  }
  const std::vector<int64_t> order = random_permutation(n, seed);
  Split split;
  split.test.reserve(n_test);
  split.valid.reserve(n_valid);
  split.train.reserve(n - n_test - n_valid);
  for (int64_t i = 0; i < n; ++i) {
    SentencePair& p = pairs[order[i]];
    if (i < n_test) {
      split.test.push_back(std::move(p));
    } else if (i < n_test + n_valid) {
      split.valid.push_back(std::move(p));
    } else {
      split.train.push_back(std::move(p));
    }
  }
  return split;
}

void write_split(const Split& split, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error(cat("cannot create directory '", dir, "': ", ec.message()));
  write_tsv(split.train, (fs::path(dir) / "train.tsv").string());
  write_tsv(split.valid, (fs::path(dir) / "valid.tsv").string());
  write_tsv(split.test, (fs::path(dir) / "test.tsv").string());
}

Split read_split(const std::string& dir) {
  Split split;
  const std::string train = (fs::path(dir) / "train.tsv").string();
  split.train = read_tsv_pairs(train);
  if (split.train.empty()) throw Error(cat("split file '", train, "' has no sentence pair"));
  split.valid = read_tsv_pairs((fs::path(dir) / "valid.tsv").string());
  split.test = read_tsv_pairs((fs::path(dir) / "test.tsv").string());
  return split;
}

uint64_t uniform_below(std::mt19937_64& rng, uint64_t n) {
  if (n == 0) throw Error("uniform_below: n must be positive");
  // Reject the lowest (2^64 mod n) values so that the rest is a whole number of copies of [0, n).
  const uint64_t reject_below = (0 - n) % n;
  uint64_t x;
  do {
    x = rng();
  } while (x < reject_below);
  return x % n;
}

std::vector<int64_t> random_permutation(int64_t n, uint64_t seed) {
  if (n < 0) throw Error(cat("random_permutation: negative size ", n));
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  std::mt19937_64 rng(seed);
  fisher_yates(order, rng);
  return order;
}

std::vector<std::vector<int64_t>> bucket_batches(const std::vector<int64_t>& lengths,
                                                 int64_t batch_size, uint64_t seed, bool shuffle,
                                                 int64_t chunk_batches) {
  if (batch_size < 1) throw Error(cat("bucket_batches: batch_size must be >= 1, got ", batch_size));
  if (chunk_batches < 1) {
    throw Error(cat("bucket_batches: chunk_batches must be >= 1, got ", chunk_batches));
  }
  const auto n = static_cast<int64_t>(lengths.size());
  std::mt19937_64 rng(seed);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (shuffle) fisher_yates(order, rng);

  int64_t chunk = n;
  if (shuffle && batch_size <= n / chunk_batches) chunk = batch_size * chunk_batches;
  const auto by_length = [&](int64_t a, int64_t b) { return lengths[a] < lengths[b]; };
  for (int64_t b = 0; b < n; b += std::max<int64_t>(chunk, 1)) {
    const int64_t e = std::min(n, b + chunk);
    std::stable_sort(order.begin() + b, order.begin() + e, by_length);
  }

  std::vector<std::vector<int64_t>> batches;
  batches.reserve(static_cast<size_t>((n + batch_size - 1) / batch_size));
  for (int64_t b = 0; b < n; b += batch_size) {
    const int64_t e = std::min(n, b + batch_size);
    batches.emplace_back(order.begin() + b, order.begin() + e);
  }
  if (shuffle) fisher_yates(batches, rng);
  return batches;
}

std::vector<std::vector<int64_t>> token_batches(const std::vector<int64_t>& keys, const std::vector<int64_t>& costs,
                                                int64_t max_tokens, uint64_t seed, bool shuffle,
                                                int64_t chunk_batches) {
  if (max_tokens < 1) throw Error(cat("token_batches: max_tokens must be >= 1, got ", max_tokens));
  if (keys.size() != costs.size()) throw Error("token_batches: keys and costs differ in length");
  const auto n = static_cast<int64_t>(keys.size());
  std::mt19937_64 rng(seed);
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) order[i] = i;
  if (shuffle) fisher_yates(order, rng);
  int64_t total = 0;
  for (int64_t c : costs) total += std::max<int64_t>(c, 1);
  const int64_t mean_cost = n > 0 ? std::max<int64_t>(1, total / n) : 1;
  const int64_t chunk = shuffle ? std::max<int64_t>(1, chunk_batches * std::max<int64_t>(1, max_tokens / mean_cost)) : n;
  const auto by_key = [&](int64_t a, int64_t b) { return keys[a] < keys[b]; };
  for (int64_t b = 0; b < n; b += std::max<int64_t>(chunk, 1))
    std::stable_sort(order.begin() + b, order.begin() + std::min(n, b + chunk), by_key);

  std::vector<std::vector<int64_t>> batches;
  std::vector<int64_t> batch;
  int64_t widest = 0;
  for (int64_t i : order) {
    const int64_t wider = std::max(widest, costs[i]);
    if (!batch.empty() && wider * static_cast<int64_t>(batch.size() + 1) > max_tokens) {
      batches.push_back(std::move(batch));
      batch.clear();
      widest = 0;
    }
    batch.push_back(i);
    widest = std::max(widest, costs[i]);
  }
  if (!batch.empty()) batches.push_back(std::move(batch));
  if (shuffle) fisher_yates(batches, rng);
  return batches;
}

}  // namespace zoo::data
