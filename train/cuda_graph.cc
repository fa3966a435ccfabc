#include "train/cuda_graph.h"

#include <torch/torch.h>
#include <torch/version.h>

#include "core/error.h"

// at::_fused_adamw_ with the learning rate as a tensor: LibTorch 2.2 and later.
#if ZOO_WITH_CUDA && !defined(ZOO_NO_CUDA_GRAPHS) && (TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 2))
#define ZOO_CUDA_GRAPHS 1
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#else
#define ZOO_CUDA_GRAPHS 0
#endif

namespace zoo {

bool cuda_graphs_available() { return ZOO_CUDA_GRAPHS; }

#if ZOO_CUDA_GRAPHS

struct CudaGraphStep::Impl {
  at::cuda::CUDAGraph graph;
};

CudaGraphStep::CudaGraphStep(const std::function<void()>& step, int warmup) : impl_(std::make_unique<Impl>()) {
  // Capture needs a stream other than the default one; the work before it must be done
  // first, and the work after it must wait for it.
  auto side = c10::cuda::getStreamFromPool();
  auto main = c10::cuda::getCurrentCUDAStream();
  at::cuda::CUDAEvent before;
  before.record(main);
  before.block(side);
  try {
    c10::cuda::CUDAStreamGuard on_side(side);
    for (int i = 0; i < warmup; ++i) step();
    impl_->graph.capture_begin();
    try {
      step();
    } catch (...) {
      try {
        impl_->graph.capture_end();
      } catch (...) {
      }
      throw;
    }
    impl_->graph.capture_end();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    throw Error(cat("train.cuda_graphs: the training step cannot be captured as a CUDA graph (",
                    what.substr(0, what.find('\n')), "); train without train.cuda_graphs"));
  }
  at::cuda::CUDAEvent after;
  after.record(side);
  after.block(main);
}

void CudaGraphStep::replay() { impl_->graph.replay(); }

#else

struct CudaGraphStep::Impl {};

CudaGraphStep::CudaGraphStep(const std::function<void()>&, int) {
  throw Error(cat("train.cuda_graphs needs a LibTorch 2.2 or later with CUDA (this zoo is built against LibTorch ",
                  TORCH_VERSION, ZOO_WITH_CUDA ? " with CUDA" : " without CUDA", ")"));
}

void CudaGraphStep::replay() {}

#endif

CudaGraphStep::~CudaGraphStep() = default;

}  // namespace zoo
