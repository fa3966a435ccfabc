#include "core/threads.h"

#include <dlfcn.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>
#include <thread>

#include <ATen/Parallel.h>
#include <c10/core/GradMode.h>

namespace zoo {

const OpenBlasThreads& openblas_threads() {
  static const OpenBlasThreads fns{
      reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "openblas_get_num_threads")),
      reinterpret_cast<void (*)(int)>(dlsym(RTLD_DEFAULT, "openblas_set_num_threads"))};
  return fns;
}

ScopedSingleThreadedBlas::ScopedSingleThreadedBlas() {
  const auto& blas = openblas_threads();
  if (!blas.get || !blas.set || at::in_parallel_region()) return;  // inside a region: the outermost guard did it
  saved_ = blas.get();
  if (saved_ > 1) blas.set(1);
}

ScopedSingleThreadedBlas::~ScopedSingleThreadedBlas() {
  if (saved_ > 1) openblas_threads().set(saved_);
}

std::vector<size_t> split_evenly(size_t total, size_t threads) {
  const size_t k = total < threads || threads == 0 ? 1 : threads;
  std::vector<size_t> shares(k, total / k);
  for (size_t i = 0; i < total % k; ++i) ++shares[i];
  return shares;
}

void run_side_by_side(size_t n, const std::function<void(size_t)>& task) {
  const auto threads = static_cast<size_t>(std::max(1, at::get_num_threads()));
  if (n <= 1 || threads == 1 || at::in_parallel_region()) {
    for (size_t i = 0; i < n; ++i) task(i);
    return;
  }
  const bool grad = c10::GradMode::is_enabled();
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  ScopedSingleThreadedBlas blas;
  at::parallel_for(0, static_cast<int64_t>(std::min(n, threads)), 1, [&](int64_t, int64_t) {
    c10::AutoGradMode mode(grad);  // thread-local
    try {
      for (size_t i = next++; i < n && !failed; i = next++) task(i);
    } catch (...) {
      failed = true;  // the other threads take no more tasks
      throw;
    }
  });
}

namespace {
std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool passive_openmp() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  return policy && lower(policy) == "passive";
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
// The AVX-512 subsets OpenBLAS's SkylakeX kernels use.
bool cpu_has_avx512() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
}
#endif
}  // namespace

void configure_cpu_threads(int threads) {
#if defined(__GLIBC__)
  // Training allocates and frees the same large activations every step. glibc's defaults
  // mmap/munmap them (and trim the heap), so every step pays page faults on fresh memory.
  mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);  // glibc's maximum on 64-bit
  mallopt(M_TRIM_THRESHOLD, 1024 * 1024 * 1024);
#endif
  if (threads <= 0 && !std::getenv("OMP_NUM_THREADS")) threads = static_cast<int>(std::thread::hardware_concurrency());
  if (threads > 0) at::set_num_threads(threads);
  // One thread asked for is one for OpenBLAS too: its own pool otherwise keeps a thread per core.
  if (!std::getenv("OPENBLAS_NUM_THREADS")) {
    if (auto set = openblas_threads().set) set(passive_openmp() ? at::get_num_threads() : 1);
  }
}

std::string openblas_core() {
  using Fn = char* (*)();
  static const auto fn = reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, "openblas_get_corename"));
  return fn ? std::string(fn()) : std::string();
}

bool weaker_openblas_core(const std::string& core) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  const std::string name = lower(core);
  return (name == "haswell" || name == "zen") && cpu_has_avx512();
#else
  (void)core;
  return false;
#endif
}

std::string openblas_core_override() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  if (std::getenv("OPENBLAS_CORETYPE")) return "";
  const std::string core = lower(openblas_core());
  if (core.empty()) return "";
  // Cores with AVX2+FMA kernels: anything else on such a CPU is a failed detection.
  for (const char* good : {"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"})
    if (core == good) return "";
  if (cpu_has_avx512()) return "SKYLAKEX";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "HASWELL";
#endif
  return "";
}

void use_startup_environment(char** argv, const std::vector<std::pair<std::string, std::string>>& defaults) {
#if defined(__linux__)
  if (argv == nullptr || argv[0] == nullptr) return;
  bool changed = false;
  for (const auto& [name, value] : defaults)
    if (!std::getenv(name.c_str())) changed |= setenv(name.c_str(), value.c_str(), 1) == 0;
  if (!std::getenv("OMP_WAIT_POLICY")) changed |= setenv("OMP_WAIT_POLICY", "PASSIVE", 1) == 0;
  const std::string core = openblas_core_override();
  if (!core.empty()) changed |= setenv("OPENBLAS_CORETYPE", core.c_str(), 1) == 0;
  if (!changed) return;
  execv("/proc/self/exe", argv);
  // exec failed (no /proc?): carry on as we are, with the variables as they were.
  unsetenv("OMP_WAIT_POLICY");
  if (!core.empty()) unsetenv("OPENBLAS_CORETYPE");
#else
  (void)argv, (void)defaults;
#endif
}

}  // namespace zoo
