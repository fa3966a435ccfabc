// zoo train --config FILE.json [--set section.key=value]... [--device D] [--output-dir DIR]
//           [--resume [CHECKPOINT_DIR]] [--init-from DIR]
// zoo train --help-config [TASK] [--config FILE.json]
#include <filesystem>
#include <iostream>

#include "tools/commands.h"
#include "io/checkpoint.h"
#include "train/device.h"
#include "train/distributed.h"
#include "train/launch_env.h"
#include "io/adapters.h"
#include "train/memory_budget.h"
#include "train/task_registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace zoo::cli {

namespace {

struct TrainCommand {
  std::string config;
  std::string init_from;
  std::string help_task;  // --help-config TASK
  bool help_config = false;
  std::vector<std::string> overrides;
  std::string device = "auto";
  std::string output_dir;
  std::string resume;  // "latest" when --resume has no value
  bool resume_set = false;
};

// `s` as one shell word: as is when it holds only characters no shell treats specially, else
// in single quotes.
std::string shell_word(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                                        "0123456789_.,:=/+-@%") == std::string::npos;
  if (plain) return s;
  std::string quoted = "'";
  for (char c : s) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

// What the resume hint repeats after --config: the file, the --set overrides and a --device
// other than auto, so that the resumed run has the same settings.
std::string config_source(const TrainCommand& a) {
  std::string s = shell_word(a.config);
  for (const auto& o : a.overrides) s += " --set " + shell_word(o);
  if (a.device != "auto") s += " --device " + shell_word(a.device);
  return s;
}

// Every key of a task's config, with its default and help: of TASK, else of the --config's
// task and model type, else of every task.
int run_help_config(const TrainCommand& a) {
  if (!a.help_task.empty()) {
    std::cout << describe_config(a.help_task);
    return 0;
  }
  if (!a.config.empty()) {
    json raw = read_json_file(a.config);
    for (const auto& s : a.overrides) apply_override(raw, s);
    const json config = resolve_config(raw, a.config);
    std::cout << describe_config(config.at("task"), config.at("model").at("model_type"));
    return 0;
  }
  for (const auto& entry : task_registry()) std::cout << describe_config(entry.name) << "\n";
  return 0;
}

// The checkpoint --resume continues ("" without --resume): the one named, or the newest in `out`.
std::string resume_target(const TrainCommand& a, const std::string& out) {
  if (!a.resume_set) return "";
  if (a.resume.empty() || a.resume == "latest") {
    const std::string latest = latest_checkpoint(out);
    if (latest.empty())
      throw Error(cat("--resume: no checkpoint in ", out, " (looked for ", out, "/checkpoint-N/trainer_state.json)"));
    return latest;
  }
  const std::string dir = checked_checkpoint_dir(a.resume);
  if (!fs::exists(fs::path(dir) / "trainer_state.json"))
    throw Error(cat("--resume ", a.resume, ": not a training checkpoint (no trainer_state.json)"));
  return dir;
}

int run_train(const TrainCommand& a) {
  if (a.help_config) return run_help_config(a);
  if (a.config.empty()) throw Error("zoo train needs --config FILE.json (see tools/recipes/; --help-config lists the keys)");
  // Everything is validated before any work: config, device, resume target, data paths.
  json raw = read_json_file(a.config);
  if (!raw.is_object()) throw Error(cat(a.config, ": the config must be a JSON object"));
  for (const auto& s : a.overrides) apply_override(raw, s);
  if (!a.init_from.empty()) apply_override(raw, "train.init_from=" + json(a.init_from).dump());
  const std::string out = a.output_dir.empty() ? (fs::path("runs") / fs::path(a.config).stem()).string() : a.output_dir;
  const std::string resume_from = resume_target(a, out);
  const json config = resolve_training_config(raw, a.config, a.overrides, resume_from);
  // A data-parallel launch (torchrun, tools/launch.sh, Slurm, mpirun): one process per rank,
  // each on its own GPU (cuda:LOCAL_RANK) when there are GPUs. A world of one forms a process
  // group only when train.ddp_backend names a backend (a check of that backend).
  const auto train_options = read_options<TrainOptions>(config.at("train"), "train");
  const auto launch = detect_launch({}, train_options.ddp_backend != "auto");
  torch::Device device = resolve_device(a.device);
  if (launch && device.is_cuda() && !device.has_index()) device = torch::Device(torch::kCUDA, launch->local_rank);
  lora_options(config);  // train.lora's keys and targets are checked before the data is read
  if (train_options.check_memory)
    check_memory_budget(estimate_training_memory(config), device, cat(a.config, ": this run"));
  if (!a.resume_set && !latest_checkpoint(out).empty())
    throw Error(cat(out, " already holds checkpoints; continue it with --resume, or choose another --output-dir"));

  std::unique_ptr<Collective> collective;
  if (launch) {
    const auto& t = train_options;
    collective = connect_processes(*launch, device, {t.ddp_backend, t.ddp_timeout, t.ddp_bucket_cap_mb});
  }
  auto task = make_task(config);
  install_stop_handlers();
  TrainerArgs args{config, config_source(a), out, device, resume_from};
  args.collective = collective.get();
  return train(*task, args).interrupted ? stop_exit_status() : 0;
}

}  // namespace

