// zoo eval --checkpoint DIR [--split valid|test] [--device D] [--set section.key=value]...
// Prints one JSON line of metrics on stdout. The forward passes run in the checkpoint's
// train.precision (bf16 autocast where it resolves so); --set train.precision=fp32 for fp32.
#include <iostream>

#include "tools/commands.h"
#include "train/device.h"
#include "train/precision.h"
#include "train/task_registry.h"
#include "train/train_options.h"

namespace zoo::cli {

namespace {
struct EvalArgs {
  std::string checkpoint;
  std::string split;  // "": the task's default (test; valid for language models)
  std::string device = "auto";
  std::vector<std::string> overrides;
};

int run_eval(const EvalArgs& a) {
  checked_checkpoint_dir(a.checkpoint);
  const torch::Device device = resolve_device(a.device);
  auto task = load_task(a.checkpoint, a.overrides, device);
  const auto train = read_options<TrainOptions>(task->config().at("train"), "train");
  const std::string split = a.split.empty() ? task->default_eval_split() : a.split;
  const std::string precision = evaluation_precision(train.precision, device);  // --set train.precision=fp32 for fp32
  Metrics m = evaluate(*task, split, train.per_device_eval_batch_size, device, precision);
  json out(m);
  if (out.contains("examples")) out["examples"] = static_cast<int64_t>(m["examples"]);
  out["split"] = split;
  out["precision"] = precision;
  std::cout << out.dump() << std::endl;
  return 0;
}
}  // namespace

void setup_eval(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<EvalArgs>();
  auto* cmd = app.add_subcommand("eval", "Evaluate a checkpoint; prints one JSON line of metrics");
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint directory")->required();
  cmd->add_option("--split", a->split, "valid | test | train (language models: valid | train); default test, valid for language models")
      ->check(CLI::IsMember({"valid", "test", "train"}));
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  cmd->add_option("--set", a->overrides, "override a config key, e.g. data.path=DIR (repeatable)");
  cmd->callback([a, exit_code] { *exit_code = run_eval(*a); });
}

}  // namespace zoo::cli
