#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "models/recompute.h"
#include "train/batch_stream.h"
#include "io/checkpoint.h"
#include "train/graphed_step.h"
#include "train/logging.h"
#include "io/adapters.h"
#include "train/memory.h"
#include "train/memory_budget.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {

// " (train.precision=auto)", with why where the CPU's products were measured.
std::string auto_note(const torch::Device& device) {
  const std::string why = auto_precision_note(device);
  return cat(" (train.precision=auto", why.empty() ? "" : ": " + why, ")");
}

bool improved(double value, double best, bool greater) { return greater ? value > best : value < best; }

}  // namespace

Trainer::Trainer(Task& task, TrainerArgs args) : task_(task), args_(std::move(args)) {
  o_ = read_options<TrainOptions>(args_.config.at("train"), "train");
  if (o_.average_checkpoints > 0 && o_.save_total_limit > 0 && o_.save_total_limit < o_.average_checkpoints)
    throw Error(cat("config: train.average_checkpoints=", o_.average_checkpoints, " needs that many checkpoints, but "
                    "train.save_total_limit=", o_.save_total_limit, " keeps fewer; set train.save_total_limit to 0 "
                    "(all) or at least ", o_.average_checkpoints));
  if (o_.average_checkpoints > 0 && !args_.config.at("train").value("lora", json()).is_null())
    throw Error("config: train.average_checkpoints averages whole models, not LoRA adapters; drop one of the two");
  choose_precision();
  prepare_data();
  // The task's resolved config (it may add what it learnt from the data, e.g. vocabulary
  // sizes) is the one that rebuilds the model from a checkpoint.
  config_ = task_.config().is_null() ? args_.config : task_.config();
  model_ = task_.model();
  setup_weights();  // may add the options of an --init-from adapter to config_
  model_->to(args_.device);
  optimizer_ = make_optimizer(*model_, o_);
  for (auto& group : optimizer_->param_groups())  // each group's share of the schedule's rate
    lr_shares_.push_back(o_.learning_rate > 0 ? group.options().get_lr() / o_.learning_rate : 1.0);
  plan_schedule();
  if (precision_ == "fp16") scaler_.emplace();
  if (!args_.resume_from.empty()) restore(args_.resume_from);
  if (args_.collective) {
    // Rank 0 draws what a single process draws; the others their own dropout.
    if (args_.resume_from.empty() && rank() > 0) torch::manual_seed(static_cast<uint64_t>(o_.seed) + rank());
    args_.collective->attach(*model_);
  }
  if (o_.ema_decay > 0 && !average_) average_.emplace(*model_, o_.ema_decay);
  if (o_.gradient_checkpointing) enable_gradient_checkpointing();
  prepare_step();
  // Only now, with everything checked: a command that fails leaves the run's record as it was.
  if (writer()) write_json_file((fs::path(args_.output_dir) / "config.json").string(), config_);
}

void Trainer::choose_precision() {
  // "auto" in a data-parallel run is rank 0's choice, so only rank 0 measures the CPU (and
  // measures it alone: the other processes wait in agree_on_precision's collective call).
  const bool shared_auto = o_.precision == "auto" && args_.collective;
  if (!shared_auto || args_.collective->rank() == 0) precision_ = resolve_precision(o_.precision, args_.device);
  if (shared_auto) precision_ = agree_on_precision(precision_, *args_.collective, args_.device);
  TaskContext context = task_.context();
  context.device = args_.device;
  context.precision = precision_;
  task_.set_context(context);
}

void Trainer::prepare_data() {
  if (writer()) {
    std::error_code ec;
    fs::create_directories(args_.output_dir, ec);
    if (ec) throw Error(cat(args_.output_dir, ": cannot create output directory: ", ec.message()));
  }
  if (!args_.collective) return task_.prepare_training(writer() ? args_.output_dir : "");
  // Rank 0 first (it may tokenise into the output directory), then the others read.
  std::vector<double> barrier{1};
  if (rank() == 0) task_.prepare_training(args_.output_dir);
  args_.collective->sum(barrier);
  if (rank() > 0) {
    TaskContext context = task_.context();
    context.primary = false;
    task_.set_context(context);
    task_.prepare_training(args_.output_dir);
  }
}

