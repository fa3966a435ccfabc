#include "models/kernels/gelu.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <ATen/Parallel.h>

#include "models/kernels/vectorize.h"

namespace zoo::models {

const std::vector<std::string>& activation_names() {
  static const std::vector<std::string> names{"gelu", "gelu_new", "gelu_pytorch_tanh", "relu", "silu"};
  return names;
}

namespace {
// Exact GELU, x * Phi(x), that keeps Phi(x) from the forward pass for the backward one.
// LibTorch's own backward computes erf a second time; erf is the dearest function in a
// small ViT's training step on the CPU (see the README's Benchmarks), exp is cheaper.
struct GeluKeepCdf : torch::autograd::Function<GeluKeepCdf> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& x) {
    auto cdf = (x * M_SQRT1_2).erf_().add_(1).mul_(0.5);
    ctx->save_for_backward({x, cdf});
    return x * cdf;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto saved = ctx->get_saved_variables();
    const auto& x = saved[0];
    const auto& cdf = saved[1];
    constexpr double kInvSqrt2Pi = 0.3989422804014327;  // 1 / sqrt(2 pi)
    auto dx = x.square().mul_(-0.5).exp_().mul_(kInvSqrt2Pi).mul_(x).add_(cdf).mul_(grad[0]);
    return {dx};
  }
};

// GELU with the tanh approximation (gelu_new), as 0.5 x (1 + tanh(z)) = x sigmoid(2 z) with
// z = sqrt(2 / pi) (x + 0.044715 x^3), in one pass over the tensor each way; e^x is
// vectorize.h's exp_cephes. Faster than LibTorch's gelu and gelu_backward on
// the CPU, in fp32 and in bf16 (docs/results.md, Benchmarks).
constexpr float kSqrt2OverPi = 0.7978845608028654f, kCubic = 0.044715f;


// sigmoid(2 z(x)): GELU(x) = x gate(x).
inline float gate(float x) { return 1.0f / (1.0f + exp_cephes(-2.0f * kSqrt2OverPi * (x + kCubic * x * x * x))); }

ZOO_VECTOR_CLONES void gelu_tanh_forward(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * gate(x[i]);
}

// d/dx [x s] = s + x s (1 - s) 2 sqrt(2 / pi) (1 + 3 * 0.044715 x^2), s = gate(x).
ZOO_VECTOR_CLONES void gelu_tanh_backward(const float* __restrict x, const float* __restrict g, float* __restrict dx,
                                          int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i], s = gate(v);
    const float dz = 2.0f * kSqrt2OverPi * (1.0f + 3.0f * kCubic * v * v);
    dx[i] = g[i] * (s + v * s * (1.0f - s) * dz);
  }
}

// The fp32 kernels over bf16 tensors, a cache-sized chunk at a time.
constexpr int64_t kChunk = 2048;
void gelu_tanh_forward(const uint16_t* x, uint16_t* y, int64_t n) {
  alignas(64) float a[kChunk], b[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    widen(x + i, a, m);
    gelu_tanh_forward(a, b, m);
    narrow(b, y + i, m);
  }
}
void gelu_tanh_backward(const uint16_t* x, const uint16_t* g, uint16_t* dx, int64_t n) {
  alignas(64) float a[kChunk], b[kChunk], c[kChunk];
  for (int64_t i = 0; i < n; i += kChunk) {
    const int64_t m = std::min(kChunk, n - i);
    widen(x + i, a, m);
    widen(g + i, b, m);
    gelu_tanh_backward(a, b, c, m);
    narrow(c, dx + i, m);
  }
}

// fp32 or bf16 data of a CPU tensor, as the kernels take it.
template <typename T>
T* data(const torch::Tensor& t) {
  if constexpr (std::is_same_v<T, float>) return t.data_ptr<float>();
  else return reinterpret_cast<uint16_t*>(t.data_ptr<c10::BFloat16>());
}

template <typename F>
void in_chunks(int64_t n, const F& fn) {
  at::parallel_for(0, n, /*grain_size=*/32768, [&](int64_t begin, int64_t end) { fn(begin, end - begin); });
}

struct GeluTanh : torch::autograd::Function<GeluTanh> {
  template <typename T>
  static void forward_of(const torch::Tensor& x, const torch::Tensor& y) {
    const T* px = data<T>(x);
    T* py = data<T>(y);
    in_chunks(x.numel(), [&](int64_t i, int64_t n) { gelu_tanh_forward(px + i, py + i, n); });
  }
  template <typename T>
  static void backward_of(const torch::Tensor& x, const torch::Tensor& g, const torch::Tensor& dx) {
    const T *px = data<T>(x), *pg = data<T>(g);
    T* pdx = data<T>(dx);
    in_chunks(x.numel(), [&](int64_t i, int64_t n) { gelu_tanh_backward(px + i, pg + i, pdx + i, n); });
  }

  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input) {
    auto x = input.contiguous();
    auto y = torch::empty_like(x);
    x.scalar_type() == torch::kFloat ? forward_of<float>(x, y) : forward_of<uint16_t>(x, y);
    ctx->save_for_backward({x});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto x = ctx->get_saved_variables()[0];
    const auto g = grad[0].to(x.scalar_type()).contiguous();
    auto dx = torch::empty_like(x);
    x.scalar_type() == torch::kFloat ? backward_of<float>(x, g, dx) : backward_of<uint16_t>(x, g, dx);
    return {dx};
  }
};
}  // namespace

torch::Tensor activation(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu") {
    if (x.device().is_cpu() && x.requires_grad() && torch::GradMode::is_enabled()) return GeluKeepCdf::apply(x);
    return torch::gelu(x);
  }
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") {
    const auto t = x.scalar_type();
    if (x.device().is_cpu() && (t == torch::kFloat || t == torch::kBFloat16)) return GeluTanh::apply(x);
    return torch::gelu(x, "tanh");
  }
  if (name == "relu") return torch::relu(x);
  if (name == "silu") return torch::silu(x);
  TORCH_CHECK(false, "unknown activation '", name, "'");
}

}  // namespace zoo::models
