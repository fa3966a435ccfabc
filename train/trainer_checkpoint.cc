// The trainer's checkpoints: what save() writes beside the weights (optimizer, random-number
// states, trainer_state.json, the task's assets) and how restore() resumes from them exactly.
#include "train/trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <optional>

#include "core/hash.h"
#include "io/adapters.h"
#include "io/checkpoint.h"
#include "io/checkpoint_average.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {

// With train.ema_decay a checkpoint's model.safetensors holds the average (what evaluation,
// keep-best and deployment use) and this file the weights being trained (for resume).
constexpr const char* kTrainingWeights = "training_weights.safetensors";

torch::Tensor bytes_tensor(const std::string& s) {
  auto t = torch::empty({static_cast<int64_t>(s.size())}, torch::kUInt8);
  std::memcpy(t.data_ptr(), s.data(), s.size());
  return t;
}

json rng_state(const torch::Device& device) {
  json j;
  j["cpu"] = base64_encode(tensor_bytes(at::detail::getDefaultCPUGenerator().get_state()));
  if (device.is_cuda()) {
    auto gen = at::globalContext().defaultGenerator(device);
    j["cuda"] = base64_encode(tensor_bytes(gen.get_state()));
  }
  return j;
}

void restore_rng_state(const json& j, const torch::Device& device) {
  auto set = [](at::Generator gen, const std::string& b64) {  // copies share the generator
    std::lock_guard<std::mutex> lock(gen.mutex());
    gen.set_state(bytes_tensor(base64_decode(b64)));
  };
  if (j.contains("cpu")) set(at::detail::getDefaultCPUGenerator(), j["cpu"]);
  if (device.is_cuda() && j.contains("cuda")) set(at::globalContext().defaultGenerator(device), j["cuda"]);
}

// The train section of checkpoint `from`'s config.json: what its run was started with.
json saved_train(const std::string& from) {
  return read_json_file((fs::path(from) / "config.json").string()).value("train", json::object());
}

// A LoRA run's checkpoint holds its adapters (adapter_config.json) beside the frozen base; it
// resumes with train.lora only, and a run without adapters resumes without it.
void check_same_adapters(const std::string& from, bool lora) {
  const bool adapters = is_adapter_dir(from);
  if (adapters && !lora)
    throw Error(cat(from, " was trained with train.lora (it holds ", kAdapterConfig, "): resume with --set 'train.lora=",
                    saved_train(from).value("lora", json()).dump(), "'"));
  if (!adapters && lora)
    throw Error(cat(from, " was trained without train.lora (it holds no ", kAdapterConfig, "): resume with --set "
                    "train.lora=null, or fine-tune it with --init-from ", from, " into a new --output-dir"));
}

// trainer_state.json is an input like any other: what resume takes from it is range-checked,
// and an error names the file, the key and the fix.
struct StateFile {
  const json& st;
  std::string path;

  [[noreturn]] void bad(const char* key, const std::string& want) const {
    throw Error(cat(path, ": ", key, " ", st.contains(key) ? st[key].dump() : std::string("missing"), " is not ", want,
                    "; put back the trainer_state.json this checkpoint was saved with, or resume from another "
                    "checkpoint"));
  }
  // A count (steps, batches, evaluations): a whole number from 0 up; `fallback` when absent.
  int64_t count(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!st.contains(key) && fallback) return *fallback;
    const json& v = st.contains(key) ? st[key] : json();
    if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > uint64_t{INT64_MAX}) || v.get<int64_t>() < 0)
      bad(key, "a whole number of 0 or more");
    return v.get<int64_t>();
  }
  // A finite number, or `fallback` when absent or null (best_metric before any evaluation).
  double number(const char* key, double fallback) const {
    if (!st.contains(key) || st[key].is_null()) return fallback;
    if (!st[key].is_number() || !std::isfinite(st[key].get<double>())) bad(key, "a finite number or null");
    return st[key].get<double>();
  }
  // best_model_checkpoint: "" or checkpoint-N of the run, N at most global_step, taken in `run_dir` (the
  // directory that holds the resumed checkpoint, so that a moved run keeps its best and a path
  // elsewhere is never taken).
  std::string best_checkpoint(const std::string& run_dir, int64_t step) const {
    const json& v = st.contains("best_model_checkpoint") ? st["best_model_checkpoint"] : json("");
    if (!v.is_string()) bad("best_model_checkpoint", "a checkpoint directory of this run");
    if (v.get<std::string>().empty()) return "";
    const std::string name = fs::path(v.get<std::string>()).lexically_normal().filename().string();
    const std::string digits = name.rfind("checkpoint-", 0) == 0 ? name.substr(11) : "";
    const bool numbered = !digits.empty() && digits.size() <= 18 && digits.find_first_not_of("0123456789") == std::string::npos;
    if (!numbered || std::stoll(digits) < 1 || std::stoll(digits) > step)
      bad("best_model_checkpoint", cat("a checkpoint directory of this run (checkpoint-N, N from 1 to global_step ", step,
                                       ")"));
    return (fs::path(run_dir) / name).string();
  }
};

}  // namespace

