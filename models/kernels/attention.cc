#include "models/kernels/attention.h"

#include <cmath>
#include <limits>

#include <dlfcn.h>

#include <torch/version.h>

#include "core/threads.h"
#include "models/kernels/dropout.h"
#include "models/kernels/one_query_attention.h"

namespace zoo::models {

torch::Tensor attention_math(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                             const torch::Tensor& mask, double p, bool causal) {
  const int64_t tq = q.size(-2), tk = k.size(-2), d = q.size(-1);
  // Scale q rather than the (T x T) scores: fewer multiplications, same result.
  const auto qs = q * (1.0 / std::sqrt(static_cast<double>(d)));
  const auto future =  // the causal mask: true above the diagonal
      causal ? torch::ones({tq, tk}, torch::TensorOptions().dtype(torch::kBool).device(q.device())).triu(1)
             : torch::Tensor();
  const double minus_inf = -std::numeric_limits<double>::infinity();
  torch::Tensor scores;
  if (mask.defined() && mask.dim() > 2) {  // a mask per example (padding): added to the scores
    scores = torch::matmul(qs, k.transpose(-2, -1));
    if (causal) scores = scores.masked_fill(future, minus_inf);
    scores = scores + mask;
  } else {
    // One (tq, tk) additive mask for every example (the causal part, a shared mask): the
    // batched product starts from it (baddbmm), instead of a pass of its own over the scores
    // forward and backward.
    torch::Tensor additive;
    if (causal) additive = torch::zeros({tq, tk}, qs.options()).masked_fill_(future, minus_inf);
    if (mask.defined()) additive = additive.defined() ? additive + mask.to(qs.scalar_type()) : mask.to(qs.scalar_type());
    auto batch = q.sizes().vec();
    batch.back() = tk;
    auto q3 = qs.reshape({-1, tq, d}), kt = k.reshape({-1, tk, d}).transpose(1, 2);
    scores = (additive.defined() ? torch::baddbmm(additive, q3, kt) : torch::bmm(q3, kt)).view(batch);
  }
  auto weights = torch::softmax(scores, -1);
  weights = apply_dropout(weights, p, /*training=*/true);
  return torch::matmul(weights, v);
}

namespace {

#if TORCH_VERSION_MAJOR < 2
// Fortran BLAS sgemm (column-major), which LibTorch's CPU build links: looked up once,
// null when LibTorch was built without a BLAS library.
using SgemmFn = void (*)(const char*, const char*, const int*, const int*, const int*, const float*, const float*,
                         const int*, const float*, const int*, const float*, float*, const int*);
SgemmFn blas_sgemm() {
  static const auto fn = reinterpret_cast<SgemmFn>(dlsym(RTLD_DEFAULT, "sgemm_"));
  return fn;
}

// c[i] = alpha * op(a[i]) op(b[i]) over fp32 CPU tensors (N, ., .) of dense row-major matrices
// (c contiguous; a and b any step between matrices), with op the transpose where `ta`/`tb`. LibTorch 1.13's bmm takes a tensor view and a dispatched mm
// per matrix, which for attention's small matrices costs more than the product itself (see
// the README's Benchmarks); here each matrix is one BLAS call on raw pointers. Falls back to bmm without a BLAS.
// Whether t's matrices (its last two dimensions) are dense rows, whatever the step between
// matrices: what batched_matmul reads without a copy (a key/value cache with room to grow).
bool dense_matrices(const torch::Tensor& t) {
  return t.dim() == 3 && t.stride(2) == 1 && t.stride(1) == t.size(2) && t.stride(0) >= t.size(1) * t.size(2);
}

// t as (N, rows, cols) with dense matrices: a view when it has them, else a copy.
torch::Tensor as_matrices(const torch::Tensor& t, int64_t rows, int64_t cols) {
  auto m = t.reshape({-1, rows, cols});
  return dense_matrices(m) ? m : m.contiguous();
}

void batched_matmul(const torch::Tensor& a, bool ta, const torch::Tensor& b, bool tb, torch::Tensor& c,
                    double alpha = 1.0) {
  const auto sgemm = blas_sgemm();
  const int64_t n_mat = c.size(0), rows = c.size(1), cols = c.size(2), inner = ta ? a.size(1) : a.size(2);
  const int64_t int_max = std::numeric_limits<int>::max();
  const bool fits = rows < int_max && cols < int_max && inner < int_max && a.size(2) < int_max;
  if (!sgemm || c.scalar_type() != torch::kFloat || a.scalar_type() != torch::kFloat ||
      b.scalar_type() != torch::kFloat || !dense_matrices(a) || !dense_matrices(b) || !c.is_contiguous() || !fits) {
    at::bmm_out(c, ta ? a.transpose(1, 2) : a, tb ? b.transpose(1, 2) : b);
    if (alpha != 1.0) c.mul_(alpha);
    return;
  }
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: B first.
  const int m = static_cast<int>(rows), n = static_cast<int>(cols), k = static_cast<int>(inner);
  const int ldb = tb ? k : n, lda = ta ? m : k;
  const char opb = tb ? 'T' : 'N', opa = ta ? 'T' : 'N';
  const float al = static_cast<float>(alpha), zero = 0.0f;
  const float *pa = a.data_ptr<float>(), *pb = b.data_ptr<float>();
  float* pc = c.data_ptr<float>();
  const int64_t sa = a.stride(0), sb = b.stride(0), sc = rows * cols;
  for (int64_t i = 0; i < n_mat; ++i) sgemm(&opb, &opa, &n, &m, &k, &al, pb + i * sb, &ldb, pa + i * sa, &lda, &zero, pc + i * sc, &n);
}

// Attention on the CPU with LibTorch 1.x, whose batched matrix product is a serial loop of
// one small GEMM per (batch x head): with 50-token ViT attention that loop was most of a
// training step and a second core did nothing for it. Here each thread takes one contiguous
// slice of the (batch x head) matrices, forward and backward, so every core runs its own
// loop. The arithmetic of attention_math (no dropout: that case stays on the math path),
// up to rounding: the 1/sqrt(d) scale is applied inside the matrix product.
struct CpuAttention : torch::autograd::Function<CpuAttention> {
  // Runs fn(begin, end) over [0, n) in one slice per thread (inline when already inside a
  // parallel region, e.g. the trainer's per-core batch slices). OpenBLAS (pthreads build)
  // is single-threaded meanwhile: with its own pool enabled, small GEMMs from two threads
  // fight over the cores and run barely faster than from one.
  template <typename F>
  static void per_thread(int64_t n, const F& fn) {
    ScopedSingleThreadedBlas blas;
    const bool grad_mode = torch::GradMode::is_enabled();  // thread-local: carry it to the workers
    at::parallel_for(0, n, /*grain_size=*/1, [&](int64_t begin, int64_t end) {
      torch::AutoGradMode mode(grad_mode);
      fn(begin, end);
    });
  }

  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q, const torch::Tensor& k,
                               const torch::Tensor& v, const c10::optional<torch::Tensor>& mask, bool causal) {
    const int64_t tq = q.size(-2), tk = k.size(-2), d = q.size(-1), dv = v.size(-1);
    auto out_shape = q.sizes().vec();
    out_shape.back() = dv;
    auto q3 = as_matrices(q, tq, d), k3 = as_matrices(k, tk, d), v3 = as_matrices(v, tk, dv);
    const int64_t n = q3.size(0);
    torch::Tensor m3;
    if (mask) {
      auto batch = q.sizes().vec();
      batch.back() = tk;
      m3 = mask->expand(batch).reshape({n, tq, tk});
    }
    torch::Tensor keep;
    if (causal) keep = torch::ones({tq, tk}, q.options().dtype(torch::kBool)).tril();
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    auto probs = torch::empty({n, tq, tk}, q.options());
    auto out = torch::empty({n, tq, dv}, q.options());
    per_thread(n, [&](int64_t b, int64_t e) {
      auto s = probs.slice(0, b, e);
      batched_matmul(q3.slice(0, b, e), false, k3.slice(0, b, e), true, s, scale);
      if (causal) s.masked_fill_(keep.logical_not(), -std::numeric_limits<double>::infinity());
      if (m3.defined()) s.add_(m3.slice(0, b, e));
      s.copy_(at::softmax(s, -1));
      auto o = out.slice(0, b, e);
      batched_matmul(s, false, v3.slice(0, b, e), false, o);
    });
    ctx->save_for_backward({q3, k3, v3, probs});
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["q_shape"] = q.sizes().vec();
    ctx->saved_data["k_shape"] = k.sizes().vec();
    ctx->saved_data["v_shape"] = v.sizes().vec();
    return out.view(out_shape);
  }

