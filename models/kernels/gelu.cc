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

// Exact GELU, x Phi(x), with Phi(x) = 1 - q(x) for x >= 0 and q(|x|) for x < 0, where
// q(x) = erfc(x / sqrt 2) / 2 is Abramowitz & Stegun's 7.1.26 (erf to 1.5e-7): a degree-5
// polynomial in t = 1 / (1 + p x / sqrt 2) times e^(-x^2 / 2), so that the left tail is not
// lost to cancellation (1 - erf), and one exp_cephes does per element what LibTorch's erf does
// (not vectorised for bf16 in 1.13, and computed twice by its backward pass).
inline float normal_cdf(float x) {
  const float z = std::fabs(x) * 0.70710678118654752f;
  const float t = 1.0f / (1.0f + 0.3275911f * z);
  const float poly = t * (0.254829592f + t * (-0.284496736f + t * (1.421413741f + t * (-1.453152027f + t * 1.061405429f))));
  const float q = 0.5f * poly * exp_cephes(-z * z);
  return x < 0.0f ? q : 1.0f - q;
}

ZOO_VECTOR_CLONES void gelu_erf_forward(const float* __restrict x, float* __restrict y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * normal_cdf(x[i]);
}

// d/dx [x Phi(x)] = Phi(x) + x phi(x), phi(x) = e^(-x^2 / 2) / sqrt(2 pi).
ZOO_VECTOR_CLONES void gelu_erf_backward(const float* __restrict x, const float* __restrict g, float* __restrict dx,
                                         int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    dx[i] = g[i] * (normal_cdf(v) + v * 0.3989422804014327f * exp_cephes(-0.5f * v * v));
  }
}

// A pair of fp32 kernels: y = f(x), and dx = g f'(x).
struct GeluKernels {
  void (*forward)(const float*, float*, int64_t);
  void (*backward)(const float*, const float*, float*, int64_t);
};
const GeluKernels kErf{gelu_erf_forward, gelu_erf_backward}, kTanh{gelu_tanh_forward, gelu_tanh_backward};

// The fp32 kernels over bf16 tensors, a cache-sized chunk at a time.
constexpr int64_t kGeluChunk = 2048;
void forward_bf16(const GeluKernels& k, const uint16_t* x, uint16_t* y, int64_t n) {
  alignas(64) float a[kGeluChunk], b[kGeluChunk];
  for (int64_t i = 0; i < n; i += kGeluChunk) {
    const int64_t m = std::min(kGeluChunk, n - i);
    widen(x + i, a, m);
    k.forward(a, b, m);
    narrow(b, y + i, m);
  }
}
void backward_bf16(const GeluKernels& k, const uint16_t* x, const uint16_t* g, uint16_t* dx, int64_t n) {
  alignas(64) float a[kGeluChunk], b[kGeluChunk], c[kGeluChunk];
  for (int64_t i = 0; i < n; i += kGeluChunk) {
    const int64_t m = std::min(kGeluChunk, n - i);
    widen(x + i, a, m);
    widen(g + i, b, m);
    k.backward(a, b, c, m);
    narrow(c, dx + i, m);
  }
}

template <typename F>
void in_chunks(int64_t n, const F& fn) {
  at::parallel_for(0, n, /*grain_size=*/32768, [&](int64_t begin, int64_t end) { fn(begin, end - begin); });
}

// GELU on fp32 or bf16 CPU tensors through a kernel pair; the backward pass recomputes from x.
template <const GeluKernels& K>
struct GeluCpu : torch::autograd::Function<GeluCpu<K>> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& input) {
    auto x = input.contiguous();
    auto y = torch::empty_like(x);
    const int64_t n = x.numel();
    if (x.scalar_type() == torch::kFloat) {
      const float* px = x.data_ptr<float>();
      float* py = y.data_ptr<float>();
      in_chunks(n, [&](int64_t i, int64_t m) { K.forward(px + i, py + i, m); });
    } else {
      const uint16_t* px = data_as<uint16_t>(x);
      uint16_t* py = data_as<uint16_t>(y);
      in_chunks(n, [&](int64_t i, int64_t m) { forward_bf16(K, px + i, py + i, m); });
    }
    ctx->save_for_backward({x});
    return y;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad) {
    const auto x = ctx->get_saved_variables()[0];
    const auto g = grad[0].to(x.scalar_type()).contiguous();
    auto dx = torch::empty_like(x);
    const int64_t n = x.numel();
    if (x.scalar_type() == torch::kFloat) {
      const float *px = x.data_ptr<float>(), *pg = g.data_ptr<float>();
      float* pdx = dx.data_ptr<float>();
      in_chunks(n, [&](int64_t i, int64_t m) { K.backward(px + i, pg + i, pdx + i, m); });
    } else {
      const uint16_t *px = data_as<uint16_t>(x), *pg = data_as<uint16_t>(g);
      uint16_t* pdx = data_as<uint16_t>(dx);
      in_chunks(n, [&](int64_t i, int64_t m) { backward_bf16(K, px + i, pg + i, pdx + i, m); });
    }
    return {dx};
  }
};

bool on_cpu_kernel(const torch::Tensor& x) {
  const auto t = x.scalar_type();
  return x.device().is_cpu() && (t == torch::kFloat || t == torch::kBFloat16);
}
}  // namespace

torch::Tensor activation(const std::string& name, const torch::Tensor& x) {
  if (name == "gelu") return on_cpu_kernel(x) ? GeluCpu<kErf>::apply(x) : torch::gelu(x);
  if (name == "gelu_new" || name == "gelu_pytorch_tanh") return on_cpu_kernel(x) ? GeluCpu<kTanh>::apply(x) : torch::gelu(x, "tanh");
  if (name == "relu") return torch::relu(x);
  if (name == "silu") return torch::silu(x);
  TORCH_CHECK(false, "unknown activation '", name, "'");
}

}  // namespace zoo::models
