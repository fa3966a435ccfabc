#include "models/kernels/one_query_attention.h"

#include <cmath>
#include <vector>

#include "models/kernels/vectorize.h"

namespace zoo::models {

namespace {

// scores[j] = scale <q, k_j> + mask[j] over `rows` keys k_j = k + j * ldk.
ZOO_VECTOR_CLONES void scaled_dots(const float* __restrict q, const float* __restrict k, int64_t ldk, int64_t rows,
                                   int64_t d, float scale, const float* __restrict mask, float* __restrict scores) {
  constexpr int kLanes = 16;  // independent sums, so that the loop vectorises
  for (int64_t j = 0; j < rows; ++j) {
    const float* kj = k + j * ldk;
    float acc[kLanes] = {};
    int64_t c = 0;
    for (; c + kLanes <= d; c += kLanes)
      for (int l = 0; l < kLanes; ++l) acc[l] += q[c + l] * kj[c + l];
    float s = 0.0f;
    for (; c < d; ++c) s += q[c] * kj[c];
    for (float a : acc) s += a;
    scores[j] = s * scale + (mask ? mask[j] : 0.0f);
  }
}

// scores := exp(scores - max) in place; returns their sum.
ZOO_VECTOR_CLONES float exp_shifted(float* __restrict scores, int64_t n, float max) {
  constexpr int kLanes = 16;
  float acc[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) acc[l] += scores[j + l] = exp_cephes(scores[j + l] - max);
  float sum = 0.0f;
  for (; j < n; ++j) sum += scores[j] = exp_cephes(scores[j] - max);
  for (float a : acc) sum += a;
  return sum;
}

// out = sum_j w[j] v_j * norm over `rows` value rows v_j = v + j * ldv of `dv` columns.
ZOO_VECTOR_CLONES void weighted_rows(const float* __restrict w, const float* __restrict v, int64_t ldv, int64_t rows,
                                     int64_t dv, float norm, float* __restrict out) {
  for (int64_t c = 0; c < dv; ++c) out[c] = 0.0f;
  for (int64_t j = 0; j < rows; ++j) {
    const float wj = w[j] * norm;
    const float* vj = v + j * ldv;
    for (int64_t c = 0; c < dv; ++c) out[c] += wj * vj[c];
  }
}

// The element offset of each matrix of t (its leading dimensions, in row-major order of `lead`).
std::vector<int64_t> matrix_offsets(const torch::Tensor& t, int64_t lead) {
  int64_t n = 1;
  for (int64_t a = 0; a < lead; ++a) n *= t.size(a);
  std::vector<int64_t> offsets(n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t rest = i, offset = 0;
    for (int64_t a = lead - 1; a >= 0; --a) {
      offset += (rest % t.size(a)) * t.stride(a);
      rest /= t.size(a);
    }
    offsets[i] = offset;
  }
  return offsets;
}

bool unit_rows(const torch::Tensor& t) { return t.size(-1) <= 1 || t.stride(-1) == 1; }

}  // namespace

bool one_query_attention_applies(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                 const torch::Tensor& mask, bool causal) {
  if (q.dim() < 3 || k.dim() != q.dim() || v.dim() != q.dim() || q.size(-2) != 1 || k.size(-2) < 1) return false;
  if (causal && k.size(-2) != 1) return false;
  for (const auto* t : {&q, &k, &v})
    if (!t->device().is_cpu() || t->scalar_type() != torch::kFloat || t->layout() != torch::kStrided || !unit_rows(*t))
      return false;
  if (mask.defined() && (!mask.device().is_cpu() || mask.scalar_type() != torch::kFloat)) return false;
  if (torch::GradMode::is_enabled() && (q.requires_grad() || k.requires_grad() || v.requires_grad() ||
                                        (mask.defined() && mask.requires_grad())))
    return false;
  const auto lead = q.sizes().slice(0, q.dim() - 2);
  return k.sizes().slice(0, q.dim() - 2) == lead && v.sizes().slice(0, q.dim() - 2) == lead &&
         k.size(-1) == q.size(-1) && v.size(-2) == k.size(-2);
}

torch::Tensor one_query_attention(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                  const torch::Tensor& mask) {
  TORCH_CHECK(one_query_attention_applies(q, k, v, mask, false), "one_query_attention: inputs it does not take");
  const int64_t lead = q.dim() - 2, tk = k.size(-2), d = q.size(-1), dv = v.size(-1);
  auto out_shape = q.sizes().vec();
  out_shape.back() = dv;
  auto out = torch::empty(out_shape, q.options());
  torch::Tensor m;
  if (mask.defined()) {
    auto shape = q.sizes().vec();
    shape.back() = tk;
    m = mask.expand(shape);
    if (!unit_rows(m)) m = m.contiguous();
  }
  const auto q_at = matrix_offsets(q, lead), k_at = matrix_offsets(k, lead), v_at = matrix_offsets(v, lead);
  const auto m_at = m.defined() ? matrix_offsets(m, lead) : std::vector<int64_t>();
  const float *pq = q.data_ptr<float>(), *pk = k.data_ptr<float>(), *pv = v.data_ptr<float>();
  const float* pm = m.defined() ? m.data_ptr<float>() : nullptr;
  float* po = out.data_ptr<float>();
  const int64_t ldk = k.stride(-2), ldv = v.stride(-2), n = static_cast<int64_t>(q_at.size());
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, tk * (d + dv)));
  at::parallel_for(0, n, grain, [&](int64_t begin, int64_t end) {
    std::vector<float> scores(tk);
    for (int64_t i = begin; i < end; ++i) {
      scaled_dots(pq + q_at[i], pk + k_at[i], ldk, tk, d, scale, pm ? pm + m_at[i] : nullptr, scores.data());
      const float sum = exp_shifted(scores.data(), tk, max_of(scores.data(), tk));
      weighted_rows(scores.data(), pv + v_at[i], ldv, tk, dv, 1.0f / sum, po + i * dv);
    }
  });
  return out;
}

}  // namespace zoo::models
