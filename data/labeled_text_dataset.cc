#include "data/labeled_text_dataset.h"

#include <algorithm>
#include <filesystem>
#include <random>

#include "core/paths.h"
#include "data/pairs.h"

namespace fs = std::filesystem;

namespace zoo::data {

LabeledTextDataset::LabeledTextDataset(TextClassificationDataOptions data, ClassificationTextEncoder encoder)
    : data_(std::move(data)), encoder_(std::move(encoder)) {}

std::vector<LabeledText> LabeledTextDataset::read(const std::string& split) const {
  if (data_.path.empty()) throw Error("config: data.path is not set (tools/fetch_data.sh imdb, then data.path=imdb/aclImdb)");
  const std::string path = existing_data_path(data_.path);
  TextReadOptions o;
  o.strict = data_.strict;
  o.replace_invalid_utf8 = data_.replace_invalid_utf8;
  TextReadReport report;
  std::vector<LabeledText> texts;
  if (fs::is_directory(path)) {
    texts = read_text_folders((fs::path(path) / (split == "test" ? data_.test_folder : data_.train_folder)).string(),
                              data_.labels, o, report);
  } else if (ends_with(path, ".csv")) {
    const std::string file = split == "test" ? existing_data_path(data_.test_path, "data.test_path") : path;
    texts = read_text_csv(file, data_.text_column, data_.label_column, o, report);
  } else {
    throw Error(cat(path, ": neither a folder of texts nor a .csv file"));
  }
  warn_skipped(report, "text");
  return texts;
}

std::vector<LabeledTextDataset::Example> LabeledTextDataset::examples_of(const std::vector<LabeledText>& texts) const {
  std::vector<Example> out;
  out.reserve(texts.size());
  for (const auto& t : texts) {
    auto it = std::find(data_.labels.begin(), data_.labels.end(), t.label);
    if (it == data_.labels.end())
      throw Error(cat(t.where, ": label '", t.label, "' is not one of data.labels (", join(data_.labels), ")"));
    out.push_back({encoder_.encode(t.text), it - data_.labels.begin()});
  }
  return out;
}

void LabeledTextDataset::load_training() {
  auto texts = read("train");
  std::mt19937_64 rng(static_cast<uint64_t>(data_.split_seed));
  std::shuffle(texts.begin(), texts.end(), rng);
  const auto held = std::min<size_t>(static_cast<size_t>(data_.valid_size), texts.size() / 2);
  std::vector<LabeledText> valid(texts.begin(), texts.begin() + static_cast<std::ptrdiff_t>(held));
  texts.erase(texts.begin(), texts.begin() + static_cast<std::ptrdiff_t>(held));
  if (data_.max_train_samples > 0 && static_cast<int64_t>(texts.size()) > data_.max_train_samples)
    texts.resize(static_cast<size_t>(data_.max_train_samples));
  if (texts.empty()) throw Error(cat(data_.path, ": no training texts"));
  train_ = examples_of(texts);
  valid_ = examples_of(valid);
  if (valid_.empty())  // checked now, not after training, where the first evaluation needs them
    throw Error(cat("data.valid_size=", data_.valid_size, " leaves no validation texts; training evaluates on them "
                    "(train.eval_steps, the best checkpoint): set data.valid_size to 1 or more"));
}

Batch LabeledTextDataset::batch_of(const std::vector<Example>& examples, const std::vector<int64_t>& indices) const {
  std::vector<const std::vector<int64_t>*> rows;
  std::vector<int64_t> labels;
  for (int64_t i : indices) rows.push_back(&examples[i].ids), labels.push_back(examples[i].label);
  auto [ids, mask] = encoder_.pad(rows);
  const auto n = static_cast<int64_t>(indices.size());
  return Batch{{{"input_ids", ids}, {"attention_mask", mask}, {"labels", torch::tensor(labels, torch::kLong)}}, n, 0};
}

std::vector<std::vector<int64_t>> LabeledTextDataset::epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const {
  if (!data_.group_by_length) return permuted_batches(train_size(), batch_size, seed, epoch);
  std::vector<int64_t> lengths;
  lengths.reserve(train_.size());
  for (const auto& e : train_) lengths.push_back(static_cast<int64_t>(e.ids.size()));
  return bucket_batches(lengths, batch_size, plan_seed(seed, epoch), /*shuffle=*/true);
}

std::vector<std::vector<int64_t>> LabeledTextDataset::eval_plan(const std::string& split, int64_t batch_size) {
  if (split != "valid" && split != "test") throw Error(cat("unknown split '", split, "'; use valid or test"));
  if (split == "valid") {
    if (valid_.empty()) load_training();
    eval_examples_ = &valid_;
  } else {
    auto texts = read("test");
    if (data_.max_eval_samples > 0) {  // a sample of every label, not the first label's files
      std::mt19937_64 rng(static_cast<uint64_t>(data_.split_seed));
      std::shuffle(texts.begin(), texts.end(), rng);
      texts.resize(std::min<size_t>(texts.size(), static_cast<size_t>(data_.max_eval_samples)));
    }
    test_ = examples_of(texts);
    eval_examples_ = &test_;
  }
  // The first data.max_eval_samples examples, in batches of similar lengths, longest first: a
  // batch is as wide as its longest text, and the metrics are sums, so the order changes
  // nothing but the padding.
  auto n = static_cast<int64_t>(eval_examples_->size());
  if (data_.max_eval_samples > 0) n = std::min(n, data_.max_eval_samples);
  std::vector<int64_t> minus_lengths(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) minus_lengths[i] = -static_cast<int64_t>((*eval_examples_)[i].ids.size());
  return bucket_batches(minus_lengths, batch_size, 0, /*shuffle=*/false);
}

}  // namespace zoo::data
