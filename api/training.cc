#include "api/training.h"

#include <cmath>
#include <filesystem>

#include "io/adapters.h"
#include "io/checkpoint.h"
#include "models/generation.h"
#include "models/quantize.h"
#include "train/device.h"
#include "train/distributed.h"
#include "train/launch_env.h"
#include "train/memory_budget.h"
#include "train/precision.h"
#include "train/task_registry.h"

namespace fs = std::filesystem;

namespace zoo::api {

namespace {
// The checkpoint a resume continues: the one named, or the newest in `out`.
std::string resume_target(const TrainRequest& r, const std::string& out) {
  if (!r.resume) return "";
  if (r.resume_from.empty() || r.resume_from == "latest") {
    const std::string latest = latest_checkpoint(out);
    if (latest.empty())
      throw Error(cat("--resume: no checkpoint in ", out, " (looked for ", out, "/checkpoint-N/trainer_state.json)"));
    return latest;
  }
  const std::string dir = checked_checkpoint_dir(r.resume_from);
  if (!fs::exists(fs::path(dir) / "trainer_state.json"))
    throw Error(cat("--resume ", r.resume_from, ": not a training checkpoint (no trainer_state.json)"));
  return dir;
}
}  // namespace

TrainResult run_training(const TrainRequest& r) {
  if (r.config_file.empty()) throw Error("zoo train needs --config FILE.json (see tools/recipes/; --help-config lists the keys)");
  json raw = read_json_file(r.config_file);
  if (!raw.is_object()) throw Error(cat(r.config_file, ": the config must be a JSON object"));
  for (const auto& s : r.overrides) apply_override(raw, s);
  if (!r.init_from.empty()) apply_override(raw, "train.init_from=" + json(r.init_from).dump());
  const std::string out =
      r.output_dir.empty() ? (fs::path("runs") / fs::path(r.config_file).stem()).string() : r.output_dir;
  const std::string resume_from = resume_target(r, out);
  const json config = resolve_training_config(raw, r.config_file, r.overrides, resume_from);
  // A data-parallel launch: one process per rank, each on its own GPU (cuda:LOCAL_RANK) when
  // there are GPUs. A world of one forms a process group only when train.ddp_backend names one.
  const auto options = read_options<TrainOptions>(config.at("train"), "train");
  const auto launch = r.data_parallel ? detect_launch({}, options.ddp_backend != "auto") : std::nullopt;
  torch::Device device = resolve_device(r.device);
  if (launch && device.is_cuda() && !device.has_index()) device = torch::Device(torch::kCUDA, launch->local_rank);
  lora_options(config);  // train.lora's keys and targets are checked before the data is read
  if (options.check_memory)
    check_memory_budget(estimate_training_memory(config), device, cat(r.config_file, ": this run"));
  if (!r.resume && !latest_checkpoint(out).empty())
    throw Error(cat(out, " already holds checkpoints; continue it with --resume, or choose another --output-dir"));
  std::unique_ptr<Collective> collective;
  if (launch) collective = connect_processes(*launch, device, {options.ddp_backend, options.ddp_timeout, options.ddp_bucket_cap_mb});
  auto task = make_task(config);
  TrainerArgs args{config, r.config_source.empty() ? r.config_file : r.config_source, out, device, resume_from};
  args.collective = collective.get();
  if (r.progress)
    args.hooks.on_step = [&r](int64_t step, int64_t total, double loss) { r.progress({step, total, loss}); };
  return train(*task, args);
}

json train_result_json(const TrainResult& result) {
  json j = {{"steps", result.global_step},       {"last_checkpoint", result.last_checkpoint},
            {"best_checkpoint", result.best_checkpoint}, {"interrupted", result.interrupted},
            {"early_stopped", result.early_stopped},   {"eval", json(result.final_metrics)}};
  if (!result.averaged_checkpoint.empty()) {
    j["averaged_checkpoint"] = result.averaged_checkpoint;
    j["averaged_eval"] = json(result.averaged_metrics);
  }
  return j;
}

namespace {
// A NaN or infinite loss (finite but huge weights overflow float32 at run time) is an error
// naming the checkpoint, not "loss": null.
void check_finite_losses(const Metrics& metrics, const std::string& checkpoint, const std::string& split) {
  for (const auto& [key, value] : metrics)
    if (key.rfind("loss", 0) == 0 && !std::isfinite(value))
      throw Error(cat(checkpoint, ": the ", key, " on the ", split, " split is ", std::isnan(value) ? "NaN" : "infinite",
                      ": the weights overflow float32 at run time (finite but huge values) or are damaged; use "
                      "another checkpoint"));
}
}  // namespace

json evaluation_json(const std::string& checkpoint_dir, const std::string& split, const torch::Device& device,
                     const std::vector<std::string>& overrides, const std::string& quantize,
                     const std::vector<std::string>& ensemble) {
  models::check_quantize(quantize, device);
  auto task = load_task(checkpoint_dir, overrides, device);
  models::quantize_model(*task->model(), quantize);
  std::vector<std::unique_ptr<Task>> others;  // the ensemble's other members
  for (const auto& dir : ensemble) {
    others.push_back(load_task(checked_checkpoint_dir(dir), overrides, device));
    models::quantize_model(*others.back()->model(), quantize);
  }
  const auto train = read_options<TrainOptions>(task->config().at("train"), "train");
  const std::string which = split.empty() ? task->default_eval_split() : split;
  // int8 layers compute in fp32 around their integer products: no autocast with them.
  const std::string precision = quantize.empty() ? evaluation_precision(train.precision, device) : "fp32";
  Metrics m;
  try {
    std::vector<Task*> rest;
    for (auto& other : others) rest.push_back(other.get());
    if (others.empty() || task->decode_as_ensemble(rest, ensemble)) {
      m = evaluate(*task, which, train.per_device_eval_batch_size, device, precision);
    } else {
      std::vector<Task*> members = {task.get()};
      members.insert(members.end(), rest.begin(), rest.end());
      std::vector<std::string> names = {checkpoint_dir};
      names.insert(names.end(), ensemble.begin(), ensemble.end());
      m = evaluate_ensemble(members, names, which, train.per_device_eval_batch_size, device, precision);
    }
  } catch (const models::NonFiniteOutput& e) {  // a translation's decoding for BLEU
    throw Error(cat(checkpoint_dir, ": ", e.what()));
  }
  check_finite_losses(m, checkpoint_dir, which);
  json out(m);
  if (!others.empty()) out["ensemble"] = static_cast<int64_t>(others.size() + 1);
  if (out.contains("examples")) out["examples"] = static_cast<int64_t>(m.at("examples"));
  out["split"] = which;
  out["precision"] = precision;
  if (!quantize.empty()) out["quantize"] = quantize;
  return out;
}

}  // namespace zoo::api

namespace zoo {

std::string train(const std::string& config_file, const std::string& output_dir,
                  const std::vector<std::string>& overrides, const ProgressCallback& progress) {
  api::TrainRequest request;
  request.config_file = config_file;
  request.output_dir = output_dir;
  request.overrides = overrides;
  request.progress = progress;
  return api::train_result_json(api::run_training(request)).dump();
}

std::string evaluate(const std::string& checkpoint_dir, const std::string& split, torch::Device device,
                     const LoadOptions& load) {
  return api::evaluation_json(checked_checkpoint_dir(checkpoint_dir), split, device, {}, load.quantize).dump();
}

}  // namespace zoo
