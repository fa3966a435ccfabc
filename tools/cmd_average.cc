// zoo average --run-dir DIR --last N: the mean of the weights of a run's newest N checkpoints,
// written to DIR/checkpoint-averaged (what train.average_checkpoints does at the end of a run).
#include <filesystem>
#include <iostream>

#include "io/checkpoint_average.h"
#include "tools/commands.h"

namespace zoo::cli {

namespace {
struct AverageArgs {
  std::string run_dir;
  int64_t last = 0;
};

int run_average(const AverageArgs& a) {
  std::error_code ec;
  if (!std::filesystem::is_directory(a.run_dir, ec))
    throw Error(cat("--run-dir ", a.run_dir, ": not a directory; give a zoo train --output-dir"));
  const auto from = newest_checkpoints(a.run_dir, a.last);
  const std::string dir = average_checkpoints(from, a.run_dir);
  std::cout << "averaged the weights of " << from.size() << " checkpoints ("
            << std::filesystem::path(from.front()).filename().string() << " to "
            << std::filesystem::path(from.back()).filename().string() << ") into " << dir << std::endl;
  return 0;
}
}  // namespace

void setup_average(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<AverageArgs>();
  auto* cmd = app.add_subcommand(
      "average", "Average the weights of a run's newest checkpoints into RUN/checkpoint-averaged (as train.average_checkpoints)");
  cmd->add_option("--run-dir", a->run_dir, "the run's output directory (holding checkpoint-STEP directories)")->required();
  cmd->add_option("--last", a->last, "how many of the newest checkpoints to average")->required()->check(CLI::Range(1, 1000));
  cmd->callback([a, exit_code] { *exit_code = run_average(*a); });
}

}  // namespace zoo::cli
