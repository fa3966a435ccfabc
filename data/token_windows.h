#pragma once
// A token stream as a dataset, language modelling's data: windows of block_size + 1 ids of
// a memory-mapped stream (data/token_stream.h), its last data.validation_fraction held out.
// Training windows start at tokens drawn from the epoch's seed (nanoGPT's get_batch);
// evaluation takes n of a split's consecutive windows, spread evenly. Named batches of
// input_ids and labels (the window shifted by one).
#include <cstdint>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/token_stream.h"

namespace zoo::data {

class TokenWindows {
 public:
  /// Errors name the stream when either split is shorter than one window, or (vocab_size) when
  /// it holds an id the model has no row for.
  TokenWindows(TokenStream stream, int64_t block_size, double validation_fraction, int64_t max_eval_windows,
               int64_t vocab_size);

  const TokenStream& stream() const { return stream_; }
  /// Windows of training tokens in an epoch: at least one.
  int64_t train_size() const { return std::max<int64_t>(1, (train_tokens_ - 1) / block_); }
  /// Batches of random window starts, from `seed` and `epoch`.
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const;
  /// The windows starting at tokens `starts` (what epoch_plan gives).
  Batch train_batch(const std::vector<int64_t>& starts) const;

  /// Throws unless `split` is "train" or "valid".
  static void check_split(const std::string& split);
  /// Split "train" or "valid": its windows (at most max_eval_windows), in consecutive batches.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size);
  /// Windows `indices` of the split eval_plan() loaded last.
  Batch eval_batch(const std::vector<int64_t>& indices) const;

 private:
  torch::Tensor window(int64_t start) const;
  Batch batch_of(const torch::Tensor& ids) const;

  TokenStream stream_;
  int64_t block_ = 0, max_eval_windows_ = 0, vocab_size_ = 0;
  int64_t train_tokens_ = 0;  // [0, train_tokens_) trains, the rest validates
  // The split eval_plan() loaded last: its first token, and its evaluation windows (n of the
  // `available` consecutive ones, evenly spread).
  int64_t eval_begin_ = 0, eval_available_ = 0, eval_windows_ = 0;
};

}  // namespace zoo::data
