#pragma once
// A training step captured once as a CUDA graph and replayed (train.cuda_graphs, the GPU
// benchmarks): one launch per step instead of one per kernel, where the shapes are static.
#include <functional>
#include <memory>

namespace zoo {

/// Whether this build can capture CUDA graphs (LibTorch 2.2+ with CUDA: the fused AdamW
/// kernel must read its learning rate from the device, since a captured step cannot take a
/// new number from the host).
bool cuda_graphs_available();

/// `step` (no host synchronisation inside: no .item(), no host-side decisions on device
/// values) run `warmup` times on a side stream, then captured on it; replay() runs the
/// captured kernels again on the same memory. The caller unsets the gradients
/// (zero_grad with set_to_none) before the capture, so that backward allocates them from
/// the graph's memory and every replay overwrites them. Throws zoo::Error where
/// cuda_graphs_available() is false, or naming the operation that cannot be captured.
class CudaGraphStep {
 public:
  CudaGraphStep(const std::function<void()>& step, int warmup = 0);
  ~CudaGraphStep();
  CudaGraphStep(const CudaGraphStep&) = delete;
  CudaGraphStep& operator=(const CudaGraphStep&) = delete;
  void replay();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace zoo
