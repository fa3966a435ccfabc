// zoo: train, evaluate, export and run attention models from the command line.
#include <algorithm>
#include <iostream>

#include <torch/torch.h>

#include "tools/commands.h"
#include "core/threads.h"
#include "train/device.h"
#include "core/error.h"
#include "zoo/version.h"

namespace {

// An error is one line of readable length: line breaks (LibTorch's messages have them) become
// spaces, and a run of more than 200 characters without a space (a 50 MB string from a config,
// echoed back) is cut to its start and its length.
std::string one_line(std::string what) {
  std::replace(what.begin(), what.end(), '\n', ' ');
  std::string out;
  size_t i = 0;
  while (i < what.size()) {
    const size_t end = std::min(what.find(' ', i), what.size());
    if (end - i > 200) out += what.substr(i, 80) + zoo::cat("... (", end - i, " characters)");
    else out += what.substr(i, end - i);
    if (end < what.size()) out += ' ';
    i = end + 1;
  }
  return out;
}

void print_error(const std::string& what, const std::string& hint = "") {
  std::cerr << "zoo: error: " << one_line(what) << hint << std::endl;
}

}  // namespace

int main(int argc, char** argv) {
  // zoo serve answers on a hundred threads: tcmalloc's caches per thread would hold tens of MB
  // between requests (a soak's resident memory grew 5.9% after warm-up; with 4 MiB in all, 0.5%).
  std::vector<std::pair<std::string, std::string>> defaults;
  if (argc > 1 && std::string(argv[1]) == "serve") defaults.emplace_back("TCMALLOC_MAX_TOTAL_THREAD_CACHE_BYTES", "4194304");
  zoo::use_startup_environment(argv, defaults);  // may re-execute (OMP_WAIT_POLICY, OPENBLAS_CORETYPE)
  // LibTorch may start with one intra-op thread; use every core (OMP_NUM_THREADS overrides).
  zoo::configure_cpu_threads();
  CLI::App app{"zoo: a LibTorch model zoo and trainer (ViT, seq2seq, Transformer, BERT, GPT)"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "zoo " ZOO_VERSION);
  int exit_code = 0;
  zoo::cli::setup_devices(app, &exit_code);
  zoo::cli::setup_train(app, &exit_code);
  zoo::cli::setup_finetune(app, &exit_code);
  zoo::cli::setup_eval(app, &exit_code);
  zoo::cli::setup_classify(app, &exit_code);
  zoo::cli::setup_export(app, &exit_code);
  zoo::cli::setup_average(app, &exit_code);
  zoo::cli::setup_translate(app, &exit_code);
  zoo::cli::setup_generate(app, &exit_code);
  zoo::cli::setup_serve(app, &exit_code);
  zoo::cli::setup_tokenizer(app, &exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // A malformed command line is an error like any other: one line, exit code 1.
    print_error(e.what(), " (zoo --help, or zoo COMMAND --help, lists the options)");
    return 1;
  } catch (const zoo::Error& e) {
    print_error(e.what());
    return 1;
  } catch (const c10::Error& e) {
    print_error(e.what_without_backtrace());
    return 1;
  } catch (const std::exception& e) {
    print_error(e.what());
    return 1;
  }
  return exit_code;
}
