#include "train/memory.h"

#include <sys/resource.h>

#if ZOO_WITH_CUDA && !defined(ZOO_NO_CUDA_GRAPHS)
#define ZOO_CUDA_MEMORY_STATS 1
#include <c10/cuda/CUDACachingAllocator.h>
#else
#define ZOO_CUDA_MEMORY_STATS 0
#endif

namespace zoo {

MemoryPeaks memory_peaks([[maybe_unused]] const torch::Device& device) {
  MemoryPeaks peaks;
  rusage usage{};
  if (getrusage(RUSAGE_SELF, &usage) == 0) peaks.rss_mib = static_cast<double>(usage.ru_maxrss) / 1024.0;  // KiB on Linux
#if ZOO_CUDA_MEMORY_STATS
  if (device.is_cuda()) {
    const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(device.has_index() ? device.index() : 0);
    peaks.cuda_allocated_mib = static_cast<double>(stats.allocated_bytes[0].peak) / (1024.0 * 1024.0);  // 0: all pools
  }
#endif
  return peaks;
}

}  // namespace zoo
