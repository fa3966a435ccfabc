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

// One block's saved tensors per token, in elements: the projections' inputs and outputs,
// norms, activations and dropout masks (about 24 widths), and the attention rows (about 1.5
// per head), fitted to measured peaks of GPT runs on the CPU (docs/benchmarks.md).
double block_elements_per_token(const models::ModelSize& size, double tokens) {
  return 24.0 * double(size.width) + 1.5 * double(size.heads) * tokens;
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
  const double batch = double(t.per_device_train_batch_size);
  const double half = (t.precision == "bf16" || t.precision == "fp16") ? 0.5 : 1.0;

  MemoryEstimate e = estimate_inference_memory(config.at("model"));
  // LoRA trains r x (in + out) values per adapted layer (about 4 widths for a fused QKV).
  const double trained = t.lora.is_object()
                             ? std::min(double(size.parameters),
                                        double(size.layers) * 2.0 * double(t.lora.value("r", int64_t{8})) * 4.0 *
                                            double(size.width))
                             : double(size.parameters);
  e.gradients = trained * kFloat;
  e.optimizer = trained * kFloat * optimizer_state_per_parameter(t);
  // Under checkpointing each block keeps its input (and its output's gradient in backward);
  // one block at a time holds everything, twice over while its recomputation runs backward.
  const double per_token = t.gradient_checkpointing
                               ? 2.0 * double(size.layers) * double(size.width) + 2.0 * block_elements_per_token(size, tokens)
                               : double(size.layers) * block_elements_per_token(size, tokens);
  const double logits = 3.0 * double(size.outputs);  // logits, their log-softmax and its gradient
  e.activations = batch * tokens * (per_token * half + logits) * kFloat;
  e.keys = cat(size.keys, ", train.per_device_train_batch_size=", t.per_device_train_batch_size,
               length_key.empty() ? "" : ", " + length_key);
  return e;
}

}  // namespace zoo
