#pragma once
// Language modeling: UTF-8 text files -> a tokenizer -> one token stream on disk (memory-mapped,
// so corpora larger than memory train) -> random windows of block_size + 1 tokens, as
// nanoGPT samples them; next-token cross-entropy; loss and perplexity on the validation split
// (the last validation_fraction of the stream, nanoGPT's 90/10 split).
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "data/stream_source.h"
#include "data/token_windows.h"
#include "data/tokenizer.h"
#include "models/gpt.h"
#include "train/task.h"

namespace zoo {

/// The "data" section of language-modeling configs.
struct LanguageModelingDataOptions {
  std::vector<std::string> files;
  std::string tokenizer = "char";
  std::string stream;
  double validation_fraction = 0.1;
  int64_t block_size = 0;
  int64_t max_eval_windows = 2000;
  std::string tokenizer_fingerprint;  // recorded by the task: the tokenizer the model was trained with

  template <class V>
  void fields(V& v) {
    v("files", files,
      "UTF-8 text files, concatenated in this order; without a leading /, ./, ../ or ~/ a path is looked up "
      "in the data home (ZOO_DATA_DIR)");
    v("tokenizer", tokenizer,
      "\"char\" (a character vocabulary learnt from the files, as nanoGPT's shakespeare_char) or a directory "
      "with a tokenizer: zoo tokenizer train's output, or a Hugging Face GPT-2 directory (vocab.json + merges.txt)");
    v("stream", stream,
      "the token stream file (ids as uint16, or uint32 above 65,536 ids, like nanoGPT's train.bin): built from "
      "data.files when missing or out of date; \"\" = OUTPUT_DIR/tokens.bin. Without data.files, an existing "
      "stream is used as it is");
    v("validation_fraction", validation_fraction, "the last fraction of the stream held out for validation",
      between(0, 0.9));
    v("block_size", block_size, "context length of a training window; 0 = model.n_positions", at_least(0));
    v("max_eval_windows", max_eval_windows,
      "evaluation reads at most this many consecutive windows of the validation split; 0 = all", at_least(0));
    v("tokenizer_fingerprint", tokenizer_fingerprint,
      "digest of the tokenizer the model was trained with (filled in by zoo; a checkpoint refuses another)");
  }
};

class LanguageModelingTask : public Task {
 public:
  LanguageModelingTask(const json& config, const TaskContext& context, const std::string& checkpoint_dir);

  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  void prepare_training(const std::string& output_dir) override;
  /// Windows per epoch: the training tokens / block_size.
  int64_t num_train_examples() const override;
  /// Random window starts, uniform over the training tokens, from (seed, epoch).
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const override;
  /// input_ids (a window's first block_size tokens) and labels (the same window one token on).
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  Loss loss(const Batch& batch) override;
  /// Yes: every window has block_size tokens; dropout draws from the slice's seed stream.
  bool splittable() const override;
  bool graphable() const override { return true; }
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_eval_split() const override { return "valid"; }
  void save_assets(const std::string& dir) const override;
  const data::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  void load_or_build_tokenizer(const std::string& checkpoint_dir);
  void open_stream(const std::string& output_dir);
  int64_t block_size() const;

  LanguageModelingDataOptions data_;
  std::unique_ptr<data::Tokenizer> tokenizer_;
  models::GPT2LMHeadModel model_{nullptr};
  std::optional<data::TokenWindows> windows_;
  std::string eval_split_;  // the split eval_plan() loaded last
};

}  // namespace zoo
