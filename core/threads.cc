#include "core/threads.h"

#include <dlfcn.h>
#include <unistd.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cctype>
#include <cstdlib>
#include <string>
#include <thread>

#include <ATen/Parallel.h>

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

namespace {
bool passive_openmp() {
  const char* policy = std::getenv("OMP_WAIT_POLICY");
  if (!policy) return false;
  std::string p(policy);
  for (auto& c : p) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return p == "passive";
}
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
  if (at::get_num_threads() > 1 && !std::getenv("OPENBLAS_NUM_THREADS")) {
    if (auto set = openblas_threads().set) set(passive_openmp() ? at::get_num_threads() : 1);
  }
}

void use_passive_openmp(char** argv) {
#if defined(__linux__)
  if (std::getenv("OMP_WAIT_POLICY") || argv == nullptr || argv[0] == nullptr) return;
  if (setenv("OMP_WAIT_POLICY", "PASSIVE", 1) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("OMP_WAIT_POLICY");  // exec failed (no /proc?): carry on as we are
#else
  (void)argv;
#endif
}

}  // namespace zoo