  static torch::autograd::tensor_list backward(torch::autograd::AutogradContext* ctx,
                                               torch::autograd::tensor_list grads) {
    auto saved = ctx->get_saved_variables();
    const auto &q3 = saved[0], &k3 = saved[1], &v3 = saved[2], &probs = saved[3];
    const double scale = ctx->saved_data["scale"].toDouble();
    auto go = grads[0].reshape({q3.size(0), q3.size(1), v3.size(2)}).contiguous();
    auto gq = torch::empty_like(q3), gk = torch::empty_like(k3), gv = torch::empty_like(v3);
    per_thread(q3.size(0), [&](int64_t b, int64_t e) {
      auto p = probs.slice(0, b, e), g = go.slice(0, b, e);
      auto gvs = gv.slice(0, b, e), gqs = gq.slice(0, b, e), gks = gk.slice(0, b, e);
      batched_matmul(p, true, g, false, gvs);
      auto gp = torch::empty_like(p);
      batched_matmul(g, false, v3.slice(0, b, e), true, gp);               // dL/dprobs
      gp.sub_((gp * p).sum(-1, /*keepdim=*/true)).mul_(p);                  // dL/dscores (softmax)
      batched_matmul(gp, false, k3.slice(0, b, e), false, gqs, scale);
      batched_matmul(gp, true, q3.slice(0, b, e), false, gks, scale);
    });
    return {gq.view(ctx->saved_data["q_shape"].toIntVector()), gk.view(ctx->saved_data["k_shape"].toIntVector()),
            gv.view(ctx->saved_data["v_shape"].toIntVector()), torch::Tensor(), torch::Tensor()};
  }
};
#endif

}  // namespace

