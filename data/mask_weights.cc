#include "data/mask_weights.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "core/error.h"
#include "data/text.h"

namespace zoo::data {

std::vector<float> frequency_mask_weights(const std::vector<int32_t>& original, size_t tokens, int64_t vocab_size) {
  std::vector<int64_t> counts(static_cast<size_t>(vocab_size), 0);
  const size_t end = std::min(tokens, original.size());
  for (size_t i = 0; i < end; ++i)
    if (original[i] >= 0 && original[i] < vocab_size) ++counts[static_cast<size_t>(original[i])];
  std::vector<float> w(counts.size(), 0.0f);
  for (int64_t id = BertVocab::kUnk; id < vocab_size; ++id)
    w[static_cast<size_t>(id)] = static_cast<float>(1.0 / std::sqrt(static_cast<double>(std::max<int64_t>(counts[id], 1))));
  return w;
}

std::vector<float> label_mask_weights(const std::vector<std::string>& texts, const std::vector<std::string>& labels,
                                      const BertVocab& vocab, const std::string& where) {
  std::map<std::string, std::vector<double>> counts;  // label -> count per id
  for (size_t t = 0; t < texts.size() && t < labels.size(); ++t) {
    if (labels[t].empty()) continue;
    auto& c = counts[labels[t]];
    if (c.empty()) c.assign(static_cast<size_t>(vocab.size()), 0.0);
    for (const auto& word : basic_english(texts[t])) ++c[static_cast<size_t>(vocab.id(word))];
  }
  if (counts.size() != 2) {
    std::string labels;
    for (const auto& [label, c] : counts) labels += (labels.empty() ? "" : ", ") + label;
    throw Error(cat(where, ": data.mask_weighting label_odds needs texts of exactly two labels (e.g. data.folders "
                           "train/pos and train/neg), found ", counts.size(), labels.empty() ? "" : " (" + labels + ")",
                    "; use data.mask_weighting frequency or uniform instead"));
  }
  const auto& a = counts.begin()->second;
  const auto& b = counts.rbegin()->second;
  // 20 made-up sightings in each label: a name seen 25 times in one label only (|log odds|
  // 3.9 with add-one smoothing) no longer outweighs "worst" (2.3) and "awful".
  constexpr double kPrior = 20;
  double total_a = 0, total_b = 0;
  for (size_t i = 0; i < a.size(); ++i) total_a += a[i] + kPrior, total_b += b[i] + kPrior;
  std::vector<float> w(a.size(), 0.0f);
  for (size_t id = BertVocab::kUnk; id < a.size(); ++id)
    w[id] = static_cast<float>(0.05 + std::abs(std::log((a[id] + kPrior) / total_a) - std::log((b[id] + kPrior) / total_b)));
  return w;
}

void weighted_choice(std::vector<int64_t>& positions, const std::vector<float>& weights, int64_t k,
                     std::mt19937_64& rng) {
  const size_t n = positions.size(), take = static_cast<size_t>(std::clamp<int64_t>(k, 0, static_cast<int64_t>(n)));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  std::vector<std::pair<double, int64_t>> keys(n);  // log(u) / w: the largest k are the draw
  for (size_t i = 0; i < n; ++i) {
    const double u = std::max(unit(rng), std::numeric_limits<double>::min());
    keys[i] = {weights[i] > 0 ? std::log(u) / weights[i] : -std::numeric_limits<double>::infinity(), positions[i]};
  }
  std::partial_sort(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(take), keys.end(),
                    [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; i < n; ++i) positions[i] = keys[i].second;
}

}  // namespace zoo::data
