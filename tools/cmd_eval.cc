// zoo eval --checkpoint DIR [--ensemble DIR]... [--split valid|test] [--device D] [--set section.key=value]...
//          [--quantize int8]
// Prints one JSON line of metrics on stdout. The forward passes run in the checkpoint's
// train.precision (bf16 autocast where it resolves so); --set train.precision=fp32 for fp32.
// --quantize int8: the linear layers in int8 (fp32 elsewhere; "quantize": "int8" in the line).
// --ensemble: the members' predicted distributions averaged ("ensemble": N in the line):
// classifiers' predictions, translation models' next-token distributions at every step.
#include <iostream>

#include "api/training.h"
#include "tools/commands.h"
#include "train/device.h"

namespace zoo::cli {

namespace {
struct EvalArgs {
  std::string checkpoint;
  std::string split;  // "": the task's default (test; valid for language models)
  std::string device = "auto";
  std::vector<std::string> overrides;
  std::string quantize;  // "" (fp32) or "int8"
  std::vector<std::string> ensemble;  // more checkpoints whose predictions are averaged
};

int run_eval(const EvalArgs& a) {
  checked_checkpoint_dir(a.checkpoint);
  std::cout << api::evaluation_json(a.checkpoint, a.split, quantized_device(a.device, a.quantize), a.overrides,
                                    a.quantize, a.ensemble)
                   .dump()
            << std::endl;
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
  cmd->add_option("--ensemble", a->ensemble,
                  "another checkpoint of the same task and data (repeatable): the metrics of the mean of the "
                  "members' predicted probabilities (translation: of the next token at every step)");
  cmd->add_option("--set", a->overrides, "override a config key, e.g. data.path=DIR (repeatable)");
  add_quantize_option(cmd, &a->quantize);
  cmd->callback([a, exit_code] { *exit_code = run_eval(*a); });
}

}  // namespace zoo::cli