torch::Tensor scaled_dot_product_attention(const torch::Tensor& q, const torch::Tensor& k,
                                           const torch::Tensor& v, const torch::Tensor& mask,
                                           double dropout_p, bool training, bool causal) {
  const double p = training ? dropout_p : 0.0;
#if TORCH_VERSION_MAJOR >= 2
  if (causal && mask.defined()) {
    // LibTorch's fused attention takes a mask or is_causal, not both: fold the causal part
    // (top-left aligned, as is_causal) into the additive mask.
    auto future = torch::ones({q.size(-2), k.size(-2)}, q.options().dtype(torch::kBool)).triu(1);
    auto causal_mask = torch::zeros({q.size(-2), k.size(-2)}, mask.options())
                           .masked_fill(future, -std::numeric_limits<double>::infinity());
    return at::scaled_dot_product_attention(q, k, v, mask + causal_mask, p, false);
  }
  return at::scaled_dot_product_attention(q, k, v, mask.defined() ? c10::optional<at::Tensor>(mask) : c10::nullopt,
                                          p, causal);
#else
  // The kernel computes in fp32 and gives the mask no gradient: double inputs, bf16 ones (bf16
  // autocast, whose matrix products on the math path run in bf16: faster at GPT's 256
  // positions, the same at ViT's 17, see the README's Benchmarks) and a learned mask (e.g. a
  // position bias) take the math path.
  if (p == 0 && q.device().is_cpu() && q.scalar_type() == torch::kFloat && !(mask.defined() && mask.requires_grad())) {
    const auto additive = mask.defined() ? mask.to(torch::kFloat) : mask;
    if (one_query_attention_applies(q, k, v, additive, causal)) return one_query_attention(q, k, v, additive);  // decoding
    return CpuAttention::apply(q, k, v, additive.defined() ? c10::make_optional(additive) : c10::nullopt,
                               causal);
  }
  return attention_math(q, k, v, mask, p, causal);
#endif
}

}  // namespace zoo::models