void setup_train(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<TrainCommand>();
  auto* cmd = app.add_subcommand("train", "Train a model from a JSON config");
  cmd->add_option("--config", a->config, "config file (see tools/recipes/)");
  cmd->add_option("--set", a->overrides, "override a config key: section.key=value (repeatable)");
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  cmd->add_option("--output-dir", a->output_dir, "where checkpoints and logs go (default runs/<config name>)");
  auto* resume = cmd->add_option("--resume", a->resume,
                                 "continue from CHECKPOINT_DIR, or from the newest checkpoint in --output-dir");
  resume->expected(0, 1);
  cmd->add_option("--init-from", a->init_from,
                  "fine-tune: start from the matching weights of a zoo checkpoint or Hugging Face directory "
                  "(train.init_from)");
  auto* help = cmd->add_option("--help-config", a->help_task,
                               "print every config key (default and help) of TASK, or of --config's task and model");
  help->expected(0, 1);
  cmd->callback([a, resume, help, exit_code] {
    a->resume_set = resume->count() > 0;
    a->help_config = help->count() > 0;
    *exit_code = run_train(*a);
  });
}

// zoo finetune --from DIR --config FILE: zoo train with train.init_from = DIR (the body from a
// pretrained checkpoint, a new head where the task's model has one).
void setup_finetune(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<TrainCommand>();
  auto* cmd = app.add_subcommand("finetune", "Fine-tune: zoo train starting from a pretrained checkpoint's weights");
  cmd->add_option("--from", a->init_from, "the pretrained zoo checkpoint or Hugging Face directory")->required();
  cmd->add_option("--config", a->config, "config file (see tools/recipes/)")->required();
  cmd->add_option("--set", a->overrides, "override a config key: section.key=value (repeatable)");
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  cmd->add_option("--output-dir", a->output_dir, "where checkpoints and logs go (default runs/<config name>)");
  cmd->callback([a, exit_code] { *exit_code = run_train(*a); });
}

std::string checked_checkpoint_dir(const std::string& given) {
  std::error_code ec;
  const std::string dir = model_dir(given);
  if (!fs::exists(dir, ec)) throw Error(cat(dir, ": no such checkpoint directory"));
  if (!fs::is_directory(dir, ec)) throw Error(cat(dir, ": not a directory; pass a checkpoint directory"));
  if (!fs::exists(fs::path(dir) / "config.json")) throw Error(cat(dir, ": not a checkpoint (no config.json)"));
  if (!has_weights(dir))
    throw Error(cat(dir, ": not a checkpoint (no model.safetensors, nor model.safetensors.index.json)"));
  return dir;
}

}  // namespace zoo::cli
