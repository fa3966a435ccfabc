// zoo train --config FILE.json [--set section.key=value]... [--device D] [--output-dir DIR]
//           [--resume [CHECKPOINT_DIR]] [--init-from DIR]
// zoo train --help-config [TASK] [--config FILE.json]
#include <filesystem>
#include <iostream>

#include "api/training.h"
#include "tools/commands.h"
#include "train/signals.h"
#include "train/task_registry.h"

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

int run_train(const TrainCommand& a) {
  if (a.help_config) return run_help_config(a);
  api::TrainRequest request;
  request.config_file = a.config;
  request.output_dir = a.output_dir;
  request.overrides = a.overrides;
  request.device = a.device;
  request.resume = a.resume_set;
  request.resume_from = a.resume;
  request.init_from = a.init_from;
  request.config_source = config_source(a);
  request.data_parallel = true;  // torchrun, tools/launch.sh, Slurm or mpirun
  install_stop_handlers();
  return api::run_training(request).interrupted ? stop_exit_status() : 0;
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

}  // namespace zoo::cli
