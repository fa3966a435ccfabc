#include "data/token_windows.h"

#include <cmath>
#include <random>

#include "core/error.h"

namespace zoo::data {

TokenWindows::TokenWindows(TokenStream stream, int64_t block_size, double validation_fraction, int64_t max_eval_windows,
                           int64_t vocab_size)
    : stream_(std::move(stream)), block_(block_size), max_eval_windows_(max_eval_windows), vocab_size_(vocab_size) {
  const int64_t n = stream_.size();
  train_tokens_ = n - static_cast<int64_t>(std::floor(static_cast<double>(n) * validation_fraction));
  const int64_t need = block_ + 1;
  if (train_tokens_ < need || (validation_fraction > 0 && n - train_tokens_ < need))
    throw Error(cat(stream_.path(), ": ", n, " tokens are too few for windows of ", need, " tokens in both the training (",
                    train_tokens_, ") and validation (", n - train_tokens_,
                    ") splits; use more text, a smaller data.block_size or data.validation_fraction"));
}

std::vector<std::vector<int64_t>> TokenWindows::epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const {
  std::mt19937_64 rng(batch_seed(seed, epoch, -1));
  std::uniform_int_distribution<int64_t> start(0, train_tokens_ - block_ - 1);
  const int64_t n = train_size();
  std::vector<std::vector<int64_t>> plan;
  for (int64_t i = 0; i < n; i += batch_size) {
    std::vector<int64_t> batch(std::min(batch_size, n - i));
    for (auto& b : batch) b = start(rng);
    plan.push_back(std::move(batch));
  }
  return plan;
}

torch::Tensor TokenWindows::window(int64_t start) const {
  auto ids = torch::empty({block_ + 1}, torch::kLong);
  stream_.read(start, block_ + 1, ids.data_ptr<int64_t>());
  return ids;
}

Batch TokenWindows::batch_of(const torch::Tensor& ids) const {  // (B, block + 1)
  return Batch{{{"input_ids", ids.narrow(1, 0, block_)}, {"labels", ids.narrow(1, 1, block_)}}, ids.size(0), 0};
}

Batch TokenWindows::train_batch(const std::vector<int64_t>& starts) const {
  std::vector<torch::Tensor> rows;
  for (int64_t start : starts) rows.push_back(window(start));
  auto ids = torch::stack(rows);
  const int64_t top = ids.max().item<int64_t>();
  if (top >= vocab_size_)
    throw Error(cat(stream_.path(), ": token id ", top, " is outside the model's vocabulary of ", vocab_size_,
                    "; the stream was made with another tokenizer"));
  return batch_of(ids);
}

void TokenWindows::check_split(const std::string& split) {
  if (split != "valid" && split != "train")
    throw Error(cat("language modeling has the splits valid (the last data.validation_fraction of the stream) "
                    "and train, not '", split, "'"));
}

std::vector<std::vector<int64_t>> TokenWindows::eval_plan(const std::string& split, int64_t batch_size) {
  check_split(split);
  const int64_t begin = split == "train" ? 0 : train_tokens_;
  const int64_t end = split == "train" ? train_tokens_ : stream_.size();
  const int64_t available = (end - begin - 1) / block_;  // consecutive windows of t + 1 overlapping by one
  if (available <= 0) throw Error(cat("the ", split, " split has fewer than ", block_ + 1, " tokens"));
  eval_begin_ = begin;
  eval_available_ = available;
  eval_windows_ = max_eval_windows_ > 0 ? std::min(available, max_eval_windows_) : available;
  return consecutive_batches(eval_windows_, batch_size);
}

Batch TokenWindows::eval_batch(const std::vector<int64_t>& indices) const {
  std::vector<torch::Tensor> rows;
  for (int64_t j : indices) rows.push_back(window(eval_begin_ + (j * eval_available_ / eval_windows_) * block_));
  return batch_of(torch::stack(rows));
}

}  // namespace zoo::data
