#include "io/memory_budget.h"

#include <sys/resource.h>

#include <cstdio>
#include <fstream>
#include <string>

#include "core/error.h"
#include "models/model_size.h"

#if ZOO_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif

namespace zoo {

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int u = 0;
  while (bytes >= 1024 && u < 6) bytes /= 1024, ++u;
  char text[48];
  std::snprintf(text, sizeof text, u >= 3 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return text;
}

std::string MemoryEstimate::summary() const {
  auto gib = [](double b) { return format_bytes(b); };
  return cat(gib(total()), " (weights ", gib(weights), ", gradients ", gib(gradients), ", optimizer state ",
             gib(optimizer), ", activations ", gib(activations), ", runtime ", gib(runtime), ")");
}

MemoryEstimate estimate_inference_memory(const json& model_section) {
  const auto size = models::model_size(model_section);
  MemoryEstimate e;
  e.runtime = 256.0 * 1024 * 1024;  // LibTorch's libraries, the data and the allocator's slack
  e.weights = double(size.parameters) * 4;  // fp32
  e.keys = size.keys;
  return e;
}

double available_memory(const torch::Device& device) {
  if (device.is_cuda()) {
#if ZOO_WITH_CUDA
    return double(at::cuda::getDeviceProperties(device.has_index() ? device.index() : 0)->totalGlobalMem);
#else
    return -1;
#endif
  }
  if (!device.is_cpu()) return -1;  // MPS shares the host's memory, which macOS does not report here
  double available = -1;
  auto lower = [&](double v) { if (v > 0 && (available < 0 || v < available)) available = v; };
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    double kib = 0;
    std::string unit;
    meminfo >> kib >> unit;
    if (key == "MemAvailable:") lower(kib * 1024);
  }
  std::ifstream max("/sys/fs/cgroup/memory.max"), current("/sys/fs/cgroup/memory.current");
  std::string limit;
  double used = 0;
  if (max >> limit && limit != "max" && current >> used) lower(std::stod(limit) - used);
  rlimit as{};
  if (getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) lower(double(as.rlim_cur));
  return available;
}

void check_memory_budget(const MemoryEstimate& estimate, const torch::Device& device, const std::string& what) {
  const double available = available_memory(device);
  if (available < 0 || estimate.total() <= available) return;
  throw Error(cat(what, " needs about ", estimate.summary(), " from ", estimate.keys, ", but ", format_bytes(available),
                  " is available on ", device.str(),
                  "; make those smaller, or set train.check_memory=false to try anyway"));
}

}  // namespace zoo
