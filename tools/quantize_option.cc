// --quantize, shared by zoo generate, translate, classify and eval.
#include "models/quantize.h"
#include "tools/commands.h"
#include "train/device.h"

namespace zoo::cli {

void add_quantize_option(CLI::App* cmd, std::string* quantize) {
  cmd->add_option("--quantize", *quantize,
                  "int8: quantize the linear layers to int8 when the model is loaded (dynamic quantization, "
                  "CPU only; faster on wide models); default fp32");
}

torch::Device quantized_device(const std::string& device, const std::string& quantize) {
  if (quantize.empty()) return resolve_device(device);
  // The value and the device first (by the name given: no CUDA needed to be told it is no CPU).
  models::check_quantize(quantize, device == "auto" ? std::string("cpu") : device, "--quantize");
  return torch::kCPU;
}

}  // namespace zoo::cli
