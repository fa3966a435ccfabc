#pragma once
// Autocast's thread-local switches, read and set through the API of whichever LibTorch this is
// (it changed in 2.4): one home for train/precision.h's guard and models/recompute.h's rerun.
#include <torch/torch.h>

namespace zoo::models {

/// Switches autocast on or off for the CPU (`cpu`) or CUDA, in `dtype` when on.
void set_autocast(bool cpu, bool on, at::ScalarType dtype);

/// Both device types' switches and dtypes, to carry to another thread.
struct AutocastState {
  bool cpu = false, cuda = false;
  at::ScalarType cpu_dtype = at::kBFloat16, cuda_dtype = at::kHalf;
  static AutocastState current();
  void apply() const;
};

}  // namespace zoo::models
