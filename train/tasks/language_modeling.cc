#include "train/tasks/language_modeling.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/hash.h"
#include "core/input_file.h"
#include "core/paths.h"
#include "models/registry.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {

std::vector<std::string> resolved_files(const std::vector<std::string>& files) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    out.push_back(existing_data_path(f, "data.files"));
    check_input_file(out.back(), "data.files");  // a regular file: not /dev/zero, a FIFO or a folder
  }
  return out;
}

// Whether zoo may write a derived file at `path`: inside the run's output directory (training
// only: `output_dir` is "" for zoo eval and the other commands) or zoo's cache folder.
bool may_write(const std::string& path, const std::string& output_dir) {
  if (!output_dir.empty() && path_inside(path, output_dir)) return true;
  try {
    return path_inside(path, cache_home());
  } catch (const Error&) {
    return false;
  }
}

// The cache's stream for these sources and tokenizer: one file per (files, meta), so runs
// and commands that need the same stream share it.
std::string cached_stream_path(const std::vector<std::string>& files, const json& meta) {
  const uint64_t h = fnv1a(json{{"files", files}, {"meta", meta}}.dump());
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(h));
  return (fs::path(cache_home()) / "token-streams" / name).string();
}

// Progress of a long tokenisation on stderr, every 5%.
std::function<void(int64_t, int64_t)> tokenizing_progress(const std::string& path) {
  auto last = std::make_shared<int64_t>(-1);
  return [path, last](int64_t done, int64_t total) {
    const int64_t pct = total > 0 ? done * 100 / total : 100;
    if (total < (64 << 20) || pct / 5 == *last / 5) return;
    *last = pct;
    std::cerr << "zoo: tokenising into " << path << ": " << pct << "%" << std::endl;
  };
}

}  // namespace

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
    tokenizer_ = data::train_tokenizer(resolved_files(data_.files), options);
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

std::string LanguageModelingTask::stream_path(const std::string& output_dir) const {
  if (!data_.stream.empty()) return resolve_data_path(data_.stream);
  if (!output_dir.empty()) return (fs::absolute(output_dir) / "tokens.bin").string();
  throw Error("config: data.stream is empty: give the token stream file (zoo train writes OUTPUT_DIR/tokens.bin)");
}

// With data.files, the stream is built where it is missing or out of date, but only inside the
// run's output directory or zoo's cache: a config (which may come with a downloaded checkpoint)
// never makes zoo write elsewhere. Otherwise it goes to the cache, named by its sources.
void LanguageModelingTask::open_stream(const std::string& output_dir) {
  const json meta = {{"tokenizer", data_.tokenizer_fingerprint}};
  int width = data::token_width(tokenizer_->vocab_size());
  std::string path;
  if (!data_.files.empty()) {
    const auto files = resolved_files(data_.files);
    path = data_.stream.empty() && output_dir.empty() ? cached_stream_path(files, meta) : stream_path(output_dir);
    json sidecar = data::current_stream_sidecar(path, files, meta);
    if (sidecar.is_null() && !may_write(path, output_dir)) {
      const std::string cached = cached_stream_path(files, meta);
      std::cerr << "zoo: " << path << " is not a current token stream of data.files, and zoo writes derived files "
                << "only in the run's output directory or its cache; using " << cached << std::endl;
      path = cached;
      sidecar = data::current_stream_sidecar(path, files, meta);
    }
    if (sidecar.is_null() && !context().primary)
      throw Error(cat(path, ": rank 0 of this data-parallel run did not leave a current token stream here; the "
                      "processes need a shared output directory (or give every machine data.stream)"));
    if (sidecar.is_null()) {
      std::cerr << "zoo: tokenising " << files.size() << " file(s) into " << path << std::endl;
      const auto& tok = *tokenizer_;
      const int64_t n = data::write_token_stream(
          files, path, [&tok](std::string_view text) { return tok.encode(text); }, tok.vocab_size(), meta,
          tokenizing_progress(path));
      std::cerr << "zoo: " << n << " tokens" << std::endl;
    }
  } else if (path = stream_path(output_dir); !fs::exists(path)) {
    throw Error(cat(path, ": no token stream, and data.files is empty to build one from; give data.files"));
  } else if (fs::exists(path + ".json")) {
    const json sidecar = read_json_file(path + ".json");
    width = sidecar.value("bytes_per_token", width);
    const std::string made_with = sidecar.value("meta", json::object()).value("tokenizer", "");
    if (!made_with.empty() && made_with != data_.tokenizer_fingerprint)
      throw Error(cat(path, ": the stream was tokenised with another tokenizer (fingerprint ", made_with,
                      ", this one ", data_.tokenizer_fingerprint, "); delete it and give data.files to rebuild"));
  }
  windows_.emplace(data::TokenStream(path, width), block_size(), data_.validation_fraction, data_.max_eval_windows,
                   model_->options().vocab_size);
  config_["data"]["stream"] = path;
}

void LanguageModelingTask::prepare_training(const std::string& output_dir) { open_stream(output_dir); }

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

bool LanguageModelingTask::splittable() const {
  const auto& o = model_->options();
  return o.resid_pdrop == 0 && o.embd_pdrop == 0 && o.attn_pdrop == 0;
}

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

void LanguageModelingTask::save_assets(const std::string& dir) const { tokenizer_->save(dir); }

}  // namespace zoo
