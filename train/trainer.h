#pragma once
// The one training loop. It knows nothing about models: the Task supplies batches, the
// loss and the metrics; the Trainer owns optimisation (optimizer, schedule, accumulation,
// clipping, precision), the data stream, evaluation/keep-best/early stopping,
// checkpoints (atomic, resumable bit for bit on CPU), logs and signals.
#include <atomic>
#include <cstdint>
#include <memory>
#include <functional>
#include <optional>
#include <string>

#include <torch/torch.h>

#include "train/config.h"
#include "train/task.h"

namespace zoo {

/// The "train" section. Names follow Hugging Face TrainingArguments where one exists.
struct TrainOptions {
  int64_t max_steps = 0;  // > 0 overrides num_train_epochs
  double num_train_epochs = 3;
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 64;
  int64_t gradient_accumulation_steps = 1;
  std::string optim = "adamw";
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double momentum = 0.9;  // sgd
  std::string lr_scheduler_type = "linear";
  int64_t warmup_steps = 0;
  double warmup_ratio = 0.0;
  double max_grad_norm = 1.0;  // 0 disables clipping
  double label_smoothing_factor = 0.0;  // classification losses (Hugging Face's name)
  double ema_decay = 0.0;  // exponential moving average of the weights; 0 = off
  int64_t logging_steps = 50;
  int64_t eval_steps = 0;  // 0: evaluate at the end only
  int64_t save_steps = 500;  // 0: save at the end only
  int64_t save_total_limit = 2;  // 0: keep all
  std::string metric_for_best_model;  // "" -> the task's default
  bool greater_is_better = false;  // ignored unless metric_for_best_model is set
  int64_t early_stopping_patience = 0;  // evaluations without improvement; 0 = off
  int64_t seed = 42;
  std::string precision = "fp32";
  int64_t dataloader_prefetch = 4;  // batches prepared ahead by the loader thread
  bool report_to_tensorboard = true;

  template <class V>
  void fields(V& v) {
    v("max_steps", max_steps, "total optimizer steps; > 0 overrides num_train_epochs", at_least(0));
    v("num_train_epochs", num_train_epochs, "epochs when max_steps is 0", at_least(0));
    v("per_device_train_batch_size", per_device_train_batch_size, "examples per micro-batch", at_least(1));
    v("per_device_eval_batch_size", per_device_eval_batch_size, "examples per evaluation batch", at_least(1));
    v("gradient_accumulation_steps", gradient_accumulation_steps, "micro-batches per optimizer step", at_least(1));
    v("optim", optim, "optimizer", one_of({"adamw", "adam", "sgd"}));
    v("learning_rate", learning_rate, "peak learning rate", between(0, 100));
    v("weight_decay", weight_decay, "decoupled (adamw) or L2 (adam, sgd) decay; not applied to biases/norms",
      between(0, 10));
    v("adam_beta1", adam_beta1, "Adam beta1", between(0, 1));
    v("adam_beta2", adam_beta2, "Adam beta2", between(0, 1));
    v("adam_epsilon", adam_epsilon, "Adam epsilon", between(0, 1));
    v("momentum", momentum, "SGD momentum", between(0, 1));
    v("lr_scheduler_type", lr_scheduler_type, "learning-rate schedule",
      one_of({"constant", "constant_with_warmup", "linear", "cosine", "inverse_sqrt"}));
    v("warmup_steps", warmup_steps, "linear warmup steps", at_least(0));
    v("warmup_ratio", warmup_ratio, "warmup as a fraction of the total steps (if warmup_steps is 0)", between(0, 1));
    v("max_grad_norm", max_grad_norm, "clip gradients to this global norm; 0 = off", at_least(0));
    v("label_smoothing_factor", label_smoothing_factor,
      "classification: cross-entropy against (1 - e) one-hot + e uniform targets", between(0, 1));
    v("ema_decay", ema_decay,
      "keep an exponential moving average of the weights (decay per step, e.g. 0.9998; 0 = off): evaluations, "
      "keep-best and each checkpoint's model.safetensors use the average",
      between(0, 0.999999));
    v("logging_steps", logging_steps, "log every N optimizer steps", at_least(1));
    v("eval_steps", eval_steps, "evaluate every N steps (and at the end); 0 = end only", at_least(0));
    v("save_steps", save_steps, "checkpoint every N steps (and at the end); 0 = end only", at_least(0));
    v("save_total_limit", save_total_limit, "keep the newest N checkpoints (plus the best); 0 = all", at_least(0));
    v("metric_for_best_model", metric_for_best_model, "eval metric that picks the best checkpoint");
    v("greater_is_better", greater_is_better, "whether a larger metric_for_best_model is better");
    v("early_stopping_patience", early_stopping_patience, "stop after N evals without improvement; 0 = off",
      at_least(0));
    v("seed", seed, "seed for init, data order, augmentation and dropout", between(0, 9.0e15));
    v("precision", precision,
      "fp32; bf16 autocast (CUDA with LibTorch >= 2, CPUs with AVX512-BF16 or AMX); auto: bf16 where the device "
      "has it, else fp32",
      one_of({"fp32", "bf16", "auto"}));
    v("dataloader_prefetch", dataloader_prefetch, "batches prepared ahead by the loader thread", between(1, 64));
    v("report_to_tensorboard", report_to_tensorboard, "write a TensorBoard event file in the output directory");
  }
};

/// Learning rate multiplier in [0, 1] for optimizer step `step` (0-based) of `total`.
double lr_factor(const std::string& schedule, int64_t step, int64_t warmup, int64_t total);

/// Set by SIGINT/SIGTERM (installed by install_stop_handlers()); the trainer finishes the
/// current step, writes a checkpoint and returns.
std::atomic<bool>& stop_requested();
void install_stop_handlers();

/// torch::optim::AdamW with the same state (so optimizer.pt is interchangeable) and the same
/// arithmetic per parameter, bit for bit, but the parameters are shared out among the CPU
/// cores by size and updated at once. LibTorch updates one parameter after the other, and a
/// small model's tensors are too small for its per-operation threading: on 2 cores the update
/// of a ViT with 0.5M parameters took ~10% of a training step with one core idle.
class ThreadedAdamW : public torch::optim::AdamW {
 public:
  using torch::optim::AdamW::AdamW;
  torch::Tensor step(LossClosure closure = nullptr) override;
};

/// Exponential moving average of a model's weights (Polyak averaging, timm's ModelEma):
/// after optimizer step n (1-based) every floating-point parameter and buffer moves
/// avg = d * avg + (1 - d) * weight, with d = decay_at(decay, n) = min(decay, (1 + n) / (10 + n))
/// so that the first averages are not dominated by the initial weights. Other buffers are
/// copied. The average starts as a copy of the model's current weights.
class WeightAverage {
 public:
  WeightAverage(torch::nn::Module& model, double decay);
  static double decay_at(double decay, int64_t step);
  void update(int64_t step);
  /// Exchanges the averages and the model's weights in place (a second call undoes it).
  void swap();
  /// The averaged tensors, in state_dict() order.
  const std::vector<torch::Tensor>& averages() const { return avg_; }

