// zoo devices: what this machine and this LibTorch can run on.
#include <iostream>

#include "models/kernels/int8_linear.h"
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
    std::string engines;
    for (const auto& e : models::int8_engines()) engines += (engines.empty() ? "" : ", ") + e;
    std::string used;
    try {
      used = models::int8_engine();
    } catch (const Error& e) {  // a ZOO_INT8_ENGINE this build lacks
      used = e.what();
    }
    std::cout << "quantized engines: " << (engines.empty() ? "none" : engines) << "; --quantize int8 uses "
              << (used.empty() ? "none (unavailable with this LibTorch)" : used) << "\n";
    *exit_code = 0;
  });
}

}  // namespace zoo::cli
