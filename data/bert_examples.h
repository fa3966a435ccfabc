#pragma once
// BERT pretraining examples with the semantics of document 000's IMDBBertDataset
// (~l.1336-1535): reviews split into sentences on ". ", basic_english tokens, a vocabulary
// of the tokens seen at least min_freq times (in first-appearance order) after the specials
// [CLS]=0 [PAD]=1 [MASK]=2 [SEP]=3 [UNK]=4, a sentence length at the 70th percentile of the
// sentences' word counts, and for every pair of consecutive sentences of a review one true
// next-sentence item and one false one (two random sentences of the corpus, the second not
// the first's successor). An item is "[CLS] first" padded or cut to the sentence length,
// [SEP], "[CLS] second" likewise: 2 * length + 1 ids.
//
// Masking (`masking`): "bert" (the paper, and the text of documents 000/003): 15% of each
// sentence's tokens, drawn without replacement, become [MASK] 80% of the time, a random
// vocabulary word 10%, and stay 10%; "document" (document 000's code, for parity): round(15%
// of the tokens) draws with replacement, 80% [MASK] and 20% a random word.
//
// Layout (`layout`): "sentence_pairs" (above, the document's) or "segments" (the BERT paper's
// own examples, for fine-tuning on whole reviews): each review's tokens (its sentences joined
// by "." again) cut into consecutive windows of up to `max_length` - 3 tokens, each window cut
// at a random point into A and B: "[CLS] A [SEP] B [SEP]" padded to `max_length`, B being the
// rest of the window (a true next segment) or, half the time, as many tokens from a random
// place of another review (a false one). Masking ("bert" or "document") draws within A and
// within B.
//
// Everything random comes from `seed`: the same reviews and seed give the same examples.
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace zoo::data {

struct BertExampleOptions {
  std::string masking = "bert";  // "bert" | "document"
  double mask_probability = 0.15;
  int64_t min_freq = 2;
  double length_percentile = 70;
  std::string layout = "sentence_pairs";  // "sentence_pairs" | "segments"
  int64_t max_length = 256;               // segments: the item width
  bool next_sentence = true;              // segments: false = B always continues A (no NSP pairs)
  uint64_t seed = 0;
};

/// The vocabulary: the five specials, then the words.
class BertVocab {
 public:
  static constexpr int64_t kCls = 0, kPad = 1, kMask = 2, kSep = 3, kUnk = 4, kFirstWord = 5;
  BertVocab();
  /// Appends `token` unless present; returns its id.
  int64_t add(const std::string& token);
  /// The id of `token`, kUnk when unknown.
  int64_t id(const std::string& token) const;
  const std::string& token(int64_t id) const { return tokens_.at(static_cast<size_t>(id)); }
  int64_t size() const { return static_cast<int64_t>(tokens_.size()); }
  const std::vector<std::string>& tokens() const { return tokens_; }

 private:
  std::vector<std::string> tokens_;
  std::unordered_map<std::string, int64_t> ids_;
};

/// All items, flat: item i's ids are input_ids[i * width .. (i + 1) * width).
struct BertExamples {
  BertVocab vocab;
  int64_t sentence_length = 0;  // sentence pairs: the 70th percentile; an item is 2 * sentence_length + 1 wide
  int64_t width = 0;
  std::vector<int32_t> second_start;  // per item: where the second part begins (token type 1 from there)
  std::vector<int32_t> input_ids;   // masked
  std::vector<int32_t> original;    // unmasked (the MLM targets where masked)
  std::vector<uint8_t> masked;      // 1 where a token was selected for MLM
  std::vector<uint8_t> is_next;     // 1 for a true next-sentence pair
  int64_t size() const { return static_cast<int64_t>(is_next.size()); }
};

/// The document's sentence split: Python's review.split(". ").
std::vector<std::string> split_sentences(const std::string& review);
/// numpy.percentile(values, q) with linear interpolation, then int() as the document does.
int64_t percentile_floor(std::vector<int64_t> values, double q);

/// Builds the examples of `reviews` (texts, HTML breaks already replaced).
BertExamples build_bert_examples(const std::vector<std::string>& reviews, const BertExampleOptions& options);

}  // namespace zoo::data
