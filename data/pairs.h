#pragma once
// Sentence-pair files for translation: reading the Tatoeba/Anki format
// `english<TAB>chinese[<TAB>attribution]` (Chinese is the source, English the target), a
// deterministic train/valid/test split that is written next to a run so it can be inspected and
// reused, and length bucketing of batches.
//
// Randomness is platform-independent: std::mt19937_64 (whose output sequence the C++ standard
// fixes) with our own rejection sampling and Fisher-Yates shuffle, never std::shuffle or
// std::uniform_int_distribution, whose algorithms are implementation-defined.
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace zoo::data {

/// One translation example. The text is as in the file, minus surrounding whitespace.
struct SentencePair {
  std::string source;  ///< Chinese
  std::string target;  ///< English
  int64_t line = 0;    ///< 1-based line in the file it was read from
};

/// What read_pair_file() found.
struct PairReadReport {
  static constexpr size_t kMaxMessages = 10;
  int64_t lines = 0;                  ///< lines in the file, blank ones included
  int64_t pairs = 0;                  ///< valid pairs returned
  int64_t blank = 0;                  ///< empty or all-space lines, ignored silently
  int64_t malformed = 0;              ///< lines skipped: no tab, invalid UTF-8 or an empty side
  std::vector<std::string> messages;  ///< the first kMaxMessages as "path:line: reason"
};

/// Reads `english<TAB>chinese[<TAB>attribution]` lines (anything after the second tab is
/// ignored). Strips a UTF-8 byte-order mark and CR line ends; both sides are stripped of
/// surrounding whitespace (Python str.strip()). A malformed line is skipped and counted in
/// `report`, or, with `strict`, throws zoo::Error "path:LINE: reason". A missing or unreadable
/// file, an empty file and a file without one valid pair throw zoo::Error naming the path.
std::vector<SentencePair> read_pair_file(const std::string& path, bool strict,
                                         PairReadReport& report);

/// Reads a `source<TAB>target` file as written by write_split() (strict; may be empty).
std::vector<SentencePair> read_tsv_pairs(const std::string& path);

/// A partition of the pairs.
struct Split {
  std::vector<SentencePair> train, valid, test;
};

/// Shuffles the pairs (random_permutation with `seed`), then takes the first `n_test` as the
/// test set, the next `n_valid` as the validation set and the rest, in shuffled order, for
/// training. Throws zoo::Error unless at least one training pair is left.
Split split_pairs(std::vector<SentencePair> pairs, int64_t n_test = 1000, int64_t n_valid = 1000,
                  uint64_t seed = 1234);

/// Writes `train.tsv`, `valid.tsv`, `test.tsv` (source<TAB>target per line, UTF-8, LF) into
/// `dir`, creating it. Each file is written to a temporary name and renamed into place.
void write_split(const Split& split, const std::string& dir);

/// Reads the three files written by write_split(); `train.tsv` must hold at least one pair.
Split read_split(const std::string& dir);

/// A uniform integer in [0, n) from `rng` by rejection sampling (n >= 1).
uint64_t uniform_below(std::mt19937_64& rng, uint64_t n);

/// A uniformly random permutation of 0..n-1: Fisher-Yates (for i = n-1 down to 1, swap i with
/// uniform_below(rng, i + 1)) driven by std::mt19937_64(seed). Identical on every platform.
std::vector<int64_t> random_permutation(int64_t n, uint64_t seed);

/// Batches by size in tokens (fairseq's and Marian's max_tokens): like bucket_batches, but a
/// batch takes items in `keys` order while (items x its largest `cost`) stays within
/// `max_tokens` (an item costlier than that alone makes a batch of one). With `shuffle`, the
/// indices are shuffled and sorted by key within chunks of about `chunk_batches` batches, and
/// the batch order is shuffled; without, batches come in key order.
std::vector<std::vector<int64_t>> token_batches(const std::vector<int64_t>& keys, const std::vector<int64_t>& costs,
                                                int64_t max_tokens, uint64_t seed, bool shuffle,
                                                int64_t chunk_batches = 100);

/// Groups the indices 0..lengths.size()-1 into batches of `batch_size` (the last one may be
/// smaller) whose items have similar lengths, so that little padding is needed.
/// With `shuffle`: the indices are shuffled, sorted by length (stably) within chunks of
/// `chunk_batches * batch_size`, cut into batches, and the batch order is shuffled -- a
/// different grouping for every seed, deterministic for a given one. Without: all indices are
/// sorted by length (ties by index) and batches come shortest first.
std::vector<std::vector<int64_t>> bucket_batches(const std::vector<int64_t>& lengths,
                                                 int64_t batch_size, uint64_t seed, bool shuffle,
                                                 int64_t chunk_batches = 100);

}  // namespace zoo::data
