// zoo devices: what this machine and this LibTorch can run on.
#include <iostream>

#include "tools/commands.h"
#include "train/device.h"

namespace zoo::cli {

void setup_devices(CLI::App& app, int* exit_code) {
  auto* cmd = app.add_subcommand("devices", "List the devices this LibTorch build can use");
  cmd->callback([exit_code] {
    std::cout << describe_devices();
    *exit_code = 0;
  });
}

}  // namespace zoo::cli
