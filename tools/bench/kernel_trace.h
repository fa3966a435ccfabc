#pragma once
// A Kineto trace of the GPU kernels for the benchmarks (tools/bench/*_bench.cc,
// ZOO_BENCH_KERNELS=FILE): Chrome trace JSON as Python's torch.profiler writes it, read by
// tools/bench/kernel_table.py. LibTorch 2.x with CUDA; elsewhere it throws zoo::Error.
#include <set>
#include <string>

#include <torch/torch.h>
#include <torch/version.h>

#include "core/error.h"

#if ZOO_WITH_CUDA && TORCH_VERSION_MAJOR >= 2
#define ZOO_BENCH_KERNEL_TRACE 1
#include <torch/csrc/autograd/profiler_kineto.h>
#include <torch/cuda.h>
#else
#define ZOO_BENCH_KERNEL_TRACE 0
#endif

namespace zoo::bench {

/// Records CPU operations and CUDA kernels from construction to save().
class KernelTrace {
 public:
  KernelTrace() {
#if ZOO_BENCH_KERNEL_TRACE
    namespace prof = torch::profiler::impl;
    const prof::ProfilerConfig config(prof::ProfilerState::KINETO);
    const std::set<prof::ActivityType> activities{prof::ActivityType::CPU, prof::ActivityType::CUDA};
    torch::autograd::profiler::prepareProfiler(config, activities);
    torch::autograd::profiler::enableProfiler(config, activities);
#else
    throw Error("ZOO_BENCH_KERNELS needs a LibTorch 2.x build with CUDA");
#endif
  }
  /// Stops recording and writes the trace to `path`.
  void save([[maybe_unused]] const std::string& path) {
#if ZOO_BENCH_KERNEL_TRACE
    torch::cuda::synchronize();
    torch::autograd::profiler::disableProfiler()->save(path);
#endif
  }
};

}  // namespace zoo::bench
