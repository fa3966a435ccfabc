#include "models/kernels/onednn_linear.h"

#include <array>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "models/autocast_state.h"
#include "models/kernels/few_rows_linear.h"
#include "models/kernels/fp32_product.h"

#include "models/kernels/onednn.h"  // ZOO_WITH_ONEDNN, and oneDNN where it is 1

namespace zoo::models {

namespace {

#if ZOO_WITH_ONEDNN
using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// C (m, n) = op(A) op(B) (+ bias (n)), all fp32 row-major; op(A) (m, k) is A (k, m) read
/// transposed where a_t, op(B) (k, n) B (n, k) where b_t.
struct Gemm {
  int64_t m, k, n;
  bool a_t, b_t;
};

struct Matmul {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};

// One matmul per (k, n, layouts, bias), built on first use. The rows are a runtime dimension
// (a decoding's row count changes every step, a training batch's with its longest text), and so
// is k where it is the rows of a weight's gradient (op(A) = A^T).
const Matmul& matmul_for(const Gemm& g, bool bias) {
  static std::mutex mutex;
  static std::map<std::array<int64_t, 5>, Matmul> built;
  const int64_t k = g.a_t ? DNNL_RUNTIME_DIM_VAL : g.k;
  const std::array<int64_t, 5> key{k, g.n, g.a_t, g.b_t, bias};
  std::lock_guard<std::mutex> lock(mutex);
  if (auto it = built.find(key); it != built.end()) return it->second;
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // each thread its own (onednn::scratchpad)
  const dnnl::memory::desc a({DNNL_RUNTIME_DIM_VAL, k}, dt::f32, g.a_t ? tag::ba : tag::ab),
      b({k, g.n}, dt::f32, g.b_t ? tag::ba : tag::ab), bias_desc({1, g.n}, dt::f32, tag::ab),
      c({DNNL_RUNTIME_DIM_VAL, g.n}, dt::f32, tag::ab);
  const auto desc = bias ? dnnl::matmul::desc(a, b, bias_desc, c) : dnnl::matmul::desc(a, b, c);
  dnnl::matmul::primitive_desc pd(desc, attr, onednn::cpu());
  dnnl::matmul primitive(pd);
  return built.emplace(key, Matmul{pd, primitive}).first->second;
}

void gemm(const Gemm& g, const float* a, const float* b, const float* bias, float* c) {
  const auto& mm = matmul_for(g, bias != nullptr);
  auto& engine = onednn::cpu();
  auto ptr = [](const float* p) { return const_cast<float*>(p); };
  std::unordered_map<int, dnnl::memory> args{
      {DNNL_ARG_SRC, dnnl::memory({{g.m, g.k}, dt::f32, g.a_t ? tag::ba : tag::ab}, engine, ptr(a))},
      {DNNL_ARG_WEIGHTS, dnnl::memory({{g.k, g.n}, dt::f32, g.b_t ? tag::ba : tag::ab}, engine, ptr(b))},
      {DNNL_ARG_DST, dnnl::memory({{g.m, g.n}, dt::f32, tag::ab}, engine, c)},
      {DNNL_ARG_SCRATCHPAD, onednn::scratchpad(mm.pd)}};
  if (bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory({{1, g.n}, dt::f32, tag::ab}, engine, ptr(bias)));
  mm.primitive.execute(onednn::stream(), args);
  onednn::stream().wait();
}

// rows (M, K) W^T (+ b): (M, N).
torch::Tensor forward_product(const torch::Tensor& rows, const torch::Tensor& weight, const torch::Tensor& bias) {
  const int64_t m = rows.size(0), k = rows.size(1), n = weight.size(0);
  auto y = torch::empty({m, n}, rows.options());
  gemm({m, k, n, false, true}, rows.data_ptr<float>(), weight.data_ptr<float>(),
       bias.defined() ? bias.data_ptr<float>() : nullptr, y.data_ptr<float>());
  return y;
}

// x W^T on 2-d rows, with the backward through the same matmul: dx = dy W, dW = dy^T x. (The
// bias is added outside it: LibTorch 1.13's custom functions take no undefined inputs.)
struct LinearFunction : torch::autograd::Function<LinearFunction> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& rows,
                               const torch::Tensor& weight) {
    ctx->save_for_backward({rows, weight});
    return forward_product(rows, weight, {});
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    const auto saved = ctx->get_saved_variables();
    const auto &rows = saved[0], &weight = saved[1];
    const auto dy = grads[0].contiguous();
    const int64_t m = rows.size(0), k = rows.size(1), n = weight.size(0);
    torch::Tensor dx, dw;
    if (ctx->needs_input_grad(0)) {
      dx = torch::empty({m, k}, rows.options());
      gemm({m, n, k, false, false}, dy.data_ptr<float>(), weight.data_ptr<float>(), nullptr, dx.data_ptr<float>());
    }
    if (ctx->needs_input_grad(1)) {
      dw = torch::empty({n, k}, weight.options());
      gemm({n, m, k, true, false}, dy.data_ptr<float>(), rows.data_ptr<float>(), nullptr, dw.data_ptr<float>());
    }
    return {dx, dw};
  }
};
#endif

// ZOO_ONEDNN_LINEAR=0 leaves every product to LibTorch (for comparisons).
bool enabled() {
  static const bool on = [] {
    const char* v = std::getenv("ZOO_ONEDNN_LINEAR");
    return !(v && std::strcmp(v, "0") == 0);
  }();
  return on;
}

}  // namespace

bool has_onednn_linear() { return ZOO_WITH_ONEDNN != 0; }

bool onednn_linear_applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (!has_onednn_linear() || !enabled() || AutocastState::current().cpu) return false;
  return fp32_cpu_product_rows(x, weight, bias) > kFewRowsMax;
}

torch::Tensor onednn_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
#if ZOO_WITH_ONEDNN
  const int64_t k = weight.size(1), n = weight.size(0);
  const auto rows = x.reshape({-1, k}).contiguous();
  auto y = !records_graph(x, weight, bias) ? forward_product(rows, weight, bias)
                  : bias.defined() ? LinearFunction::apply(rows, weight) + bias : LinearFunction::apply(rows, weight);
  auto sizes = x.sizes().vec();
  sizes.back() = n;
  return y.view(sizes);
#else
  (void)x, (void)weight, (void)bias;
  TORCH_CHECK(false, "onednn_linear: this build has no oneDNN (onednn_linear_applies says so)");
#endif
}

}  // namespace zoo::models
