#include "data/bert_items.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <random>

#include "core/paths.h"
#include "data/mask_weights.h"
#include "data/reviews.h"

namespace fs = std::filesystem;

namespace zoo::data {

namespace {

// All the parts' texts in order when `max` is 0 or not below their count; else `max` of them taken
// in turn from each part (the first of each, then the second of each, ...), so that a cut-down
// run still reads every folder, and every label.
std::vector<LabeledText> take_reviews(std::vector<std::vector<LabeledText>> parts, int64_t max) {
  std::vector<LabeledText> texts;
  size_t total = 0;
  for (const auto& part : parts) total += part.size();
  if (max <= 0 || static_cast<size_t>(max) >= total) {
    for (auto& part : parts) texts.insert(texts.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    return texts;
  }
  for (size_t i = 0; static_cast<int64_t>(texts.size()) < max; ++i)
    for (auto& part : parts)
      if (i < part.size() && static_cast<int64_t>(texts.size()) < max) texts.push_back(std::move(part[i]));
  return texts;
}

}  // namespace

BertItems::BertItems(BertPretrainingDataOptions data, uint64_t seed) : data_(std::move(data)), seed_(seed) {}

void BertItems::build() {
  if (data_.path.empty())
    throw Error("config: data.path is not set; point it at the IMDB folder (tools/fetch_data.sh imdb, then "
                "--set data.path=imdb/aclImdb) or a CSV of reviews");
  const std::string path = existing_data_path(data_.path);
  TextReadOptions read;
  read.strict = data_.strict;
  read.replace_invalid_utf8 = data_.replace_invalid_utf8;
  read.keep_html = true;  // basic_english drops "<br />" itself, as in the document
  TextReadReport report;
  std::vector<std::vector<LabeledText>> parts;  // one per folder, or the CSV file
  if (fs::is_directory(path)) {
    for (const auto& folder : data_.folders)
      parts.push_back(read_text_folders((fs::path(path) / folder).parent_path().string(),
                                        {fs::path(folder).filename().string()}, read, report));
  } else if (ends_with(path, ".csv")) {
    parts.push_back(read_text_csv(path, data_.text_column, "", read, report));
  } else {
    throw Error(cat(path, ": neither a folder of reviews nor a .csv file"));
  }
  warn_skipped(report, "review");
  std::vector<LabeledText> texts = take_reviews(std::move(parts), data_.max_reviews);
  if (texts.empty()) throw Error(cat(path, ": no reviews"));
  std::vector<std::string> reviews, labels;
  reviews.reserve(texts.size());
  labels.reserve(texts.size());
  for (auto& t : texts) reviews.push_back(std::move(t.text)), labels.push_back(std::move(t.label));
  BertExampleOptions o;
  o.masking = data_.masking;
  o.mask_probability = data_.mask_probability;
  o.min_freq = data_.min_freq;
  o.length_percentile = data_.length_percentile;
  o.layout = data_.layout;
  o.max_length = data_.max_length;
  o.next_sentence = data_.next_sentence_prediction;
  if (!data_.next_sentence_prediction && data_.layout != "segments")
    throw Error("config: data.next_sentence_prediction=false needs data.layout segments (document 000's sentence "
                "pairs are half random by construction)");
  o.seed = seed_;
  examples_ = build_bert_examples(reviews, o);
  if (examples_.size() < 2)
    throw Error(cat(path, ": the reviews give ", examples_.size(),
                    " examples; BERT pretraining needs reviews of two sentences (or, with data.layout segments, two words) or more"));
  const auto held_out = static_cast<int64_t>(static_cast<double>(examples_.size()) * data_.validation_fraction);
  train_items_ = examples_.size() - held_out;
  weigh_masks(reviews, labels, path);
  std::cerr << "zoo: " << reviews.size() << " reviews -> " << examples_.size() << " examples ("
            << held_out << " held out), " << examples_.width << " tokens wide (sentence length "
            << examples_.sentence_length << "), vocabulary "
            << examples_.vocab.size() << std::endl;
}

void BertItems::weigh_masks(const std::vector<std::string>& reviews, const std::vector<std::string>& labels,
                            const std::string& where) {
  if (data_.mask_weighting == "uniform") return;
  if (!data_.dynamic_masking)
    throw Error(cat("config: data.mask_weighting ", data_.mask_weighting,
                    " weighs the masks drawn each batch; set data.dynamic_masking true as well"));
  if (data_.mask_weighting == "frequency")
    mask_weights_ = frequency_mask_weights(examples_.original, static_cast<size_t>(train_items_ * examples_.width),
                                           examples_.vocab.size());
  else
    mask_weights_ = label_mask_weights(reviews, labels, examples_.vocab, where);
  std::vector<int64_t> ids(mask_weights_.size());
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int64_t>(i);
  const auto favoured = std::min<size_t>(10, ids.size());
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(favoured), ids.end(),
                    [&](int64_t a, int64_t b) { return mask_weights_[a] > mask_weights_[b]; });
  std::cerr << "zoo: data.mask_weighting " << data_.mask_weighting << " favours";
  for (size_t i = 0; i < favoured; ++i) std::cerr << " " << examples_.vocab.token(ids[i]);
  std::cerr << std::endl;
}

Batch BertItems::batch_of(const std::vector<int64_t>& items) const {
  const int64_t n = static_cast<int64_t>(items.size()), W = examples_.width;
  auto ids = torch::empty({n, W}, torch::kLong), labels = torch::empty({n, W}, torch::kLong);
  auto types = torch::empty({n, W}, torch::kLong), nsp = torch::empty({n}, torch::kLong);
  auto pi = ids.accessor<int64_t, 2>(), pl = labels.accessor<int64_t, 2>(), pt = types.accessor<int64_t, 2>();
  auto pn = nsp.accessor<int64_t, 1>();
  for (int64_t r = 0; r < n; ++r) {
    const auto item = static_cast<size_t>(items[r]);
    const size_t at = item * static_cast<size_t>(W);
    // Type 1 from the second part on: [CLS] first [SEP] | [CLS] second, or [CLS] A [SEP] | B [SEP].
    const int64_t second = examples_.second_start[item];
    for (int64_t p = 0; p < W; ++p) {
      pi[r][p] = examples_.input_ids[at + p];
      pl[r][p] = examples_.masked[at + p] ? examples_.original[at + p] : kIgnore;
      pt[r][p] = p >= second ? 1 : 0;
    }
    pn[r] = examples_.is_next[item] ? 0 : 1;
  }
  auto mask = ids.ne(BertVocab::kPad).to(torch::kLong);
  return Batch{{{"input_ids", ids},
                {"token_type_ids", types},
                {"attention_mask", mask},
                {"labels", labels},
                {"next_sentence_label", nsp}},
               n,
               0};
}

Batch BertItems::train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  Batch b = batch_of(indices);
  b.seed = seed;
  if (data_.dynamic_masking) remask(b);
  return b;
}

