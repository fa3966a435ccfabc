#pragma once
// The one training loop. It knows nothing about models: the Task supplies batches, the
// loss and the metrics; the Trainer owns optimisation (train/optimizers.h, schedule.h,
// accumulation, clipping, precision.h), the data stream (batch_stream.h), the per-core
// batch slices (slices.h), the weight average (weight_average.h), train/eval mode,
// evaluation/keep-best/early stopping, checkpoints (atomic, resumable bit for bit on CPU),
// logs and signals (signals.h).
#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/lora.h"
#include "train/collective.h"
#include "train/grad_scaler.h"
#include "io/config.h"
#include "train/optimizers.h"
#include "train/precision.h"
#include "train/schedule.h"
#include "train/signals.h"
#include "train/slices.h"
#include "train/task.h"
#include "train/train_options.h"
#include "train/weight_average.h"

namespace zoo {

class BatchStream;
class GraphedTrainStep;
class TrainLogger;

/// Where data-parallel training plugs in; both are optional.
struct TrainerHooks {
  /// Runs once per optimizer step after the backward passes of all its micro-batches and
  /// before clipping, with the model's parameters: e.g. an all-reduce of the gradients.
  std::function<void(const std::vector<torch::Tensor>& params)> after_backward;
  /// Whether this process writes the logs, metrics.jsonl, TensorBoard events, config.json and
  /// checkpoints (e.g. rank 0 only); unset means yes.
  std::function<bool()> is_writer;
  /// After each optimizer step: the step, the run's total and the step's loss (zoo::train's
  /// progress callback).
  std::function<void(int64_t step, int64_t total_steps, double loss)> on_step;
};

struct TrainerArgs {
  json config;  // resolved config
  std::string config_source;  // for the resume hint: the config file and the overrides, as given
  std::string output_dir;
  torch::Device device{torch::kCPU};
  std::string resume_from;  // checkpoint dir, or ""
  TrainerHooks hooks = {};
  /// The other processes of a data-parallel run (train/distributed.h), or null: each process
  /// trains on its shard of every global batch, gradients are averaged, rank 0 writes.
  Collective* collective = nullptr;
};

struct TrainResult {
  int64_t global_step = 0;
  bool interrupted = false;
  bool early_stopped = false;
  std::string last_checkpoint;
  std::string best_checkpoint;
  Metrics final_metrics;
  std::string averaged_checkpoint;  // train.average_checkpoints: OUTPUT/checkpoint-averaged
  Metrics averaged_metrics;         // and its metrics on the validation split
};

/// What a checkpoint's trainer_state.json records and resume restores.
struct TrainerState {
  int64_t step = 0;   // optimizer steps done
  int64_t epoch = 0;  // position of the next batch: epoch and batch index in it
  int64_t index = 0;
  double examples_seen = 0;
  double train_seconds = 0;  // wall time trained before this process (a resumed run)
  double best_value = 0;  // of metric_for_best_model; +-inf before the first evaluation
  std::string best_checkpoint;
  int64_t evals_without_improvement = 0;
};

class Trainer {
 public:
  /// Checks the precision and the output directory, prepares the task's data, builds the
  /// optimizer and, with args.resume_from, restores everything from that checkpoint.
  Trainer(Task& task, TrainerArgs args);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  /// Trains to the last step, an interruption (Ctrl-C) or early stopping. Throws zoo::Error
  /// on a non-finite loss (naming the step; the last good checkpoint is kept).
  TrainResult run();
  const TrainerState& state() const { return state_; }