// The model (and its average, and LoRA adapters) and the optimizer of checkpoint `from`.
void Trainer::restore_weights(const std::string& from) {
  const fs::path dir = from;
  check_same_adapters(from, lora_.has_value());
  load_model(*model_, (dir / "model.safetensors").string(), model_type());
  if (lora_) load_adapter(*model_, from, *lora_);
  // The checkpoint has an average exactly when it has the weights being trained beside it.
  const std::string live = (dir / kTrainingWeights).string();
  const bool averaged = fs::exists(live);
  if (o_.ema_decay > 0 && !averaged)
    throw Error(cat(from, " was trained without train.ema_decay, so it has no weight average to "
                    "continue: resume with --set train.ema_decay=0, or start a new run"));
  if (o_.ema_decay <= 0 && averaged) {
    const double saved = saved_train(from).value("ema_decay", 0.0);
    throw Error(cat(from, " was trained with train.ema_decay=", saved, " (its model.safetensors is the average, ",
                    live, " the weights being trained): resume with --set train.ema_decay=", saved));
  }
  if (averaged) {
    average_.emplace(*model_, o_.ema_decay);  // from model.safetensors
    load_model(*model_, live, model_type());
  }
  try {
    torch::load(*optimizer_, (dir / "optimizer.pt").string());
  } catch (const c10::Error& e) {
    throw Error(cat((dir / "optimizer.pt").string(), ": cannot load optimizer state (",
                    std::string(e.what_without_backtrace()).substr(0, 200),
                    "); resume with the run's train.optim, train.weight_decay_exclude and train.layer_lr_decay"));
  }
}

// Rank 0 warns when checkpoint `from`, saved by `saved_world` processes, had another global batch.
void Trainer::warn_if_global_batch_changed(const std::string& from, int64_t saved_world) const {
  if (saved_world == world() || rank() != 0) return;
  const json saved = saved_train(from);
  const int64_t before = saved.value("per_device_train_batch_size", int64_t{0}) *
                         saved.value("gradient_accumulation_steps", int64_t{1}) * saved_world;
  const int64_t now = o_.per_device_train_batch_size * o_.gradient_accumulation_steps * world();
  if (before != now)
    std::cerr << "zoo: warning: " << from << " was saved by " << saved_world << " process(es) with a global batch of "
              << before << "; this run has " << world() << " with a global batch of " << now
              << " (per_device_train_batch_size x gradient_accumulation_steps x processes), so its steps see "
              << (now < before ? "fewer" : "more") << " examples; set train.gradient_accumulation_steps or "
              << "train.per_device_train_batch_size to keep " << before << std::endl;
}

void Trainer::restore(const std::string& from) {
  const std::string path = (fs::path(from) / "trainer_state.json").string();
  const json st = read_json_file(path);
  if (!st.is_object()) throw Error(cat(path, ": not a JSON object; put back the trainer_state.json this checkpoint was saved with"));
  const StateFile file{st, path};
  state_.step = file.count("global_step");
  state_.epoch = file.count("epoch_index");
  state_.index = file.count("batch_in_epoch");
  state_.examples_seen = file.number("examples_seen", 0.0);
  if (state_.examples_seen < 0) file.bad("examples_seen", "a number of 0 or more");
  state_.train_seconds = file.number("train_seconds", 0.0);
  if (!(state_.train_seconds >= 0)) file.bad("train_seconds", "a number of seconds, 0 or more");
  state_.best_value = file.number("best_metric", state_.best_value);
  fs::path checkpoint = fs::path(from).lexically_normal();
  if (!checkpoint.has_filename()) checkpoint = checkpoint.parent_path();
  state_.best_checkpoint = file.best_checkpoint(checkpoint.parent_path().string(), state_.step);
  state_.evals_without_improvement = file.count("evals_without_improvement", 0);
  if (!st.contains("rng_state") || !st["rng_state"].is_object()) file.bad("rng_state", "an object");
  restore_weights(from);
  const json& per_rank = st.contains("rng_state_per_rank") ? st["rng_state_per_rank"] : json::array();
  if (rank() > 0 && per_rank.size() != static_cast<size_t>(world()))
    throw Error(cat(from, " was saved by ", std::max<size_t>(1, per_rank.size()), " process(es); this run has ",
                    world(), ": resume with the same number of processes"));
  warn_if_global_batch_changed(from, std::max<int64_t>(1, static_cast<int64_t>(per_rank.size())));
  restore_rng_state(rank() > 0 ? per_rank.at(rank()) : st.at("rng_state"), args_.device);
  if (scaler_ && st.contains("grad_scaler")) scaler_->load(st["grad_scaler"]);
  if (state_.step >= total_steps_)
    throw Error(cat(from, " is at step ", state_.step, ", the run's last step is ", total_steps_,
                    "; raise train.max_steps (--set train.max_steps=N) to train further"));
}

