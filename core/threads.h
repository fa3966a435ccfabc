#pragma once
// CPU thread control: LibTorch's intra-op threads, OpenBLAS's own pool, OpenMP's wait
// policy and glibc's allocator, set once at start-up; and a guard for code that gives each
// of LibTorch's threads its own matrix products. Why each setting pays is measured in
// docs/results.md (Benchmarks).

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace zoo {

/// OpenBLAS's thread-count functions when LibTorch's BLAS is OpenBLAS (null otherwise),
/// looked up once.
struct OpenBlasThreads {
  int (*get)() = nullptr;
  void (*set)(int) = nullptr;
};
const OpenBlasThreads& openblas_threads();

/// While alive, OpenBLAS (when LibTorch uses it) runs single-threaded: for code that gives
/// each of LibTorch's threads its own matrix products, which OpenBLAS's pool would otherwise
/// fight for the cores. Restores the previous count; a no-op inside a parallel region and
/// without OpenBLAS.
class ScopedSingleThreadedBlas {
 public:
  ScopedSingleThreadedBlas();
  ~ScopedSingleThreadedBlas();
  ScopedSingleThreadedBlas(const ScopedSingleThreadedBlas&) = delete;
  ScopedSingleThreadedBlas& operator=(const ScopedSingleThreadedBlas&) = delete;

 private:
  int saved_ = 0;
};

/// `total` (rows, inputs) shared out among up to `threads` loops: total / threads each, the
/// first total % threads one more; a single share of all when total is under `threads`.
std::vector<size_t> split_evenly(size_t total, size_t threads);

/// Runs task(i) for every i in [0, n) on LibTorch's intra-op threads, each thread taking the
/// next task when it is free, each task's operations single-threaded on its own core (inside
/// the parallel region, OpenBLAS single-threaded): for independent pieces of work too small
/// to gain from spreading each operation over the cores. In order on the calling thread when
/// there is one thread or one task, or inside a parallel region. Every thread runs with the
/// caller's grad mode; the first exception is rethrown once every thread has stopped.
void run_side_by_side(size_t n, const std::function<void(size_t)>& task);

/// Sets LibTorch's intra-op threads (0: one per core, unless OMP_NUM_THREADS is set) and,
/// when LibTorch runs BLAS through OpenBLAS's own thread pool, gives OpenBLAS as many threads
/// when OMP_WAIT_POLICY is passive (see use_startup_environment) and makes it single-threaded
/// otherwise (unless OPENBLAS_NUM_THREADS is set), so the two pools do not fight over the
/// cores. On glibc it also keeps freed tensor buffers in the heap (mallopt: no mmap below
/// 32 MiB, no trimming) instead of returning them to the OS and page-faulting them back
/// every step.
void configure_cpu_threads(int threads = 0);

/// Call first thing in main(). Both settings below are read by libraries as they load, before
/// main(), so when one is missing this sets it and re-executes the program once (Linux,
/// /proc/self/exe) with the same arguments; a user's own values are left alone. Returns only
/// if no re-execution happened.
/// - OMP_WAIT_POLICY=PASSIVE: OpenMP threads (LibTorch's intra-op pool) busy-wait after each
///   parallel region by default, taking the cores from OpenBLAS's own pool, so BLAS has to run
///   single-threaded; passive, they sleep and both pools can use every core.
/// - OPENBLAS_CORETYPE (see openblas_core_override): when OpenBLAS's CPU detection fails on a
///   CPU newer than it knows, it falls back to decades-old kernels.
/// - `defaults`: more variables set when absent (the caller's: zoo serve limits tcmalloc's
///   per-thread caches, read once when the program starts).
void use_startup_environment(char** argv, const std::vector<std::pair<std::string, std::string>>& defaults = {});

/// The OpenBLAS core to force when the loaded OpenBLAS detected a core weaker than this CPU
/// supports: "SKYLAKEX" on an AVX-512 (F/BW/DQ/VL) CPU, "HASWELL" on an AVX2+FMA CPU, when
/// OpenBLAS names a core without those (e.g. "Prescott" on a Sapphire Rapids VM: 70 instead
/// of 317 GFLOP/s for a 1024^3 product on 2 cores). Empty when nothing needs forcing, when
/// OPENBLAS_CORETYPE is set or when LibTorch's BLAS is not OpenBLAS.
std::string openblas_core_override();

/// The core OpenBLAS is running ("SkylakeX", ...), or "" without OpenBLAS.
std::string openblas_core();

/// Whether `core` (an OpenBLAS core name, any case) has only AVX2 kernels (Haswell, Zen) while
/// this CPU has AVX-512 (F/BW/DQ/VL): e.g. a user's OPENBLAS_CORETYPE=Haswell on such a CPU.
bool weaker_openblas_core(const std::string& core);

}  // namespace zoo