void Trainer::plan_schedule() {
  micro_batches_ =
      static_cast<int64_t>(task_.epoch_plan(o_.seed, 0, o_.per_device_train_batch_size * world()).size());
  steps_per_epoch_ = std::max<int64_t>(1, micro_batches_ / o_.gradient_accumulation_steps);
  total_steps_ = o_.max_steps > 0 ? o_.max_steps : static_cast<int64_t>(std::ceil(o_.num_train_epochs * steps_per_epoch_));
  if (total_steps_ <= 0)
    throw Error(cat("nothing to train: train.max_steps is 0 and train.num_train_epochs (", o_.num_train_epochs,
                    ") makes 0 steps of ", steps_per_epoch_, " per epoch; set train.max_steps or train.num_train_epochs"));
  if (o_.max_time > 0 && world() > 1)
    throw Error(cat("config: train.max_time runs on one process (each would measure its own speed); train with one "
                    "process, or set train.max_time=0 (train.max_steps or train.num_train_epochs then count the steps)"));
  warmup_ = o_.warmup_steps > 0 ? o_.warmup_steps : static_cast<int64_t>(std::ceil(o_.warmup_ratio * total_steps_));
  best_metric_ = o_.metric_for_best_model.empty() ? task_.default_best_metric() : o_.metric_for_best_model;
  greater_ = o_.metric_for_best_model.empty() ? best_metric_ != "loss" : o_.greater_is_better;
  state_.best_value = greater_ ? -INFINITY : INFINITY;
}

void Trainer::prepare_step() {
  // One batch slice per core on the CPU (see forward_backward); not with recomputed blocks,
  // whose backward adds to the parameters' gradients from each slice's thread.
  shards_ = args_.device.is_cpu() && task_.splittable() && !o_.gradient_checkpointing ? at::get_num_threads() : 1;
  params_.clear();
  for (const auto& p : model_->parameters())
    if (p.requires_grad()) params_.push_back(p);
  if (!o_.cuda_graphs) return;
  if (scaler_)
    throw Error("train.cuda_graphs does not run with train.precision=fp16 (loss scaling decides on the host "
                "whether to skip each step); use train.precision=bf16");
  const std::string why = cuda_graphs_refusal(args_.device, task_, *optimizer_, o_.gradient_accumulation_steps,
                                              args_.collective != nullptr || args_.hooks.after_backward != nullptr);
  if (!why.empty()) throw Error(why);
  graphed_ = std::make_unique<GraphedTrainStep>(task_, static_cast<ThreadedAdamW&>(*optimizer_), params_,
                                                precision_ != "fp32", args_.device, o_.max_grad_norm);
}

Trainer::~Trainer() = default;

void Trainer::enable_gradient_checkpointing() {
  if (o_.cuda_graphs)
    throw Error("train.gradient_checkpointing does not run with train.cuda_graphs (its backward reruns blocks "
                "outside the captured graph); choose one");
  if (models::set_gradient_checkpointing(*model_, true) == 0)
    throw Error(cat("train.gradient_checkpointing: this model (", model_type(), ") has no blocks to recompute; it runs "
                    "for GPT, BERT, ViT and the Transformer"));
}

// The starting weights: a pretrained model (train.init_from), or a PEFT adapter directory
// on its base; then the LoRA adapters of train.lora (the base frozen).
void Trainer::setup_weights() {
  lora_ = lora_options(config_);
  std::string from = args_.resume_from.empty() ? model_dir(o_.init_from) : "";
  std::string adapter_dir;
  if (!from.empty() && is_adapter_dir(from)) {
    adapter_dir = from;
    auto options = read_adapter_config(adapter_dir, &from);  // from: the adapter's base
    if (from.empty())
      throw Error(cat(adapter_dir, "/", kAdapterConfig, ": no base_model_name_or_path; fine-tune its base with "
                      "--init-from BASE and train.lora instead"));
    if (options.modules_to_save.empty() && lora_) options.modules_to_save = lora_->modules_to_save;
    lora_ = options;
    config_["train"]["lora"] = to_json(options);
  }
  if (!from.empty()) init_from_pretrained(*model_, from, o_.init_from_key_map, model_type());
  if (!lora_) return;
  if (from.empty() && args_.resume_from.empty() && writer())
    std::cerr << "zoo: warning: train.lora without train.init_from: the adapters train on a frozen, randomly "
                 "initialised model; give the pretrained model with --init-from DIR" << std::endl;
  try {
    attach_lora(*model_, *lora_);
  } catch (const Error& e) {  // the options of an --init-from adapter are its file's
    throw Error(adapter_dir.empty() ? std::string(e.what()) : cat(adapter_dir, "/", kAdapterConfig, ": ", e.what()));
  }
  if (!adapter_dir.empty()) load_adapter(*model_, adapter_dir, *lora_);
  adapter_base_ = adapter_dir.empty() ? o_.init_from : from;
}

