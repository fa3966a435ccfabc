#pragma once
// A word vocabulary with the semantics of Keras' tf.keras.preprocessing.text.Tokenizer as the
// translation tutorial uses it: Tokenizer(filters=''), fit_on_texts, texts_to_sequences, and
// pad_sequences(padding='post').
//
//  * Texts are lower-cased (Python str.lower(), see data/text.h) and split on ' ' only, empty
//    pieces dropped. The tutorial's preprocess_chinese puts a space between characters, so the
//    same class gives its character vocabulary.
//  * Words are counted in first-appearance order, then stably sorted by count, descending: ties
//    keep their first-appearance order. Indices start at 1; 0 is padding.
//  * With an OOV token it takes index 1 and shifts the rest. (Keras quirk kept: if the OOV token
//    also occurs in the texts, it gets its later, count-sorted index and index 1 stays unused.)
//  * num_words (0 = no limit) is applied at encode time: words with index >= num_words are
//    dropped, or mapped to the OOV token when there is one. Unknown words likewise.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace zoo::data {

class Vocab {
 public:
  /// An empty vocabulary: only the padding index 0.
  Vocab();

  /// Keras Tokenizer(filters='', num_words=num_words or None, oov_token=oov_token or None)
  /// followed by fit_on_texts(texts). An empty `oov_token` means none.
  static Vocab fit(const std::vector<std::string>& texts, int64_t num_words = 0,
                   std::string oov_token = "");

  /// This vocabulary with the `words` it lacks (lower-cased) appended at the next indices, in
  /// their order and uncounted (word_counts holds what the fitted texts showed): tokens that
  /// encoding can produce although the texts never did. Needs num_words 0.
  Vocab with_words(const std::vector<std::string>& words) const;

  /// texts_to_sequences for one text.
  std::vector<int64_t> encode(const std::string& text) const;
  /// texts_to_sequences.
  std::vector<std::vector<int64_t>> encode_all(const std::vector<std::string>& texts) const;

  /// sequences_to_texts for one sequence, except that padding (0) is skipped, where Keras would
  /// emit the OOV token for it. Unknown indices and, with num_words, indices >= num_words become
  /// the OOV token or are dropped.
  std::string decode(const std::vector<int64_t>& ids) const;

  /// The index of `word` (word_index[word], num_words not applied); zoo::Error if unknown.
  int64_t index(const std::string& word) const;
  /// Whether `word` has an index.
  bool contains(const std::string& word) const;
  /// The word of `index`; "" for padding (0) and unused indices; zoo::Error when out of range.
  const std::string& word(int64_t index) const;

  /// The embedding size: largest index + 1 (len(word_index) + 1 in the tutorial), capped at
  /// num_words when that is smaller. Every index encode() returns is below it.
  int64_t size() const;
  /// Number of words with an index (len(word_index)).
  int64_t num_indexed() const { return static_cast<int64_t>(index_.size()); }
  int64_t num_words() const { return num_words_; }
  const std::string& oov_token() const { return oov_token_; }
  /// Index of the OOV token, or 0 when there is none.
  int64_t oov_index() const { return oov_index_; }
  /// Word counts in first-appearance order (Keras word_counts).
  const std::vector<std::pair<std::string, int64_t>>& word_counts() const { return counts_; }

  /// Writes JSON: {"format": "zoo-vocab", "version": 1, "lower": true, "num_words", "oov_token",
  /// "word_index": [[word, index], ...] in index order, "word_counts": [[word, count], ...]}.
  void save(const std::string& path) const;
  /// Reads save()'s JSON, validating it; errors name the file and the offending entry.
  static Vocab load(const std::string& path);

 private:
  void build_index(const std::vector<std::pair<std::string, int64_t>>& word_index);

  std::vector<std::string> words_;  // words_[i]: the word of index i ("" for 0 / unused)
  std::unordered_map<std::string, int64_t> index_;
  std::vector<std::pair<std::string, int64_t>> counts_;
  int64_t num_words_ = 0;
  std::string oov_token_;
  int64_t oov_index_ = 0;
};

/// How pad_sequences shortens sequences longer than maxlen.
enum class Truncate { kPre, kPost };

/// Keras pad_sequences(seqs, maxlen, padding='post', truncating=..., value=0) as an int64
/// tensor (N, L). maxlen < 0: L = the longest sequence. Keras' default truncating='pre' keeps
/// the last maxlen items.
torch::Tensor pad_sequences(const std::vector<std::vector<int64_t>>& seqs, int64_t maxlen = -1,
                            Truncate truncating = Truncate::kPre);

}  // namespace zoo::data
