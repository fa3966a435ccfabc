#pragma once
// oneDNN's CPU engine and a stream per thread, for the kernels that call oneDNN themselves
// (int8_linear.cc, onednn_linear.cc; compiled with ZOO_WITH_ONEDNN=1 only where LibTorch links
// the same shared oneDNN: third_party/dependencies.cmake). Elsewhere ZOO_WITH_ONEDNN is 0 and
// this header declares nothing.
#ifndef ZOO_WITH_ONEDNN
#define ZOO_WITH_ONEDNN 0
#endif
#if ZOO_WITH_ONEDNN
#include <algorithm>
#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace zoo::models::onednn {

inline dnnl::engine& cpu() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

inline dnnl::stream& stream() {
  thread_local dnnl::stream s(cpu());
  return s;
}

/// A primitive's scratchpad of this thread (primitives built with scratchpad_mode::user, so
/// that calls from several threads never share one).
inline dnnl::memory scratchpad(const dnnl::primitive_desc_base& pd) {
  thread_local std::vector<uint8_t> bytes;
  bytes.resize(std::max<size_t>(1, pd.scratchpad_desc().get_size()));
  return dnnl::memory(pd.scratchpad_desc(), cpu(), bytes.data());
}

}  // namespace zoo::models::onednn
#endif  // ZOO_WITH_ONEDNN
