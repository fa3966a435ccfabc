#include "train/device.h"

#include <cctype>
#include <cstdlib>
#include <string>
#include <sstream>
#include <thread>

#include <torch/cuda.h>
#include <torch/version.h>
#include <ATen/Context.h>
#include <ATen/Parallel.h>

#include "core/threads.h"
#include "core/error.h"
#include "core/options.h"
#include "train/distributed.h"

#if ZOO_WITH_CUDA
#include <ATen/cuda/CUDAContext.h>
#endif
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace zoo {

bool mps_available() {
#if TORCH_VERSION_MAJOR >= 2 || (TORCH_VERSION_MAJOR == 1 && TORCH_VERSION_MINOR >= 12)
  return at::hasMPS();
#else
  return false;
#endif
}

std::string cpu_bf16_support() {
  if (!at::hasMKLDNN()) return "";
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (__get_cpuid_max(0, nullptr) < 7) return "";
  __cpuid_count(7, 0, eax, ebx, ecx, edx);
  const bool amx_bf16 = (edx >> 22) & 1;  // CPUID.(7,0):EDX[22]
  __cpuid_count(7, 1, eax, ebx, ecx, edx);
  const bool avx512_bf16 = (eax >> 5) & 1;  // CPUID.(7,1):EAX[5]
  if (amx_bf16) return "AMX-BF16";
  if (avx512_bf16) return "AVX512-BF16";
#endif
  return "";
}

bool cuda_bf16_support(int64_t index) {
#if ZOO_WITH_CUDA
  return at::cuda::getDeviceProperties(static_cast<int>(index))->major >= 8;
#else
  (void)index;
  return false;
#endif
}

namespace {

int64_t parse_index(const std::string& spec, const std::string& digits) {
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("0123456789") != std::string::npos)
    throw Error(cat("device '", spec, "': expected cuda:N with N a GPU index, e.g. cuda:0"));
  return std::stoll(digits);
}

std::string describe_cuda_device(int64_t i) {
#if ZOO_WITH_CUDA
  const auto* p = at::cuda::getDeviceProperties(static_cast<int>(i));
  return cat("  cuda:", i, ": ", p->name, ", ", p->totalGlobalMem / (1024.0 * 1024 * 1024), " GiB, compute ",
             p->major, ".", p->minor, "\n");
#else
  return cat("  cuda:", i, "\n");
#endif
}

}  // namespace

torch::Device resolve_device(const std::string& spec) {
  if (spec == "auto") {
    if (torch::cuda::is_available()) return torch::Device(torch::kCUDA, 0);
    if (mps_available()) return torch::Device(torch::kMPS);
    return torch::Device(torch::kCPU);
  }
  if (spec == "cpu") return torch::Device(torch::kCPU);
  if (spec == "mps") {
    if (!mps_available())
      throw Error("device 'mps' is not available: MPS needs macOS on Apple silicon and a LibTorch "
                  "built with MPS; use --device cpu or auto");
    return torch::Device(torch::kMPS);
  }
  if (spec.rfind("cuda", 0) == 0) {
    int64_t index = 0;
    if (spec.size() > 4) {
      if (spec[4] != ':') throw Error(cat("unknown device '", spec, "'; use auto, cpu, cuda, cuda:N or mps"));
      index = parse_index(spec, spec.substr(5));
    }
    if (!torch::cuda::is_available()) {
      throw Error(cat("device '", spec, "' is not available: ",
                      at::hasCUDA() ? "no CUDA GPU is visible on this machine"
                                    : "this LibTorch was built without CUDA (see README: using a CUDA LibTorch)",
                      "; use --device cpu or auto"));
    }
    const int64_t n = static_cast<int64_t>(torch::cuda::device_count());
    if (index >= n)
      throw Error(cat("device '", spec, "' is not available: this machine has ", n, " CUDA device",
                      n == 1 ? "" : "s", " (cuda:0", n > 1 ? cat("..cuda:", n - 1) : std::string(), ")"));
    return torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(index));
  }
  throw Error(cat("unknown device '", spec, "'; use auto, cpu, cuda, cuda:N or mps"));
}

std::string describe_devices() {
  std::ostringstream os;
  os << "LibTorch " << TORCH_VERSION << "\n";
  os << "cpu: available, " << at::get_num_threads() << " threads (intra-op), "
     << at::get_num_interop_threads() << " inter-op\n";
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  os << "cpu threading: OpenMP wait policy " << (policy ? policy : "unset (active)");
  if (auto get = openblas_threads().get) os << ", OpenBLAS " << get() << " threads";
  os << "\n";
  const std::string core = openblas_core();
  if (!core.empty()) {
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    os << "cpu BLAS: OpenBLAS core " << core
       << (forced ? cat(" (OPENBLAS_CORETYPE=", forced, "; zoo sets it when OpenBLAS detects a core older than the CPU)")
                  : std::string())
       << "\n";
    if (forced && weaker_openblas_core(core))
      os << "cpu BLAS: this CPU has AVX-512 and " << core
         << "'s kernels use AVX2: without OPENBLAS_CORETYPE, OpenBLAS picks its own (on a 2-core AMD EPYC VM, "
            "Cooperlake's fp32 products ran 1.8-2.0x as fast as Haswell's; docs/results.md)\n";
  }
  os << "distributed (c10d): " << (distributed_backends().empty() ? std::string("none") : join(distributed_backends()))
     << "\n";
  const std::string bf16 = cpu_bf16_support();
  os << "cpu bf16 (train.precision=bf16): " << (bf16.empty() ? "no (needs AVX512-BF16 or AMX and oneDNN)" : bf16) << "\n";
  os << "built with CUDA: " << (at::hasCUDA() ? "yes" : "no") << "\n";
  const int64_t n = torch::cuda::is_available() ? static_cast<int64_t>(torch::cuda::device_count()) : 0;
  os << "cuda devices: " << n << "\n";
  for (int64_t i = 0; i < n; ++i) os << describe_cuda_device(i);
  os << "built with MPS: " << (mps_available() || at::hasMPS() ? "yes" : "no") << "\n";
  os << "mps: " << (mps_available() ? "available" : "not available") << "\n";
  os << "default (--device auto): " << resolve_device("auto").str() << "\n";
  return os.str();
}

}  // namespace zoo
