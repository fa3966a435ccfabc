#pragma once
// One file per subcommand: each has an options struct, a setup_*(CLI::App&) that declares
// its flags (defaults come from the struct) and a run_*() that does the work.
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "io/checkpoint.h"

namespace zoo::cli {

/// Registers a subcommand; the callback runs it and stores the exit code in *exit_code.
void setup_devices(CLI::App& app, int* exit_code);
void setup_train(CLI::App& app, int* exit_code);
void setup_finetune(CLI::App& app, int* exit_code);
void setup_eval(CLI::App& app, int* exit_code);
void setup_classify(CLI::App& app, int* exit_code);
void setup_export(CLI::App& app, int* exit_code);
void setup_translate(CLI::App& app, int* exit_code);
void setup_generate(CLI::App& app, int* exit_code);
void setup_tokenizer(CLI::App& app, int* exit_code);
void setup_serve(CLI::App& app, int* exit_code);
void setup_average(CLI::App& app, int* exit_code);

/// Shared by the subcommands that load a checkpoint: validates the directory (io/checkpoint.h).
using zoo::checked_checkpoint_dir;

/// --quantize on the commands that load a model for inference (generate, translate, classify,
/// eval); its value is checked by quantized_device().
void add_quantize_option(CLI::App* cmd, std::string* quantize);
/// The device a command loads its model on: --device resolved, except that with --quantize
/// int8 "auto" is the CPU (int8 runs there only). Throws zoo::Error for an unknown --quantize,
/// or int8 on another device (naming it).
torch::Device quantized_device(const std::string& device, const std::string& quantize);

}  // namespace zoo::cli