bool Trainer::evaluate(Metrics* metrics) {
  {
    AveragedWeights averaged(average_ ? &*average_ : nullptr);
    *metrics = evaluate_split("valid");
  }
  if (log_) log_->log_eval(state_.step, "valid", json(*metrics));
  result_.final_metrics = *metrics;
  auto it = metrics->find(best_metric_);
  if (it == metrics->end()) {
    std::vector<std::string> names;
    for (auto& kv : *metrics) names.push_back(kv.first);
    throw Error(cat("config: train.metric_for_best_model '", best_metric_,
                    "' is not reported by this task; it reports: ", join(names)));
  }
  const bool better = improved(it->second, state_.best_value, greater_);
  if (better) state_.best_value = it->second, state_.evals_without_improvement = 0;
  else ++state_.evals_without_improvement;
  return better;
}

LossValues Trainer::accumulate_gradients(BatchStream& stream, int64_t* examples) {
  const bool autocast = precision_ != "fp32";
  const auto dtype = autocast_dtype(precision_);
  const torch::Device device = args_.device;
  // fp16: the loss times the scale, so that small gradients are not lost (unscaled in run()).
  const double scale = scaler_ ? scaler_->scale() : 1.0;
  LossValues step_loss;
  *examples = 0;
  for (int64_t micro = 0; micro < o_.gradient_accumulation_steps; ++micro) {
    auto item = stream.next();
    Batch batch = item.batch.to(device);
    if (args_.collective) args_.collective->prepare_backward(shards_ == 1 && micro + 1 == o_.gradient_accumulation_steps);
    const auto value = forward_backward(
        [&](const Batch& b) {
          AutocastGuard ac(autocast, device, dtype);  // the forward pass only, as PyTorch recommends
          return task_.loss(b);
        },
        batch, scale / static_cast<double>(o_.gradient_accumulation_steps), shards_, params_,
        [&](double v) { check_loss(v, micro); }, /*onednn=*/autocast && device.is_cpu(),
        [&](const Batch& b) { return task_.loss_terms(b); });
    const double share = 1.0 / static_cast<double>(o_.gradient_accumulation_steps);
    step_loss.total += value.total * share;
    for (const auto& [name, x] : value.parts) step_loss.parts[name] += x * share;
    *examples += batch.size;
    // Position of the next batch to consume: what a checkpoint must record.
    state_.epoch = item.epoch;
    state_.index = item.index + 1;
  }
  return step_loss;
}

void Trainer::check_loss(double value, int64_t micro_batch) const {
  if (std::isfinite(value)) return;
  const std::string last = latest_checkpoint(args_.output_dir);
  throw Error(cat("loss is ", value, " at step ", state_.step + 1, " (micro-batch ", micro_batch + 1, "); stopping. ",
                  last.empty() ? std::string("No checkpoint was written yet.")
                               : cat("The last good checkpoint is ", last, "."),
                  " Try a lower train.learning_rate or train.max_grad_norm."));
}

LossValues Trainer::graphed_step(BatchStream& stream, int64_t* examples, double* grad_norm) {
  auto item = stream.next();
  const Batch batch = item.batch.to(args_.device);
  // The graph updates the weights before the loss is read back: a non-finite loss stops the
  // run after its step, and the checkpoints on disk are the good ones.
  const LossValues loss = graphed_->run(batch, grad_norm);
  check_loss(loss.total, 0);
  *examples = batch.size;
  state_.epoch = item.epoch;
  state_.index = item.index + 1;
  return loss;
}

