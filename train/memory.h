#pragma once
// Peak memory of this process, for the training log and metrics.jsonl.
#include <torch/types.h>

namespace zoo {

struct MemoryPeaks {
  double rss_mib = 0;                // peak resident set size of the process (getrusage)
  double cuda_allocated_mib = -1;    // peak bytes LibTorch's CUDA allocator handed out; -1 off CUDA
};

/// The peaks so far; the CUDA one for `device` when it is a CUDA device.
MemoryPeaks memory_peaks(const torch::Device& device);

}  // namespace zoo
