// zoo devices: what this machine and this LibTorch can run on.
#include <iostream>

#include "tools/commands.h"
#include "train/device.h"
#include "train/precision.h"

namespace zoo::cli {

void setup_devices(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("devices", "List the devices this LibTorch build can use");
  cmd->callback([exit_code] {
    std::cout << describe_devices();
    const torch::Device cpu(torch::kCPU);
    const std::string why = auto_precision_note(cpu);
    std::cout << "cpu train.precision=auto: " << resolve_precision("auto", cpu) << " ("
              << (why.empty() ? "no native bf16" : why) << ")\n";
    *exit_code = 0;
  });
}

}  // namespace zoo::cli
