#include "models/autocast_state.h"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace zoo::models {

#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)

void set_autocast(bool cpu, bool on, at::ScalarType dtype) {
  const auto type = cpu ? at::kCPU : at::kCUDA;
  at::autocast::set_autocast_enabled(type, on);
  if (on) at::autocast::set_autocast_dtype(type, dtype);
}

AutocastState AutocastState::current() {
  return {at::autocast::is_autocast_enabled(at::kCPU), at::autocast::is_autocast_enabled(at::kCUDA),
          at::autocast::get_autocast_dtype(at::kCPU), at::autocast::get_autocast_dtype(at::kCUDA)};
}

#else

void set_autocast(bool cpu, bool on, at::ScalarType dtype) {
  if (cpu) {
    at::autocast::set_cpu_enabled(on);
    if (on) at::autocast::set_autocast_cpu_dtype(dtype);
  } else {
    at::autocast::set_enabled(on);
    if (on) at::autocast::set_autocast_gpu_dtype(dtype);
  }
}

AutocastState AutocastState::current() {
  return {at::autocast::is_cpu_enabled(), at::autocast::is_enabled(), at::autocast::get_autocast_cpu_dtype(),
          at::autocast::get_autocast_gpu_dtype()};
}

#endif

void AutocastState::apply() const {
  set_autocast(true, cpu, cpu_dtype);
  set_autocast(false, cuda, cuda_dtype);
}

}  // namespace zoo::models