void Trainer::log_step(const LossValues& loss, double lr, double grad_norm, int64_t examples) {
  window_.loss.total += loss.total;
  for (const auto& [name, x] : loss.parts) window_.loss.parts[name] += x;
  window_.examples += static_cast<double>(examples);
  ++window_.steps;
  if (args_.hooks.on_step) args_.hooks.on_step(state_.step, total_steps_, loss.total);
  if (!log_) return;
  const auto now = std::chrono::steady_clock::now();
  const double window_s = std::chrono::duration<double>(now - window_.start).count();
  log_->progress(state_.step, loss.total, lr, window_s > 0 ? window_.steps / window_s : 0);
  if (state_.step % o_.logging_steps != 0 && state_.step != total_steps_) return;
  const double n = static_cast<double>(window_.steps);
  json values = {{"loss", window_.loss.total / n},
                 {"lr", lr},
                 {"epoch", epoch_progress()},
                 {"examples_per_second", window_.examples / std::max(window_s, 1e-9)},
                 {"elapsed_seconds", std::chrono::duration<double>(now - start_).count()}};
  for (const auto& [name, x] : window_.loss.parts) values["loss_" + name] = x / n;
  if (std::isfinite(grad_norm)) values["grad_norm"] = grad_norm;
  if (scaler_) values["loss_scale"] = scaler_->scale();
  const MemoryPeaks peaks = memory_peaks(args_.device);
  values["peak_rss_mib"] = std::round(peaks.rss_mib);
  if (peaks.cuda_allocated_mib >= 0) values["cuda_peak_allocated_mib"] = std::round(peaks.cuda_allocated_mib);
  log_->log_train(state_.step, values);
  window_ = Window{};
  window_.start = std::chrono::steady_clock::now();
}

// " (estimated 1.5 GiB, set by the training step)" beside the measured peak; "" for a model the
// budget does not know.
std::string Trainer::estimate_note() const {
  try {
    return cat(" (estimated ", peak_estimate(config_), ")");
  } catch (const std::exception&) {
    return "";
  }
}

std::string Trainer::plan_line() const {
  return cat("training ", total_steps_, " steps (", steps_per_epoch_, " per epoch, batch ", o_.per_device_train_batch_size,
             "x", o_.gradient_accumulation_steps,
             world() > 1 ? cat("x", world(), " processes (", args_.collective->backend(), ") = ",
                               o_.per_device_train_batch_size * o_.gradient_accumulation_steps * world())
                         : std::string(),
             shards_ > 1 ? cat(", cut into ", shards_, " slices, one per core") : std::string(),
             ") on ", args_.device.str(), ", ", precision_, o_.precision == "auto" ? auto_note(args_.device) : "",
             args_.resume_from.empty() ? std::string()
                                       : cat(", resuming from ", args_.resume_from, " at step ", state_.step),
             o_.max_time > 0 ? cat("; train.max_time ", format_duration(o_.max_time),
                                   ": the step count is a first estimate, the schedule follows the clock")
                             : std::string());
}

Trainer::StepOutcome Trainer::optimizer_step(BatchStream& stream) {
  StepOutcome out;
  if (graphed_) {
    out.loss = graphed_step(stream, &out.examples, &out.grad_norm);
    out.interrupted = stop_requested().load();
    return out;
  }
  optimizer_->zero_grad();
  out.loss = accumulate_gradients(stream, &out.examples);
  if (args_.collective) args_.collective->average_gradients();
  if (args_.hooks.after_backward) args_.hooks.after_backward(params_);
  out.interrupted = reduce_step(&out.loss, &out.examples, stop_requested().load());
  // fp16: the gradients back to their true size before clipping; a step with inf/NaN ones is
  // skipped (its loss still logged), and the scale follows (train/grad_scaler.h).
  const bool skip = scaler_ && scaler_->unscale(params_);
  if (!skip && o_.max_grad_norm > 0) out.grad_norm = clip_grad_norm(params_, o_.max_grad_norm);
  if (!skip) optimizer_->step();
  if (scaler_) scaler_->update(skip);
  return out;
}

