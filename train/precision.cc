#include "train/precision.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <vector>

#include <torch/version.h>
#include <ATen/autocast_mode.h>

#include "core/error.h"
#include "models/autocast_state.h"
#include "models/kernels/linear.h"
#include "train/collective.h"
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
// Why fp16 autocast with loss scaling cannot run on `device`, or "" when it can.
std::string fp16_problem(const torch::Device& device) {
#if TORCH_VERSION_MAJOR >= 2
  if (device.is_cuda()) return "";
#endif
  return cat("train.precision=fp16 (autocast with loss scaling) runs on CUDA with LibTorch >= 2.0 only (this run: ",
             device.str(), ", LibTorch ", TORCH_VERSION, "); use train.precision=bf16 where the device has it, or fp32");
}
}  // namespace

torch::ScalarType autocast_dtype(const std::string& precision) {
  return precision == "fp16" ? torch::kHalf : torch::kBFloat16;
}

void check_precision(const std::string& precision, const torch::Device& device) {
  if (precision == "fp32") return;
  const std::string problem = precision == "fp16" ? fp16_problem(device) : bf16_problem(device);
  if (!problem.empty()) throw Error(problem);
}

namespace {
// GFLOP/s of the fastest of four 1024^3 products in `dtype` through the linear layers' own
// product (models/kernels/linear.h: fp32 through oneDNN's matmul where zoo has it), after one
// untimed (products this long make the threads' wake-up negligible).
double matmul_gflops(torch::Dtype dtype) {
  torch::NoGradGuard no_grad;
  constexpr int64_t n = 1024;
  const auto a = torch::randn({n, n}).to(dtype), b = torch::randn({n, n}).to(dtype);
  double best = std::numeric_limits<double>::infinity();
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto c = models::linear(a, b);  // a b^T: the same work as a b
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (i > 0) best = std::min(best, seconds);
  }
  return 2.0 * n * n * n / best / 1e9;
}
}  // namespace

const CpuMatmulProbe& cpu_matmul_probe() {
  static const CpuMatmulProbe probe = [] {
    CpuMatmulProbe p;
    if (!cpu_bf16_support().empty()) {
      p.fp32_gflops = matmul_gflops(torch::kFloat);
      p.bf16_gflops = matmul_gflops(torch::kBFloat16);
    }
    return p;
  }();
  return probe;
}

std::string resolve_precision(const std::string& precision, const torch::Device& device) {
  if (precision == "auto") {
    if (!bf16_problem(device).empty()) return "fp32";
    return !device.is_cpu() || cpu_matmul_probe().bf16_faster() ? "bf16" : "fp32";
  }
  check_precision(precision, device);
  return precision;
}

std::string auto_precision_note(const torch::Device& device) {
  if (!device.is_cpu()) return "";  // no CPU probe for a GPU run's log
  const auto& probe = cpu_matmul_probe();
  if (probe.fp32_gflops == 0) return "";
  return cat("bf16 matrix products ", static_cast<int64_t>(probe.bf16_gflops),
             " GFLOP/s against fp32's ", static_cast<int64_t>(probe.fp32_gflops), " here");
}

std::string agree_on_precision(const std::string& resolved, Collective& collective, const torch::Device& device) {
  std::vector<double> bf16{collective.rank() == 0 && resolved == "bf16" ? 1.0 : 0.0};
  collective.sum(bf16);
  if (bf16[0] == 0) return "fp32";
  const std::string problem = bf16_problem(device);
  if (!problem.empty())
    throw Error(cat("rank ", collective.rank(), ": rank 0 resolved train.precision=auto to bf16, but ", problem));
  return "bf16";
}

std::string evaluation_precision(const std::string& trained, const torch::Device& device) {
  if (trained == "bf16") return bf16_problem(device).empty() ? "bf16" : "fp32";
  if (trained == "fp16") return fp16_problem(device).empty() ? "fp16" : "fp32";
  return resolve_precision(trained, device);
}

AutocastGuard::AutocastGuard(bool enabled, const torch::Device& device, torch::ScalarType dtype)
    : enabled_(enabled), cpu_(device.is_cpu()), dtype_(dtype) {
  if (enabled_) set(true);
}

AutocastGuard::~AutocastGuard() {
  if (!enabled_) return;
  set(false);
  at::autocast::clear_cache();
}

void AutocastGuard::set(bool on) const { models::set_autocast(cpu_, on, dtype_); }

}  // namespace zoo