 private:
  double decay_;
  std::vector<torch::Tensor> live_, avg_;
};

/// bf16 autocast for the forward pass while alive (when `enabled`): on CUDA with LibTorch >= 2,
/// on CPUs with native bf16 (cpu_bf16_support() in train/device.h); check_precision() says
/// which. Autocast is thread-local: every thread that runs a forward pass (the per-core
/// slices) needs its own guard.
class AutocastGuard {
 public:
  AutocastGuard(bool enabled, const torch::Device& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  void set(bool on) const;
  bool enabled_, cpu_;
};

/// Throws zoo::Error unless `precision` ("fp32" | "bf16") can run on `device`.
void check_precision(const std::string& precision, const torch::Device& device);
/// "fp32" or "bf16" for train.precision on `device`: "auto" is bf16 where check_precision
/// accepts it, else fp32; the others are checked (zoo::Error when they cannot run).
std::string resolve_precision(const std::string& precision, const torch::Device& device);

/// Forward and backward of one batch: adds d(weight * loss)/d(params) to the parameters'
/// gradients and returns the loss; `check(loss)`, when given, runs before any gradient is
/// touched (it may throw, e.g. on a non-finite loss).
///
/// With shards > 1 (the trainer passes one per CPU core for tasks that are splittable())
/// the batch is cut into `shards` slices and every core runs forward and backward of its own
/// slice single-threaded, all at once; `loss_of` must then be thread-safe and return the
/// mean over the examples of its slice. LibTorch's intra-op threading splits each operation
/// instead, and at ViT-on-CPU sizes most operations are too small for that to pay: measured
/// on 2 cores, a ViT training run went from 1,040 (1 thread) or ~1,000 (2 threads, intra-op)
/// to 1,400-1,550 examples/s. The slices' gradients are summed in slice order, so a step is
/// deterministic whatever the threads' timing. oneDNN is off inside the slices (its
/// convolutions hang there) unless `onednn`, which bf16 autocast needs for its matrix products.
double forward_backward(const std::function<torch::Tensor(const Batch&)>& loss_of, const Batch& batch,
                        double weight, int64_t shards, const std::vector<torch::Tensor>& params,
                        const std::function<void(double)>& check = {}, bool onednn = false);

struct TrainResult {
  int64_t global_step = 0;
  bool interrupted = false;
  bool early_stopped = false;
  std::string last_checkpoint;
  std::string best_checkpoint;
  Metrics final_metrics;
};

struct TrainerArgs {
  json config;  // resolved config
  std::string config_source;  // for the resume hint
  std::string output_dir;
  torch::Device device{torch::kCPU};
  std::string resume_from;  // checkpoint dir, or ""
};

/// Runs training to the end (or interruption). Throws zoo::Error on bad input and on a
/// non-finite loss (naming the step; the last good checkpoint is kept).
TrainResult train(Task& task, const TrainerArgs& args);

}  // namespace zoo
