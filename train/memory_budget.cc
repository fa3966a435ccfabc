#include "train/memory_budget.h"

#include <algorithm>
#include <string>

#include "core/error.h"
#include "models/model_size.h"
#include "models/registry.h"
#include "train/train_options.h"

namespace zoo {
namespace {

constexpr double kFloat = 4;  // fp32 master weights, gradients and activations

// Tokens in one item of the task, from the data section (and the model's for images).
double tokens_per_item(const json& config, const models::ModelSize& size, std::string* key) {
  const json& data = config.contains("data") ? config["data"] : json::object();
  const std::string task = config.value("task", std::string());
  if (size.image_tokens > 0) return double(size.image_tokens);
  if (task == "language_modeling") {
    const int64_t block = data.value("block_size", int64_t{0});
    *key = cat("data.block_size=", block);
    return double(block > 0 ? block : config.at("model").value("n_positions", int64_t{1024}));
  }
  if (task == "translation") {  // 0 keeps every length: a sentence of Tatoeba's is well under 64
    const int64_t s = data.value("max_source_length", int64_t{0}), t = data.value("max_target_length", int64_t{0});
    *key = cat("data.max_source_length=", s, ", data.max_target_length=", t);
    return double((s > 0 ? s : 64) + (t > 0 ? t : 64));
  }
  const int64_t length = data.value("max_length", int64_t{128});
  *key = cat("data.max_length=", length);
  return double(length);
}

// Activations are stored at half width under bf16/fp16 autocast.
double half_width(const TrainOptions& t) { return t.precision == "bf16" || t.precision == "fp16" ? 0.5 : 1.0; }

// One block's saved tensors per token, in elements: the projections' inputs and outputs,
// norms, activations and dropout masks (about 24 widths), and the attention rows (about 1.5
// per head), fitted to measured peaks of GPT runs on the CPU (docs/benchmarks.md).
double block_elements_per_token(const models::ModelSize& size, double tokens) {
  return 24.0 * double(size.width) + 1.5 * double(size.heads) * tokens;
}

// A no-grad forward holds about one block's tensors at a time (about 12 widths: the projections,
// the feed-forward's hidden layer and the residual), the attention scores and their softmax,
// and the logits with their log-softmax; fitted to an 8 x 512 GPT evaluating 64 x 512 tokens
// on the CPU (1.9 GiB above the weights).
double eval_elements_per_token(const models::ModelSize& size, double tokens, const TrainOptions& t) {
  return (12.0 * double(size.width) + 2.0 * double(size.heads) * tokens) * half_width(t) + 2.0 * double(size.outputs);
}

double optimizer_state_per_parameter(const TrainOptions& t) {
  if (t.optim == "sgd") return t.momentum > 0 ? 1 : 0;
  return 2;  // Adam's two moments
}

}  // namespace

MemoryEstimate estimate_training_memory(const json& config) {
  const auto size = models::model_size(config.at("model"));
  const auto t = read_options<TrainOptions>(config.at("train"), "train");
  std::string length_key;
  const double tokens = tokens_per_item(config, size, &length_key);
  const double batch = double(t.per_device_train_batch_size) * (t.r_drop_alpha > 0 ? 2 : 1);  // R-Drop: each item twice

  MemoryEstimate e = estimate_inference_memory(config.at("model"));
  // LoRA trains r x (in + out) values per adapted layer (about 4 widths for a fused QKV).
  const double trained = t.lora.is_object()
                             ? std::min(double(size.parameters),
                                        double(size.layers) * 2.0 * double(t.lora.value("r", int64_t{8})) * 4.0 *
                                            double(size.width))
                             : double(size.parameters);
  e.gradients = trained * kFloat;
  e.optimizer = trained * kFloat * optimizer_state_per_parameter(t);
  // Under checkpointing each block keeps its input, and one block at a time is recomputed in
  // backward: fitted to an 8 x 512 GPT (block 512, batch 8) on the CPU, whose training peak was
  // 937 MiB (0.6 of a block's tensors beside the inputs; the recomputed block frees as it goes).
  const double per_token = t.gradient_checkpointing
                               ? double(size.layers) * double(size.width) + 0.6 * block_elements_per_token(size, tokens)
                               : double(size.layers) * block_elements_per_token(size, tokens);
  const double logits = 3.0 * double(size.outputs);  // logits, their log-softmax and its gradient
  e.activations = batch * tokens * (per_token * half_width(t) + logits) * kFloat;
  e.keys = cat(size.keys, ", train.per_device_train_batch_size=", t.per_device_train_batch_size,
               t.r_drop_alpha > 0 ? ", train.r_drop_alpha > 0 (each item twice)" : "",
               length_key.empty() ? "" : ", " + length_key);
  return e;
}

MemoryEstimate estimate_evaluation_memory(const json& config, int64_t batch) {
  const auto size = models::model_size(config.at("model"));
  const auto t = read_options<TrainOptions>(config.at("train"), "train");
  std::string length_key;
  const double tokens = tokens_per_item(config, size, &length_key);
  MemoryEstimate e = estimate_inference_memory(config.at("model"));
  e.activations = double(batch) * tokens * eval_elements_per_token(size, tokens, t) * kFloat;
  e.keys = cat(size.keys, ", train.per_device_eval_batch_size=", batch, length_key.empty() ? "" : ", " + length_key);
  return e;
}

int64_t evaluation_batch_size(const json& config, std::string* note) {
  const auto t = read_options<TrainOptions>(config.at("train"), "train");
  const int64_t asked = t.per_device_eval_batch_size;
  double training = 0, per_item = 0;
  try {
    training = estimate_training_memory(config).activations;
    per_item = estimate_evaluation_memory(config, 1).activations;
  } catch (const std::exception&) {
    return asked;  // a model the budget does not know: as configured
  }
  // Activations under kNeverSplit are noise beside the runtime's own 256 MiB: kept whole.
  constexpr double kNeverSplit = 16.0 * 1024 * 1024;
  if (per_item <= 0 || double(asked) * per_item <= std::max(training, kNeverSplit)) return asked;
  const int64_t fits = std::max<int64_t>(1, static_cast<int64_t>(std::max(training, kNeverSplit) / per_item));
  if (note)
    *note = cat("evaluating in batches of ", fits, ", not train.per_device_eval_batch_size=", asked, ": its forward would "
                "need about ", format_bytes(double(asked) * per_item), " of activations, more than the training step's ",
                format_bytes(training), " (the results are the same)");
  return fits;
}

std::string peak_estimate(const json& config) {
  const MemoryEstimate training = estimate_training_memory(config);
  const int64_t batch = evaluation_batch_size(config, nullptr);
  const MemoryEstimate evaluation = estimate_evaluation_memory(config, batch);
  // While evaluation runs, the weights, gradients and optimizer state stay and the training
  // step's activations are freed.
  const double during_evaluation = training.total() - training.activations + evaluation.activations;
  return during_evaluation > training.total()
             ? cat(format_bytes(during_evaluation), ", set by evaluation (batches of ", batch, ")")
             : cat(format_bytes(training.total()), ", set by the training step");
}

}  // namespace zoo
