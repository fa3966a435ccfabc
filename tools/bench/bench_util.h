#pragma once
// Shared by the C++ sides of the benchmarks (tools/bench/*_bench.cc).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <torch/cuda.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/kernels/linear.h"
#include "train/device.h"
#include "train/precision.h"

namespace zoo::bench {

/// The benchmark's --device and --precision, checked as zoo train checks them; nothing (after
/// one line on stderr that starts with `program`) where they cannot run.
inline std::optional<torch::Device> bench_device(const std::string& program, const std::string& spec,
                                                 const std::string& precision) {
  try {
    const torch::Device device = zoo::resolve_device(spec);
    zoo::check_precision(precision, device);
    return device;
  } catch (const zoo::Error& e) {
    std::cerr << program << ": " << e.what() << std::endl;
    return std::nullopt;
  }
}

/// The median of `v` (the upper one of an even count), as the benchmarks report their steps.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/// Waits for the device's queued work (timing on CUDA), nothing on the CPU.
inline void sync(const torch::Device& device) {
  if (device.is_cuda()) torch::cuda::synchronize(device.index());
}

/// GEMM throughput (FLOP/s) of an n x n x n product in `dtype` on `device`, best of a few, of
/// LibTorch's product and zoo's linear layers' (oneDNN's matmul on the CPU, where it is
/// faster): the peak a step's matrix products are measured against.
inline double matmul_peak(int64_t n, const torch::Device& device, torch::ScalarType dtype) {
  const auto opts = torch::TensorOptions().device(device).dtype(dtype);
  auto a = torch::randn({n, n}, opts), b = torch::randn({n, n}, opts);
  double best = 0;
  for (const bool zoo : {false, true}) {
    if (zoo && !device.is_cpu()) break;  // elsewhere linear() is LibTorch's product already
    auto product = [&] { return zoo ? zoo::models::linear(a, b) : torch::mm(a, b); };
    product();
    sync(device);
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto c = product();
      sync(device);
      best = std::max(best, 2.0 * n * n * n / seconds_since(t0));
    }
  }
  return best;
}

/// Special ids of the synthetic sentences; the Python sides (tools/bench/bench_data.py) use
/// the same shapes.
struct SyntheticIds {
  int64_t pad = 0, bos = 1, eos = 2, first_word = 3;
};

/// (B, len) random tokens in [first_word, vocab); row r is len - r % (len / 2) long, framed
/// by bos/eos if asked, padded at the end.
inline torch::Tensor synthetic_sentences(int64_t batch, int64_t len, int64_t vocab, bool framed,
                                         const SyntheticIds& ids = {}) {
  auto x = torch::randint(ids.first_word, vocab, {batch, len}, torch::kLong);
  for (int64_t r = 0; r < batch; ++r) {
    const int64_t n = len - r % std::max<int64_t>(1, len / 2);
    if (framed) {
      x[r][0] = ids.bos;
      x[r][n - 1] = ids.eos;
    }
    if (n < len) x[r].narrow(0, n, len - n).fill_(ids.pad);
  }
  return x;
}

}  // namespace zoo::bench
