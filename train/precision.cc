#include "train/precision.h"

#include <torch/version.h>
#include <ATen/autocast_mode.h>

#include "core/error.h"
#include "train/device.h"

namespace zoo {

namespace {
// Why bf16 autocast cannot run on `device`, or "" when it can.
std::string bf16_problem(const torch::Device& device) {
  if (device.is_cpu()) {
    if (!cpu_bf16_support().empty()) return "";
    return "train.precision=bf16 on the CPU needs native bfloat16 arithmetic (AVX512-BF16 or AMX, e.g. Intel Xeon 4th "
           "generation or AMD Zen 4) and a LibTorch with oneDNN; this machine has neither (see zoo devices): use "
           "train.precision=fp32";
  }
#if TORCH_VERSION_MAJOR >= 2
  if (device.is_cuda()) {
    if (cuda_bf16_support(device.has_index() ? device.index() : 0)) return "";
    return cat("train.precision=bf16 on ", device.str(), " needs a GPU of compute capability 8.0 or later "
               "(Ampere and newer; see zoo devices): use train.precision=fp32");
  }
  return cat("train.precision=bf16 needs a CUDA device or a CPU with native bf16 (got ", device.str(),
             "); use train.precision=fp32");
#else
  return cat("train.precision=bf16 on ", device.str(), " needs LibTorch >= 2.0 (this is LibTorch ", TORCH_VERSION,
             "); use train.precision=fp32");
#endif
}
}  // namespace

void check_precision(const std::string& precision, const torch::Device& device) {
  if (precision == "fp32") return;
  const std::string problem = bf16_problem(device);
  if (!problem.empty()) throw Error(problem);
}

std::string resolve_precision(const std::string& precision, const torch::Device& device) {
  if (precision == "auto") return bf16_problem(device).empty() ? "bf16" : "fp32";
  check_precision(precision, device);
  return precision;
}

std::string evaluation_precision(const std::string& trained, const torch::Device& device) {
  return resolve_precision(trained == "bf16" ? "auto" : trained, device);
}

AutocastGuard::AutocastGuard(bool enabled, const torch::Device& device) : enabled_(enabled), cpu_(device.is_cpu()) {
  if (enabled_) set(true);
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  set(false);
  at::autocast::clear_cache();
}

void AutocastGuard::set(bool on) const {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  const auto type = cpu_ ? at::kCPU : at::kCUDA;
  at::autocast::set_autocast_enabled(type, on);
  if (on) at::autocast::set_autocast_dtype(type, at::kBFloat16);
#else
  if (cpu_) {
    at::autocast::set_cpu_enabled(on);
    if (on) at::autocast::set_autocast_cpu_dtype(at::kBFloat16);
  } else {
    at::autocast::set_enabled(on);
    if (on) at::autocast::set_autocast_gpu_dtype(at::kBFloat16);
  }
#endif
}

}  // namespace zoo
