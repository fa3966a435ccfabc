#include "models/kernels/dropout.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

namespace zoo::models {

namespace {

// SplitMix64's output function of the k-th step from `seed`: 64 well-mixed bits per counter.
inline uint64_t mix(uint64_t seed, uint64_t k) {
  uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// out[i] = keep(i) ? in[i] * scale : 0 over n contiguous elements; element i is kept when its
// 32 bits (half of counter i / 2) are at least `threshold`.
template <typename T>
void masked_scale(const T* in, T* out, int64_t n, uint64_t seed, uint32_t threshold, float scale) {
  at::parallel_for(0, (n + 1) / 2, /*grain_size=*/16384, [&](int64_t begin, int64_t end) {
    auto keep = [&](int64_t i, uint32_t bits) {
      out[i] = bits >= threshold ? static_cast<T>(static_cast<float>(in[i]) * scale) : T(0);
    };
    for (int64_t k = begin; k < end; ++k) {
      const uint64_t bits = mix(seed, static_cast<uint64_t>(k));
      keep(2 * k, static_cast<uint32_t>(bits));
      if (2 * k + 1 < n) keep(2 * k + 1, static_cast<uint32_t>(bits >> 32));
    }
  });
}

torch::Tensor dropped(const torch::Tensor& x, uint64_t seed, double p) {
  const auto in = x.contiguous();
  auto out = torch::empty_like(in, torch::MemoryFormat::Contiguous);
  const auto threshold = static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kBFloat16, at::kHalf, in.scalar_type(), "zoo_dropout", [&] {
    masked_scale(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), in.numel(), seed, threshold, scale);
  });
  return out;
}

uint64_t draw_seed() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

struct CpuDropout : torch::autograd::Function<CpuDropout> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x, double p) {
    const uint64_t seed = draw_seed();
    ctx->saved_data["seed"] = static_cast<int64_t>(seed);
    ctx->saved_data["p"] = p;
    return dropped(x, seed, p);
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto seed = static_cast<uint64_t>(ctx->saved_data["seed"].toInt());
    return {dropped(grad[0], seed, ctx->saved_data["p"].toDouble()), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (!x.device().is_cpu() || p >= 1) return torch::dropout(x, p, training);
  return CpuDropout::apply(x, p);
}

}  // namespace zoo::models