// Each row's word tokens (not [CLS], [SEP] or padding): round(mask_probability x their count)
// distinct positions (by data.mask_weighting's weights when set), 80% [MASK], 10% a random
// word, 10% kept; as the static draw of build_bert_examples with masking "bert", but from the
// batch's seed.
void BertItems::remask(Batch& b) const {
  auto& ids = b["input_ids"];
  auto& labels = b["labels"];
  auto original = torch::where(labels.ne(kIgnore), labels, ids);
  ids = original.clone();
  labels = torch::full_like(original, kIgnore);
  auto po = original.accessor<int64_t, 2>(), pi = ids.accessor<int64_t, 2>(), pl = labels.accessor<int64_t, 2>();
  std::mt19937_64 rng(b.seed ^ 0x9E3779B97F4A7C15ULL);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int64_t vocab = examples_.vocab.size(), first_word = BertVocab::kFirstWord;
  std::vector<int64_t> words;
  std::vector<float> weights;
  for (int64_t r = 0; r < original.size(0); ++r) {
    words.clear();
    for (int64_t p = 0; p < original.size(1); ++p) {
      const int64_t id = po[r][p];
      if (id != BertVocab::kCls && id != BertVocab::kSep && id != BertVocab::kPad) words.push_back(p);
    }
    const auto n = static_cast<int64_t>(words.size());
    const auto k = static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * data_.mask_probability));
    if (!mask_weights_.empty()) {
      weights.resize(words.size());
      for (size_t i = 0; i < words.size(); ++i) weights[i] = mask_weights_[static_cast<size_t>(po[r][words[i]])];
      weighted_choice(words, weights, k, rng);
    }
    for (int64_t d = 0; d < k; ++d) {
      // partial Fisher-Yates: k distinct positions (weighted ones are already in front)
      if (mask_weights_.empty()) std::swap(words[d], words[std::uniform_int_distribution<int64_t>(d, n - 1)(rng)]);
      const int64_t p = words[d];
      const double u = unit(rng);
      if (u < 0.8) pi[r][p] = BertVocab::kMask;
      else if (u < 0.9 && vocab > first_word) pi[r][p] = std::uniform_int_distribution<int64_t>(first_word, vocab - 1)(rng);
      pl[r][p] = po[r][p];
    }
  }
}

std::vector<std::vector<int64_t>> BertItems::eval_plan(int64_t batch_size) const {
  const int64_t n = examples_.size() - train_items_;
  if (n <= 0) throw Error("data.validation_fraction is 0: no held-out examples to evaluate");
  return consecutive_batches(n, batch_size);
}

Batch BertItems::eval_batch(const std::vector<int64_t>& indices) const {
  std::vector<int64_t> items;
  for (int64_t e : indices) items.push_back(train_items_ + e);
  return batch_of(items);
}

}  // namespace zoo::data
