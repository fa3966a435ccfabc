#include "train/tasks/language_modeling.h"

#include <cmath>

#include "core/paths.h"
#include "models/registry.h"

namespace zoo {

LanguageModelingTask::LanguageModelingTask(const json& config, const TaskContext& context,
                                           const std::string& checkpoint_dir) {
  config_ = config;
  context_ = context;
  data_ = read_options<LanguageModelingDataOptions>(config.value("data", json::object()), "data");
  load_or_build_tokenizer(checkpoint_dir);
  config_["model"] = models::complete_model_section(config.at("model"), data::language_model_facts(*tokenizer_));
  config_["data"]["tokenizer_fingerprint"] = data_.tokenizer_fingerprint;
  model_ = models::GPT2LMHeadModel(
      std::dynamic_pointer_cast<models::GPT2LMHeadModelImpl>(models::build_model(config_["model"])));
  if (block_size() > model_->options().n_positions)
    throw Error(cat("config: data.block_size (", data_.block_size, ") exceeds model.n_positions (",
                    model_->options().n_positions, ")"));
}

void LanguageModelingTask::load_or_build_tokenizer(const std::string& checkpoint_dir) {
  std::string source;
  if (!checkpoint_dir.empty() && data::has_tokenizer(checkpoint_dir)) {
    source = checkpoint_dir;
    tokenizer_ = data::load_tokenizer(checkpoint_dir);
  } else if (data_.tokenizer == "char") {
    if (data_.files.empty())
      throw Error("config: data.tokenizer \"char\" learns its characters from data.files, which is empty; "
                  "give the text files (or a tokenizer directory as data.tokenizer)");
    source = "data.files";
    data::TokenizerTrainOptions options;
    options.model_type = "char";
    tokenizer_ = data::train_tokenizer(data::resolved_text_files(data_.files, "data.files"), options);
  } else {
    source = existing_data_path(data_.tokenizer, "data.tokenizer");
    tokenizer_ = data::load_tokenizer(source);
  }
  data::check_tokenizer_fingerprint(*tokenizer_, data_.tokenizer_fingerprint, source);
  data_.tokenizer_fingerprint = tokenizer_->fingerprint();
}

int64_t LanguageModelingTask::block_size() const {
  return data_.block_size > 0 ? data_.block_size : config_.at("model").at("n_positions").get<int64_t>();
}

void LanguageModelingTask::open_stream(const std::string& output_dir) {
  data::StreamRequest request;
  if (!data_.files.empty()) request.files = data::resolved_text_files(data_.files, "data.files");
  request.stream = data_.stream;
  request.output_dir = output_dir;
  request.primary = context().primary;
  auto stream = data::open_token_stream(request, *tokenizer_);
  config_["data"]["stream"] = stream.path();
  windows_.emplace(std::move(stream), block_size(), data_.validation_fraction, data_.max_eval_windows,
                   model_->options().vocab_size);
}

void LanguageModelingTask::prepare_training(const std::string& output_dir) {
  require_validation_split(data_.validation_fraction > 0, "validation_fraction", data_.validation_fraction,
                           "a share above 0 (nanoGPT holds out 0.1)");
  open_stream(output_dir);
}

int64_t LanguageModelingTask::num_train_examples() const { return windows_->train_size(); }

std::vector<std::vector<int64_t>> LanguageModelingTask::epoch_plan(uint64_t seed, int64_t epoch,
                                                                   int64_t batch_size) const {
  return windows_->epoch_plan(seed, epoch, batch_size);
}

Batch LanguageModelingTask::make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  Batch b = windows_->train_batch(indices);
  b.seed = seed;
  return b;
}

Loss LanguageModelingTask::loss(const Batch& batch) {
  return {model_->loss(batch["input_ids"], batch["labels"])};
}

bool LanguageModelingTask::splittable() const { return true; }

std::vector<std::vector<int64_t>> LanguageModelingTask::eval_plan(const std::string& split, int64_t batch_size) {
  data::TokenWindows::check_split(split);
  if (!windows_) open_stream("");
  auto plan = windows_->eval_plan(split, batch_size);
  eval_split_ = split;
  return plan;
}

Batch LanguageModelingTask::make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const {
  check_eval_split(eval_split_, split);
  return windows_->eval_batch(examples);
}

Metrics LanguageModelingTask::eval_sums(const std::string&, const Batch& batch) {
  const auto& labels = batch["labels"];
  auto logits = model_->forward(batch["input_ids"]).to(torch::kFloat);
  const double loss = torch::nn::functional::cross_entropy(
                          logits.flatten(0, 1), labels.flatten(),
                          torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum))
                          .item<double>();
  return Metrics{{"loss_sum", loss}, {"tokens", static_cast<double>(labels.numel())}};
}

Metrics LanguageModelingTask::metrics_from_sums(const Metrics& sums) const {
  const double tokens = sums.at("tokens"), loss = tokens > 0 ? sums.at("loss_sum") / tokens : 0.0;
  return Metrics{{"loss", loss}, {"perplexity", std::exp(loss)}, {"tokens", tokens}};
}

// model_max_length: the context zoo generate keeps (Hugging Face's key; GPT-2's is its positions).
void LanguageModelingTask::save_assets(const std::string& dir) const {
  tokenizer_->save(dir);
  data::add_to_tokenizer_config(dir, {{"model_max_length", model_->options().n_positions}});
}

}  // namespace zoo
