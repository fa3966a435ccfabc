#pragma once
// A Task joins a data source to a model and owns the loss and the metrics. The Trainer
// knows nothing about models or data: it asks the task for an epoch plan (which examples
// go in which batch), for batches, for the loss of a batch, and for evaluation metrics.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/batch.h"
#include "io/config.h"

namespace zoo {

using Metrics = std::map<std::string, double>;

/// What the trainer tells a task about the run: handed over when the task is built (from
/// the config's train section) and again by the trainer once the device and the precision
/// are resolved. Tasks read nothing else of the train section.
struct TaskContext {
  int64_t seed = 42;                  ///< train.seed (the global RNG is seeded by make_task)
  double label_smoothing = 0.0;       ///< train.label_smoothing_factor: training losses only
  double r_drop_alpha = 0.0;          ///< train.r_drop_alpha: training losses only (r_drop_loss)
  torch::Device device{torch::kCPU};  ///< where the model and the batches are
  std::string precision = "fp32";     ///< "fp32", "bf16" or "fp16" (autocast is the trainer's)
  /// False on the processes of a data-parallel run other than rank 0: they prepare their
  /// data after rank 0 and must only read what it wrote in the output directory.
  bool primary = true;
};

/// The loss of one batch: `total` drives backward; `parts` (e.g. "mlm", "nsp") are shown
/// beside it on the console, in metrics.jsonl and in TensorBoard. Every value is a mean over
/// the batch's examples, so slices of a batch combine by example weights.
struct Loss {
  Loss(torch::Tensor total = {}, std::map<std::string, torch::Tensor> parts = {})  // NOLINT: a tensor is a loss
      : total(std::move(total)), parts(std::move(parts)) {}
  torch::Tensor total;
  std::map<std::string, torch::Tensor> parts;
};

/// A Loss as numbers (after .item()), e.g. a training step's mean over its micro-batches.
struct LossValues {
  double total = 0;
  std::map<std::string, double> parts;
};

class Task {
 public:
  virtual ~Task() = default;

  /// The model being trained; its registered names are its checkpoint format.
  virtual std::shared_ptr<torch::nn::Module> model() = 0;

  /// Loads the training data (and validation split). Called once before training, so that
  /// bad data paths fail before any model work. `output_dir` is where the run writes;
  /// tasks may record their data split there.
  virtual void prepare_training(const std::string& output_dir) = 0;
  /// Number of training examples (after prepare_training()).
  virtual int64_t num_train_examples() const = 0;
  /// Which training examples form each batch of `epoch`; deterministic in (seed, epoch).
  /// The default: a seeded permutation cut into batches (the last one may be short).
  virtual std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const;
  /// Builds a training batch on the CPU. Must be thread-safe and deterministic given
  /// (indices, seed): it runs on the background loader thread, never touching global RNGs.
  virtual Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const = 0;
  /// Loss of one batch (already on the model's device); the trainer has put the model in
  /// training mode.
  virtual Loss loss(const Batch& batch) = 0;
  /// True when loss() may run on slices of a batch at the same time from several threads
  /// and the batch's loss is the mean of the slices' losses weighted by loss_terms() (every
  /// tensor batch-first, no random draws in the forward pass but models::apply_dropout's, no
  /// state changed by loss()). The
  /// trainer then gives each CPU core its own slice (see Trainer). Default: no.
  virtual bool splittable() const { return false; }
  /// How many terms loss() of `batch` is a mean over. Default: its examples.
  virtual double loss_terms(const Batch& batch) const { return static_cast<double>(batch.size); }
  /// True when loss() is a function of the batch's tensors alone, computed on the device
  /// without reading anything back (no .item(), no host-side choice per batch, no use of
  /// Batch::seed), so that train.cuda_graphs may capture it once and replay it. Default: no.
  virtual bool graphable() const { return false; }

