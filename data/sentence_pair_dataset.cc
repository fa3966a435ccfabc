#include "data/sentence_pair_dataset.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "core/paths.h"
#include "data/text.h"
#include "data/vocab.h"

namespace fs = std::filesystem;

namespace zoo::data {

namespace {
// The run directory of a checkpoint directory (OUT of OUT/checkpoint-N), tolerating a
// trailing slash.
fs::path run_dir_of(const std::string& checkpoint_dir) {
  fs::path p = fs::path(checkpoint_dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}
}  // namespace

SentencePairDataset::SentencePairDataset(TranslationDataOptions data, const TranslationText& text,
                                         std::string checkpoint_dir)
    : data_(std::move(data)), text_(&text), checkpoint_dir_(std::move(checkpoint_dir)) {}

void SentencePairDataset::load_split() {
  if (split_loaded_) return;
  if (data_.path.empty())
    throw Error(
        "config: data.path is not set; point it at a Tatoeba/Anki pair file (English<TAB>Chinese "
        "per line), e.g. tools/fetch_data.sh cmn-eng, then --set data.path=cmn-eng/cmn.txt");
  const std::string path = existing_data_path(data_.path);
  PairReadReport report;
  std::vector<SentencePair> pairs = read_pair_file(path, data_.strict, report);
  if (report.malformed > 0) {
    std::cerr << "zoo: warning: " << path << ": skipped " << report.malformed
              << " malformed line" << (report.malformed == 1 ? "" : "s") << " of " << report.lines
              << " (data.strict=true makes this an error):\n";
    for (const auto& m : report.messages) std::cerr << "  " << m << "\n";
    if (report.malformed > static_cast<int64_t>(report.messages.size()))
      std::cerr << "  ... and " << report.malformed - static_cast<int64_t>(report.messages.size())
                << " more\n";
    std::cerr.flush();
  }
  if (data_.num_examples > 0 && data_.num_examples < static_cast<int64_t>(pairs.size()))
    pairs.resize(static_cast<size_t>(data_.num_examples));
  try {
    split_ = split_pairs(std::move(pairs), data_.test_size, data_.valid_size,
                               static_cast<uint64_t>(data_.split_seed));
  } catch (const Error& e) {
    throw Error(cat(data_.path, ": ", e.what(), "; lower data.test_size / data.valid_size",
                    data_.num_examples > 0 ? " or raise data.num_examples" : ""));
  }
  if (split_.valid.empty())  // checked now, not after training, where the first evaluation needs them
    throw Error(cat(data_.path, ": data.valid_size=", data_.valid_size, " leaves no validation pairs; training "
                    "evaluates on them (train.eval_steps, the best checkpoint): set data.valid_size to 1 or more"));
  split_loaded_ = true;
}

void SentencePairDataset::encode_training(int64_t max_positions) {
  train_src_.clear();
  train_tgt_.clear();
  train_order_key_.clear();
  train_cost_.clear();
  train_pair_.clear();
  max_positions_ = max_positions;
  int64_t dropped = 0;
  for (size_t pair = 0; pair < split_.train.size(); ++pair) {
    const SentencePair& p = split_.train[pair];
    std::vector<int64_t> src = text_->source_ids(p.source);
    std::vector<int64_t> tgt = text_->target_ids(p.target);
    const auto n_src = static_cast<int64_t>(src.size()) - 2;  // without <start>/<end>
    const auto n_tgt = static_cast<int64_t>(tgt.size()) - 2;
    const int64_t limit = max_positions;
    if ((data_.max_source_length > 0 && n_src > data_.max_source_length) ||
        (data_.max_target_length > 0 && n_tgt > data_.max_target_length) ||
        (limit > 0 && (n_src + 2 > limit || n_tgt + 1 > limit))) {
      ++dropped;
      continue;
    }
    // Bucketing key: target length first (the decoder's steps cost most), then source length.
    train_order_key_.push_back(static_cast<int64_t>(tgt.size()) * 100000 +
                               static_cast<int64_t>(src.size()));
    train_cost_.push_back(static_cast<int64_t>(std::max(src.size(), tgt.size())));
    train_src_.push_back(std::move(src));
    train_tgt_.push_back(std::move(tgt));
    train_pair_.push_back(pair);
  }
  if (dropped > 0) {
    std::cerr << "zoo: note: dropped " << dropped << " of " << split_.train.size()
              << " training pairs longer than data.max_source_length=" << data_.max_source_length
              << " / data.max_target_length=" << data_.max_target_length << " (0 = no limit)"
              << (max_positions > 0 ? cat(" or the model's ", max_positions, " positions") : "")
              << std::endl;
  }
  if (train_src_.empty())
    throw Error(
        cat("config: data.max_source_length / data.max_target_length leave no training "
            "pair (all ",
            split_.train.size(), " are longer); raise them or set them to 0"));
}

std::vector<SentencePair> SentencePairDataset::eval_pairs(const std::string& split) {
  if (split != "valid" && split != "test" && split != "train")
    throw Error(cat("unknown split '", split, "'; use valid or test"));
  if (!split_loaded_ && !checkpoint_dir_.empty()) {
    // Away from the training machine the pair file may be elsewhere, but the run directory
    // holds the split it used.
    std::error_code ec;
    const fs::path tsv = run_dir_of(checkpoint_dir_) / (split + ".tsv");
    if (!data_path_exists(data_.path) && fs::exists(tsv, ec)) {
      std::cerr << "zoo: note: data.path "
                << (data_.path.empty() ? std::string("is not set")
                                       : "'" + data_.path + "' does not exist")
                << "; using " << tsv.string() << " written by the training run" << std::endl;
      return read_tsv_pairs(tsv.string());
    }
  }
  load_split();
  return split == "valid" ? split_.valid : split == "test" ? split_.test : split_.train;
}

const std::set<std::string>& SentencePairDataset::training_sources() {
  if (!training_sources_) {  // once: every evaluation of a run needs the same set
    training_sources_.emplace();
    for (const auto& p : eval_pairs("train")) training_sources_->insert(preprocess_chinese(p.source));
  }
  return *training_sources_;
}

std::vector<std::vector<int64_t>> SentencePairDataset::epoch_plan(uint64_t seed, int64_t epoch,
                                                              int64_t batch_size) const {
  const uint64_t epoch_seed = plan_seed(seed, epoch);
  if (data_.batch_tokens > 0)
    return token_batches(train_order_key_, train_cost_, data_.batch_tokens, epoch_seed, /*shuffle=*/true);
  return bucket_batches(train_order_key_, batch_size, epoch_seed, /*shuffle=*/true);
}

Batch SentencePairDataset::train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  std::vector<std::vector<int64_t>> src, tgt;
  src.reserve(indices.size());
  tgt.reserve(indices.size());
  for (int64_t i : indices) {
    src.push_back(train_src_.at(static_cast<size_t>(i)));
    tgt.push_back(train_tgt_.at(static_cast<size_t>(i)));
  }
  if (text_->samples_source() || text_->samples_target()) resample(indices, seed, src, tgt);
  return Batch{{{"input_ids", pad_sequences(src)}, {"labels", pad_sequences(tgt)}},
               static_cast<int64_t>(indices.size()),
               0};
}

// Subword regularization: one request per sampling side for the whole batch. A sample longer
// than the model's positions (encode_training's limits) keeps the best segmentation.
void SentencePairDataset::resample(const std::vector<int64_t>& indices, uint64_t seed,
                                   std::vector<std::vector<int64_t>>& src,
                                   std::vector<std::vector<int64_t>>& tgt) const {
  std::vector<std::string> sources, targets;
  for (int64_t i : indices) {
    const SentencePair& p = split_.train.at(train_pair_.at(static_cast<size_t>(i)));
    sources.push_back(p.source);
    targets.push_back(p.target);
  }
  const auto limit = static_cast<size_t>(std::max<int64_t>(max_positions_, 0));
  if (text_->samples_source()) {
    auto sampled = text_->sample_source_ids(sources, seed);
    for (size_t k = 0; k < sampled.size(); ++k)
      if (limit == 0 || sampled[k].size() <= limit) src[k] = std::move(sampled[k]);
  }
  if (text_->samples_target()) {
    auto sampled = text_->sample_target_ids(targets, seed);
    for (size_t k = 0; k < sampled.size(); ++k)
      if (limit == 0 || sampled[k].size() <= limit + 1) tgt[k] = std::move(sampled[k]);  // the model reads all but <end>
  }
}

std::vector<std::vector<int64_t>> SentencePairDataset::eval_plan(const std::string& split, int64_t batch_size,
                                                                  int64_t max_positions) {
  std::vector<SentencePair> pairs = eval_pairs(split);
  if (data_.max_eval_samples > 0 && data_.max_eval_samples < static_cast<int64_t>(pairs.size()))
    pairs.resize(static_cast<size_t>(data_.max_eval_samples));
  if (pairs.empty())
    throw Error(cat("the ", split, " split is empty (data.", split == "valid" ? "valid" : "test",
                    "_size is 0)", split == "valid" ? "; use --split test" : ""));
  // The random split leaves some sources of this split verbatim in the training split: BLEU
  // on the rest says how the model does on sentences it never saw.
  const std::set<std::string>& seen = training_sources();
  eval_src_.clear();
  eval_tgt_.clear();
  eval_references_.clear();
  eval_unseen_.clear();
  std::vector<int64_t> lengths;
  for (const auto& p : pairs) {
    eval_src_.push_back(text_->encode_source(p.source, max_positions));
    eval_tgt_.push_back(text_->target_ids(p.target));
    eval_references_.push_back(TranslationText::reference_text(p.target));
    eval_unseen_.push_back(!seen.count(preprocess_chinese(p.source)));
    lengths.push_back(static_cast<int64_t>(eval_src_.back().size()));
  }
  return bucket_batches(lengths, batch_size, 0, /*shuffle=*/false);
}

Batch SentencePairDataset::eval_batch(const std::vector<int64_t>& examples) const {
  std::vector<std::vector<int64_t>> src_rows, tgt_rows;
  for (int64_t i : examples) {
    src_rows.push_back(eval_src_[i]);
    tgt_rows.push_back(eval_tgt_[i]);
  }
  return Batch{{{"input_ids", pad_sequences(src_rows)}, {"labels", pad_sequences(tgt_rows)}},
               static_cast<int64_t>(examples.size()),
               0};
}

}  // namespace zoo::data
