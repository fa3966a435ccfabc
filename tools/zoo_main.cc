// zoo: train, evaluate, export and run attention models from the command line.
#include <algorithm>
#include <iostream>

#include <torch/torch.h>

#include "tools/commands.h"
#include "core/threads.h"
#include "train/device.h"
#include "core/error.h"

int main(int argc, char** argv) {
  zoo::use_startup_environment(argv);  // may re-execute (OMP_WAIT_POLICY, OPENBLAS_CORETYPE)
  // LibTorch may start with one intra-op thread; use every core (OMP_NUM_THREADS overrides).
  zoo::configure_cpu_threads();
  CLI::App app{"zoo: a LibTorch model zoo and trainer (ViT, seq2seq, Transformer, BERT, GPT)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "zoo 0.1.0");
  int exit_code = 0;
  zoo::cli::setup_devices(app, &exit_code);
  zoo::cli::setup_train(app, &exit_code);
  zoo::cli::setup_finetune(app, &exit_code);
  zoo::cli::setup_eval(app, &exit_code);
  zoo::cli::setup_classify(app, &exit_code);
  zoo::cli::setup_export(app, &exit_code);
  zoo::cli::setup_translate(app, &exit_code);
  zoo::cli::setup_generate(app, &exit_code);
  zoo::cli::setup_tokenizer(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A malformed command line is an error like any other: one line, exit code 1.
    std::string what = e.what();
    std::replace(what.begin(), what.end(), '\n', ' ');
    std::cerr << "zoo: error: " << what << " (zoo --help, or zoo COMMAND --help, lists the options)" << std::endl;
    return 1;
  } catch (const zoo::Error& e) {
    std::cerr << "zoo: error: " << e.what() << std::endl;
    return 1;
  } catch (const c10::Error& e) {
    std::cerr << "zoo: error: " << e.what_without_backtrace() << std::endl;
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "zoo: error: " << e.what() << std::endl;
    return 1;
  }
  return exit_code;
}