 private:
  // train.precision resolved (data parallel: rank 0's choice) and told to the task.
  void choose_precision();
  // The output directory, and the task's data (data parallel: rank 0 first, which may build
  // files the others read).
  void prepare_data();
  // Steps per epoch, total and warm-up steps, the best-model metric.
  void plan_schedule();
  // train.max_time: re-estimates total_steps_ from the speed so far; once the time is spent,
  // the next step is the last.
  void follow_time_budget();
  double train_seconds() const;  // before this process and in it
  // The CPU batch slices, the trained parameters, and train.cuda_graphs' captured step.
  void prepare_step();
  void setup_weights();
  std::string estimate_note() const;
  // Resumes from checkpoint `dir` (train/trainer_checkpoint.cc): weights, optimizer, state, RNG.
  void restore(const std::string& dir);
  void restore_weights(const std::string& dir);
  void warn_if_global_batch_changed(const std::string& dir, int64_t saved_world) const;
  // train.gradient_checkpointing: switches every recomputable block of the model on.
  void enable_gradient_checkpointing();
  // "training N steps (...) on DEVICE, PRECISION": the log's first line.
  std::string plan_line() const;
  // What one optimizer step had: its loss, examples and gradient norm (NaN: not clipped), and
  // whether a stop was requested (the step is complete either way).
  struct StepOutcome {
    LossValues loss;
    int64_t examples = 0;
    double grad_norm = NAN;
    bool interrupted = false;
  };
  // One optimizer step at the learning rate set: micro-batches, all-reduce, clipping, update
  // (or the captured graph of all of it).
  StepOutcome optimizer_step(BatchStream& stream);
  // After step state_.step: evaluates and saves when due; whether training stops here
  // (interrupted, or early stopping), the reason logged.
  bool evaluate_save_or_stop(bool interrupted);
  // "done: N steps in T; peak memory ...; last checkpoint ...": the log's last line.
  std::string done_line() const;
  // Forward and backward of one optimizer step's micro-batches; the mean loss.
  LossValues accumulate_gradients(BatchStream& stream, int64_t* examples);
  // train.cuda_graphs: the whole step through the captured graph; the loss, and the gradient
  // norm before clipping.
  LossValues graphed_step(BatchStream& stream, int64_t* examples, double* grad_norm);
  // Throws, naming the step and the last good checkpoint, unless the loss is finite.
  void check_loss(double value, int64_t micro_batch) const;
  void log_step(const LossValues& loss, double lr, double grad_norm, int64_t examples);
  // Evaluates on "valid" (with the weight average); returns whether the metric improved.
  bool evaluate(Metrics* metrics);
  void save(const Metrics* eval_metrics);
  // train.average_checkpoints: the newest checkpoints' mean written and evaluated on "valid".
  void average_newest_checkpoints();
  bool writer() const {
    return rank() == 0 && (!args_.hooks.is_writer || args_.hooks.is_writer());
  }
  int rank() const { return args_.collective ? args_.collective->rank() : 0; }
  int world() const { return args_.collective ? args_.collective->world_size() : 1; }
  // Data parallel: the step's loss and example count summed over the processes, and whether
  // any of them was asked to stop (all stop at the same step).
  bool reduce_step(LossValues* loss, int64_t* examples, bool stop);
  // Metrics on a split; data parallel: each process evaluates its shard and the sums are added.
  Metrics evaluate_split(const std::string& split);
  // Data parallel: checks that every process ends with the same weights.
  void check_replicas_agree();
  double epoch_progress() const;

  Task& task_;
  TrainerArgs args_;
  TrainOptions o_;
  json config_;  // the task's resolved config, written with every checkpoint
  std::string model_type() const { return config_.at("model").value("model_type", ""); }
  std::string precision_;  // "fp32", "bf16" or "fp16"
  int64_t eval_batch_ = 0;  // evaluation's batch (memory_budget.h: evaluation_batch_size); 0 until the first
  std::shared_ptr<torch::nn::Module> model_;
  std::vector<torch::Tensor> params_;  // the trained ones (not a LoRA run's frozen base)
  std::optional<models::LoraOptions> lora_;  // train.lora (or an --init-from adapter's options)
  std::string adapter_base_;                 // the base model of the adapter, for adapter_config.json
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<double> lr_shares_;  // per parameter group: its share of the learning rate (train.layer_lr_decay)
  std::optional<WeightAverage> average_;
  std::unique_ptr<TrainLogger> log_;
  std::unique_ptr<GraphedTrainStep> graphed_;  // train.cuda_graphs
  std::optional<GradScaler> scaler_;  // train.precision=fp16
  int64_t micro_batches_ = 0, steps_per_epoch_ = 0, total_steps_ = 0, warmup_ = 0, shards_ = 1;
  std::string best_metric_;
  bool greater_ = false;
  TrainerState state_;
  TrainResult result_;
  // The logging window: sums since the last logged step.
  struct Window {
    LossValues loss;
    double examples = 0;
    int64_t steps = 0;
    std::chrono::steady_clock::time_point start;
  } window_;
  std::chrono::steady_clock::time_point start_;
  int64_t start_step_ = 0;  // state_.step when run() started
};

/// Trainer(task, args).run().
TrainResult train(Task& task, const TrainerArgs& args);

/// A tensor's bytes (contiguous, copied to the CPU): for fingerprints and RNG states.
std::string tensor_bytes(const torch::Tensor& t);

}  // namespace zoo