  /// Evaluation is one loop, the trainer's (zoo::evaluation_sums), over what the task gives:
  /// the batches of a split ("valid" during training, "valid"/"test" from `zoo eval`), each a
  /// list of the split's example numbers, deterministic (the task loads the split here);
  virtual std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) = 0;
  /// the batch of those examples, on the CPU (the loop sets Batch::examples);
  virtual Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const = 0;
  /// the sums behind the metrics for one batch on the model's device (loss sums, counts,
  /// n-gram statistics), which add up over batches and over data-parallel processes;
  virtual Metrics eval_sums(const std::string& split, const Batch& batch) = 0;
  /// and the metrics of a split's sums, always including "loss".
  virtual Metrics metrics_from_sums(const Metrics& sums) const { return sums; }
  /// Classification tasks: the scores (B, classes) whose softmax is each example's predicted
  /// distribution, as eval_sums scores them (test-time views included); undefined for the
  /// tasks without classes (evaluate_ensemble refuses them).
  virtual torch::Tensor eval_logits(const std::string& /*split*/, const Batch& /*batch*/) { return {}; }
  /// Tasks that decode their predictions (translation): from now on evaluates as the ensemble
  /// of this task's model and the `others`' (models::EncoderDecoderEnsemble: the mean of their
  /// next-token distributions at every step, and of their teacher-forced ones for the loss),
  /// after checking that the others were trained on the same split with the same tokenizers
  /// (zoo::Error naming the member: `names`, one per other). False, changing nothing: the
  /// task's ensembles average final predictions instead (evaluate_ensemble).
  virtual bool decode_as_ensemble(const std::vector<Task*>& /*others*/, const std::vector<std::string>& /*names*/) {
    return false;
  }
  /// The split `zoo eval` evaluates when none is given.
  virtual std::string default_eval_split() const { return "test"; }
  /// The metric used to keep the best checkpoint when the config does not name one.
  virtual std::string default_best_metric() const { return "loss"; }

  /// Files beside model.safetensors that the model needs at inference (vocabularies).
  virtual void save_assets(const std::string& /*dir*/) const {}
  /// The trainer's context (see TaskContext).
  void set_context(const TaskContext& context) { context_ = context; }
  const TaskContext& context() const { return context_; }

  /// The resolved config this task was built from (tasks may complete it, e.g. with
  /// vocabulary sizes); it is what the trainer writes to OUT/config.json and checkpoints.
  const json& config() const { return config_; }

 protected:
  json config_;
  TaskContext context_;
};

/// Training evaluates on the valid split (train.eval_steps, the best checkpoint, the last
/// step), so a data section that holds nothing out is refused before the first step: unless
/// `holds_out`, throws a zoo::Error naming data.KEY=`value` and `fix` ("1 or more").
void require_validation_split(bool holds_out, const std::string& key, const json& value, const std::string& fix);

/// Throws (a bug, not user input) unless make_eval_batch() is asked for the split that
/// eval_plan() loaded last.
void check_eval_split(const std::string& loaded, const std::string& asked);

/// The sums of task.eval_sums() over the batches of `split` that are this process's (`shard`
/// of `shards`: every shards-th batch of the plan, from the shard-th), with the model in eval
/// mode and gradients off, and under bf16 (fp16) autocast when `precision` is "bf16" ("fp16";
/// the resolved train.precision: the forward passes then run as in training); the model's mode
/// is restored afterwards. Throws zoo::Error when the split has no examples.
Metrics evaluation_sums(Task& task, const std::string& split, int64_t batch_size, const torch::Device& device,
                        int64_t shard = 0, int64_t shards = 1, const std::string& precision = "fp32");

/// The metrics of a whole split on one process: task.metrics_from_sums(evaluation_sums(...)).
Metrics evaluate(Task& task, const std::string& split, int64_t batch_size, const torch::Device& device,
                 const std::string& precision = "fp32");

/// An ensemble's metrics on `split`: the mean of its members' predicted distributions
/// (Task::eval_logits) scored as one classifier: accuracy, and the loss, the negative log of the
/// mean probability of the true class. Every member evaluates the same examples, batched as the
/// first member's plan, each through its own batch (its own tokenizer or normalisation), in eval
/// mode under `precision` as evaluate(). Throws zoo::Error, naming the member (`names`, one per
/// member), when one has no classes, or their labels or class counts differ.
Metrics evaluate_ensemble(const std::vector<Task*>& members, const std::vector<std::string>& names,
                          const std::string& split, int64_t batch_size, const torch::Device& device,
                          const std::string& precision = "fp32");

}  // namespace zoo
