#pragma once
// CPU thread control: LibTorch's intra-op threads, OpenBLAS's own pool, OpenMP's wait
// policy and glibc's allocator, set once at start-up; and a guard for code that gives each
// of LibTorch's threads its own matrix products. Why each setting pays is measured in
// docs/results.md (Benchmarks).

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

/// Sets LibTorch's intra-op threads (0: one per core, unless OMP_NUM_THREADS is set) and,
/// when LibTorch runs BLAS through OpenBLAS's own thread pool, gives OpenBLAS as many threads
/// when OMP_WAIT_POLICY is passive (see use_passive_openmp) and makes it single-threaded
/// otherwise (unless OPENBLAS_NUM_THREADS is set), so the two pools do not fight over the
/// cores. On glibc it also keeps freed tensor buffers in the heap (mallopt: no mmap below
/// 32 MiB, no trimming) instead of returning them to the OS and page-faulting them back
/// every step.
void configure_cpu_threads(int threads = 0);

/// Call first thing in main(). OpenMP threads (LibTorch's intra-op pool) busy-wait after each
/// parallel region by default, taking the cores from OpenBLAS's own pool, so BLAS has to run
/// single-threaded. With OMP_WAIT_POLICY=PASSIVE they sleep instead and both pools can use
/// every core. OpenMP reads the variable when it loads, before main(), so when it is unset
/// this sets it and re-executes the program (Linux, /proc/self/exe) with the same arguments;
/// a user's own OMP_WAIT_POLICY is left alone. Returns only if no re-execution happened.
void use_passive_openmp(char** argv);

}  // namespace zoo
