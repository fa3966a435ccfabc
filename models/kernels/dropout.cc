#include "models/kernels/dropout.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>

#include "models/kernels/vectorize.h"

namespace zoo::models {

namespace {

// SplitMix64's output function of the k-th step from `seed`: 64 well-mixed bits per counter.
inline uint64_t mix(uint64_t seed, uint64_t k) {
  uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The fp32 and bf16 loops below are branch-free so that GCC vectorises them; SplitMix64's
// 64-bit multiplications need AVX-512DQ for that (vpmullq).

// Element i is kept when its 32 bits (half of counter i / 2) are at least `threshold`:
// out[i] = in[i] * scale if kept, else 0. Over `pairs` pairs of contiguous elements, the
// first taking counter `first`.
ZOO_VECTOR_CLONES_V4 void scale_pairs(const float* __restrict in, float* __restrict out, int64_t pairs, int64_t first,
                                    uint64_t seed, uint32_t threshold, float scale) {
  for (int64_t k = 0; k < pairs; ++k) {
    const uint64_t bits = mix(seed, static_cast<uint64_t>(first + k));
    const float a = in[2 * k] * scale, b = in[2 * k + 1] * scale;  // loaded unconditionally: vectorisable
    out[2 * k] = static_cast<uint32_t>(bits) >= threshold ? a : 0.f;
    out[2 * k + 1] = static_cast<uint32_t>(bits >> 32) >= threshold ? b : 0.f;
  }
}

// bf16 as raw bits (vectorize.h's conversions).
ZOO_VECTOR_CLONES_V4 void scale_pairs(const uint16_t* __restrict in, uint16_t* __restrict out, int64_t pairs,
                                    int64_t first, uint64_t seed, uint32_t threshold, float scale) {
  for (int64_t k = 0; k < pairs; ++k) {
    const uint64_t bits = mix(seed, static_cast<uint64_t>(first + k));
    const float a = from_bf16(in[2 * k]) * scale, b = from_bf16(in[2 * k + 1]) * scale;
    out[2 * k] = to_bf16(static_cast<uint32_t>(bits) >= threshold ? a : 0.f);
    out[2 * k + 1] = to_bf16(static_cast<uint32_t>(bits >> 32) >= threshold ? b : 0.f);
  }
}

// The same for any other element type, one element at a time.
template <typename T>
void scale_pairs(const T* in, T* out, int64_t pairs, int64_t first, uint64_t seed, uint32_t threshold, float scale) {
  for (int64_t k = 0; k < pairs; ++k) {
    const uint64_t bits = mix(seed, static_cast<uint64_t>(first + k));
    out[2 * k] = static_cast<uint32_t>(bits) >= threshold ? static_cast<T>(static_cast<float>(in[2 * k]) * scale) : T(0);
    out[2 * k + 1] =
        static_cast<uint32_t>(bits >> 32) >= threshold ? static_cast<T>(static_cast<float>(in[2 * k + 1]) * scale) : T(0);
  }
}

// Over n contiguous elements, the pairs in parallel, then the last element when n is odd.
template <typename T>
void masked_scale(const T* in, T* out, int64_t n, uint64_t seed, uint32_t threshold, float scale) {
  at::parallel_for(0, n / 2, /*grain_size=*/16384, [&](int64_t begin, int64_t end) {
    scale_pairs(in + 2 * begin, out + 2 * begin, end - begin, begin, seed, threshold, scale);
  });
  if (n % 2) {  // the last element, through a pair of its own (its partner a zero)
    T pair_in[2] = {in[n - 1], T(0)}, pair_out[2];
    scale_pairs(pair_in, pair_out, 1, n / 2, seed, threshold, scale);
    out[n - 1] = pair_out[0];
  }
}

torch::Tensor dropped(const torch::Tensor& x, uint64_t seed, double p) {
  const auto in = x.contiguous();
  auto out = torch::empty_like(in, torch::MemoryFormat::Contiguous);
  const auto threshold = static_cast<uint32_t>(std::min(p * 4294967296.0, 4294967295.0));
  const auto scale = static_cast<float>(1.0 / (1.0 - p));
  if (in.scalar_type() == at::kBFloat16) {
    masked_scale(reinterpret_cast<const uint16_t*>(in.data_ptr()), reinterpret_cast<uint16_t*>(out.data_ptr()),
                 in.numel(), seed, threshold, scale);
    return out;
  }
  AT_DISPATCH_FLOATING_TYPES_AND(at::kHalf, in.scalar_type(), "zoo_dropout", [&] {
    masked_scale(in.data_ptr<scalar_t>(), out.data_ptr<scalar_t>(), in.numel(), seed, threshold, scale);
  });
  return out;
}

// This thread's seed stream (DropoutSeedStream), when one is open.
struct SeedStream {
  bool open = false;
  uint64_t base = 0, next = 0;
};
thread_local SeedStream stream;

uint64_t draw_seed() {
  if (stream.open) return mix(stream.base, stream.next++);
  return draw_dropout_seed();
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

uint64_t draw_dropout_seed() {
  auto gen = at::detail::getDefaultCPUGenerator();
  std::lock_guard<std::mutex> lock(gen.mutex());
  return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
}

DropoutSeedStream::DropoutSeedStream(uint64_t base) : had_(stream.open), base_(stream.base), next_(stream.next) {
  stream = SeedStream{true, base, 0};
}

DropoutSeedStream::~DropoutSeedStream() { stream = SeedStream{had_, base_, next_}; }

torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training) {
  if (!training || p <= 0) return x;
  if (!x.device().is_cpu() || p >= 1) return torch::dropout(x, p, training);
  return CpuDropout::apply(x, p);
}

}  // namespace zoo::models
