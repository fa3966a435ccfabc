#pragma once
// What the data-parallel tests share: whether this LibTorch has c10d's Gloo, and ports that
// parallel ctest runs do not share.
#include <unistd.h>

#include <algorithm>

#include "train/distributed.h"

namespace zoo::test {

inline bool have_gloo() {
  const auto b = distributed_backends();
  return std::find(b.begin(), b.end(), "gloo") != b.end();
}

/// A port for test `offset` (0-7) of this process: each test file its own `base` (8,000 ports
/// apart: 20000, 28000, 36000), each process its own 8 within it.
inline int port(int base, int offset) { return base + static_cast<int>(getpid() % 1000) * 8 + offset; }

}  // namespace zoo::test