double Trainer::epoch_progress() const {
  return static_cast<double>(state_.epoch) + static_cast<double>(state_.index) / std::max<int64_t>(1, micro_batches_);
}

void Trainer::save(const Metrics* eval_metrics) {
  json per_rank = json::array();
  if (args_.collective)  // every process's random-number state, so that each resumes exactly
    for (const auto& bytes : args_.collective->gather(rng_state(args_.device).dump())) per_rank.push_back(json::parse(bytes));
  if (!writer()) return;
  WeightAverage* average = average_ ? &*average_ : nullptr;
  CheckpointWriter w(args_.output_dir, state_.step);
  write_json_file(w.path("config.json"), config_);
  if (average) save_model(*model_, w.path(kTrainingWeights), config_);
  {
    AveragedWeights averaged(average);
    save_model(*model_, w.path("model.safetensors"), config_);
  }
  if (lora_) save_adapter(*model_, w.tmp_dir(), *lora_, config_, adapter_base_);
  save_optimizer(*optimizer_, w.path("optimizer.pt"));
  const auto before_assets = file_names(w.tmp_dir());
  task_.save_assets(w.tmp_dir());
  json st = {{"global_step", state_.step},
             {"epoch", epoch_progress()},
             {"epoch_index", state_.epoch},
             {"batch_in_epoch", state_.index},
             {"max_steps", total_steps_},
             {"examples_seen", state_.examples_seen},
             {"train_seconds", train_seconds()},
             {"metric_for_best_model", best_metric_},
             {"best_metric", std::isfinite(state_.best_value) ? json(state_.best_value) : json(nullptr)},
             {"best_model_checkpoint", state_.best_checkpoint},
             {"evals_without_improvement", state_.evals_without_improvement},
             {"seed", o_.seed},
             {"rng_state", rng_state(args_.device)}};
  st["asset_fingerprints"] = asset_fingerprints(w.tmp_dir(), before_assets);
  if (args_.collective) st["rng_state_per_rank"] = per_rank;
  if (scaler_) st["grad_scaler"] = scaler_->state();
  if (eval_metrics) st["eval_metrics"] = *eval_metrics;
  write_json_file(w.path("trainer_state.json"), st);
  result_.last_checkpoint = w.commit();
  rotate_checkpoints(args_.output_dir, o_.save_total_limit, state_.best_checkpoint);
}

void Trainer::average_newest_checkpoints() {
  const std::string dir = (fs::path(args_.output_dir) / kAveragedCheckpoint).string();
  if (writer()) {
    const auto from = newest_checkpoints(args_.output_dir, o_.average_checkpoints);
    average_checkpoints(from, args_.output_dir);
    if (log_)
      log_->message(cat("averaged the weights of ", from.size(), " checkpoints (", fs::path(from.front()).filename().string(),
                        " to ", fs::path(from.back()).filename().string(), ") into ", dir));
  }
  if (args_.collective) {  // the others wait for the file
    std::vector<double> barrier{1};
    args_.collective->sum(barrier);
  }
  load_model(*model_, (fs::path(dir) / "model.safetensors").string(), model_type());
  average_.reset();  // the averaged weights are the ones to evaluate
  result_.averaged_checkpoint = dir;
  result_.averaged_metrics = evaluate_split("valid");
  if (log_) log_->log_eval(state_.step, "valid, checkpoint-averaged", json(result_.averaged_metrics), false);
}

std::string tensor_bytes(const torch::Tensor& t) {
  auto c = t.contiguous().to(torch::kCPU);
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

}  // namespace zoo