bool Trainer::evaluate_save_or_stop(bool interrupted) {
  const bool last = state_.step == total_steps_;
  const bool do_eval = !interrupted && (last || (o_.eval_steps > 0 && state_.step % o_.eval_steps == 0));
  bool do_save = last || interrupted || (o_.save_steps > 0 && state_.step % o_.save_steps == 0);
  bool stop_early = false;
  Metrics metrics;
  if (do_eval) {
    if (evaluate(&metrics)) {
      do_save = true;  // keep-best needs the weights on disk
      state_.best_checkpoint = (fs::path(args_.output_dir) / checkpoint_dir_name(state_.step)).string();
    }
    if (o_.early_stopping_patience > 0 && state_.evals_without_improvement >= o_.early_stopping_patience)
      stop_early = do_save = true;
  }
  if (do_save) save(do_eval ? &metrics : nullptr);
  if (interrupted) {
    if (log_)
      log_->message(cat("interrupted at step ", state_.step, "; checkpoint saved to ", result_.last_checkpoint,
                        ". Resume with: zoo train --config ",
                        args_.config_source.empty() ? "CONFIG" : args_.config_source, " --output-dir ",
                        args_.output_dir, " --resume"));
    result_.interrupted = true;
  } else if (stop_early) {
    if (log_)
      log_->message(cat("early stopping at step ", state_.step, ": no improvement of ", best_metric_, " in ",
                        o_.early_stopping_patience, " evaluations"));
    result_.early_stopped = true;
  }
  return interrupted || stop_early;
}

std::string Trainer::done_line() const {
  const MemoryPeaks peaks = memory_peaks(args_.device);
  return cat("done: ", state_.step, " steps in ",
             format_duration(std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count()),
             "; peak memory ", std::lround(peaks.rss_mib), " MiB resident",
             peaks.cuda_allocated_mib >= 0 ? cat(", ", std::lround(peaks.cuda_allocated_mib), " MiB CUDA allocated")
                                           : std::string(),
             estimate_note(), "; last checkpoint ", result_.last_checkpoint,
             state_.best_checkpoint.empty()
                 ? std::string()
                 : cat("; best (", best_metric_, "=", state_.best_value, ") ", state_.best_checkpoint));
}

double Trainer::train_seconds() const {
  return state_.train_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Trainer::follow_time_budget() {
  const double here = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double spent = state_.train_seconds + here;
  const int64_t done_here = state_.step - start_step_;
  int64_t total = total_steps_;
  if (spent >= o_.max_time) {
    total = state_.step + 1;
  } else if (done_here >= 10 && here > 0) {  // the first steps (allocation, warm caches) are no measure
    const double steps_per_second = static_cast<double>(done_here) / here;
    total = state_.step + 1 + static_cast<int64_t>((o_.max_time - spent) * steps_per_second);
  } else {
    total = std::max(total_steps_, state_.step + 2);  // time is left: this step is not the last
  }
  if (total == total_steps_) return;
  total_steps_ = total;
  if (log_) log_->set_total(total_steps_);
}

TrainResult Trainer::run() {
  if (writer()) log_ = std::make_unique<TrainLogger>(args_.output_dir, total_steps_, o_.report_to_tensorboard);
  if (log_) log_->message(plan_line());  // only the writer's log, which alone measures the CPU for its note
  BatchStream stream(task_, static_cast<uint64_t>(o_.seed), o_.per_device_train_batch_size, state_.epoch,
                     state_.index, o_.dataloader_prefetch, rank(), world());
  model_->train();
  start_ = window_.start = std::chrono::steady_clock::now();
  start_step_ = state_.step;
  while (state_.step < total_steps_) {
    if (o_.max_time > 0) follow_time_budget();
    const double lr = o_.learning_rate * lr_factor(o_.lr_scheduler_type, state_.step, warmup_, total_steps_, o_.min_lr_rate);
    auto& groups = optimizer_->param_groups();
    for (size_t g = 0; g < groups.size(); ++g) groups[g].options().set_lr(lr * lr_shares_[g]);
    const StepOutcome step = optimizer_step(stream);
    ++state_.step;
    if (average_) average_->update(state_.step);
    state_.examples_seen += static_cast<double>(step.examples);
    log_step(step.loss, lr, step.grad_norm, step.examples);
    if (evaluate_save_or_stop(step.interrupted)) break;
  }
  if (args_.collective) check_replicas_agree();
  if (!result_.interrupted && o_.average_checkpoints > 0) average_newest_checkpoints();
  if (log_) log_->flush();
  result_.global_step = state_.step;
  result_.best_checkpoint = state_.best_checkpoint;
  if (!result_.interrupted && log_) log_->message(done_line());
  return result_;
}

TrainResult train(Task& task, const TrainerArgs& args) {
  Trainer trainer(task, args);
  return trainer.run();
}

}  // namespace zoo
