#include "models/kernels/softmax_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include <ATen/Parallel.h>

#include "core/error.h"
#include "models/kernels/vectorize.h"

namespace zoo::models {

namespace {

constexpr int64_t kSoftmaxChunk = 2048;  // values of a row handled at a time, in fp32 (L1-sized)
constexpr int kLanes = 16;        // independent partial results, so that reductions vectorise

// sum_i e^(x_i - m), plus sum_i (x_i - x_i): 0, or NaN where a score is NaN or infinite.
ZOO_VECTOR_CLONES float chunk_sum_exp(const float* __restrict x, float* __restrict e, int64_t n, float m) {
  for (int64_t i = 0; i < n; ++i) e[i] = exp_cephes(x[i] - m) + (x[i] - x[i]);
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += e[i + k];
  float s = 0.0f;
  for (; i < n; ++i) s += e[i];
  for (float a : acc) s += a;
  return s;
}

// d_i = scale e^((x_i - m) - log_sum).
ZOO_VECTOR_CLONES void chunk_softmax(const float* __restrict x, float* __restrict d, int64_t n, float m, float log_sum,
                                     float scale) {
  for (int64_t i = 0; i < n; ++i) d[i] = scale * exp_cephes((x[i] - m) - log_sum);
}

// sum_i e^(x_i - m) (e^-inf counted as e^-87: nothing next to the e^0 of the maximum).
ZOO_VECTOR_CLONES float chunk_sum_exp_only(const float* __restrict x, int64_t n, float m) {
  float acc[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int k = 0; k < kLanes; ++k) acc[k] += exp_cephes(x[i + k] - m);
  float s = 0.0f;
  for (; i < n; ++i) s += exp_cephes(x[i] - m);
  for (float a : acc) s += a;
  return s;
}

// out_i = x_i - c.
ZOO_VECTOR_CLONES void chunk_subtract(const float* __restrict x, float* __restrict out, int64_t n, float c) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] - c;
}

// out_i = x_i + b_i (out may be x).
ZOO_VECTOR_CLONES void chunk_add(const float* x, const float* __restrict b, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] + b[i];
}

// acc_i += d_i.
ZOO_VECTOR_CLONES void chunk_accumulate(float* __restrict acc, const float* __restrict d, int64_t n) {
  for (int64_t i = 0; i < n; ++i) acc[i] += d[i];
}

// A row's scores a chunk at a time as fp32: the row itself (fp32), or a widened copy (bf16), plus
// the bias (fp32) where there is one.
template <typename T>
const float* chunk_of(const T* row, const float* bias, int64_t i, int64_t n, float* buffer) {
  const float* x = buffer;
  if constexpr (std::is_same_v<T, float>) x = row + i;
  else widen(row + i, buffer, n);
  if (!bias) return x;
  chunk_add(x, bias + i, buffer, n);
  return buffer;
}

// A row's maximum m and log sum_j e^(x_j - m), kept apart so that the loss (m - x_label) + log s
// and the gradient e^((x_j - m) - log s) keep fp32's precision at any m.
template <typename T>
std::pair<float, float> row_max_log_sum(const T* row, const float* bias, int64_t v) {
  alignas(64) float a[kSoftmaxChunk], e[kSoftmaxChunk];
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < v; i += kSoftmaxChunk) {
    const int64_t n = std::min(kSoftmaxChunk, v - i);
    m = std::max(m, max_of(chunk_of(row, bias, i, n, a), n));
  }
  if (!std::isfinite(m)) return {std::numeric_limits<float>::quiet_NaN(), 0.0f};  // all -inf, +inf or NaN
  float s = 0.0f;
  for (int64_t i = 0; i < v; i += kSoftmaxChunk) {
    const int64_t n = std::min(kSoftmaxChunk, v - i);
    s += chunk_sum_exp(chunk_of(row, bias, i, n, a), e, n, m);
  }
  return {m, std::log(s)};
}

// The row's gradient in place; added to bias_grad too where there is a bias.
template <typename T>
void row_gradient(T* row, const float* bias, int64_t v, float m, float log_sum, int64_t label, float scale,
                  float* bias_grad) {
  alignas(64) float a[kSoftmaxChunk], d[kSoftmaxChunk];
  for (int64_t i = 0; i < v; i += kSoftmaxChunk) {
    const int64_t n = std::min(kSoftmaxChunk, v - i);
    chunk_softmax(chunk_of(row, bias, i, n, a), d, n, m, log_sum, scale);
    if (label >= i && label < i + n) d[label - i] -= scale;
    if (bias_grad) chunk_accumulate(bias_grad + i, d, n);
    if constexpr (std::is_same_v<T, float>) std::copy(d, d + n, row + i);
    else narrow(d, row + i, n);
  }
}

void check(const torch::Tensor& logits, const torch::Tensor& labels, const torch::Tensor& bias) {
  if (!logits.device().is_cpu() || logits.dim() != 2 || !logits.is_contiguous() ||
      (logits.scalar_type() != torch::kFloat && logits.scalar_type() != torch::kBFloat16))
    throw Error("softmax_rows: the scores must be a contiguous fp32 or bf16 CPU matrix");
  if (labels.dim() != 1 || labels.size(0) != logits.size(0) || labels.scalar_type() != torch::kLong)
    throw Error("softmax_rows: one int64 label per row");
  if (bias.defined() && (!bias.device().is_cpu() || bias.dim() != 1 || bias.size(0) != logits.size(1)))
    throw Error("softmax_rows: the bias must be a CPU vector with one value per column");
}

// The bias as contiguous fp32, or undefined.
torch::Tensor fp32(const torch::Tensor& bias) {
  return bias.defined() ? bias.detach().to(torch::kFloat).contiguous() : bias;
}

const float* data_or_null(const torch::Tensor& t) { return t.defined() ? t.data_ptr<float>() : nullptr; }

template <typename T>
void rows_loss(const torch::Tensor& logits, const torch::Tensor& labels, const float* bias, int64_t ignore, float* stats,
               float* loss) {
  const T* x = data_as<T>(logits);
  const int64_t* y = labels.data_ptr<int64_t>();
  const int64_t v = logits.size(1);
  at::parallel_for(0, logits.size(0), 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const T* row = x + r * v;
      const auto [m, log_sum] = row_max_log_sum(row, bias, v);
      stats[2 * r] = m, stats[2 * r + 1] = log_sum;
      if (y[r] == ignore) {
        loss[r] = 0.0f;
        continue;
      }
      if (y[r] < 0 || y[r] >= v) throw Error(cat("softmax_rows: label ", y[r], " outside the ", v, " classes"));
      float target;
      if constexpr (std::is_same_v<T, float>) target = row[y[r]];
      else target = from_bf16(row[y[r]]);
      if (bias) target += bias[y[r]];
      loss[r] = (m - target) + log_sum;
    }
  });
}

// The rows in a fixed number of blocks, one per thread, each with its own bias-gradient
// accumulator (so the sum does not depend on the threads' timing), summed at the end.
template <typename T>
torch::Tensor rows_gradient(const torch::Tensor& logits, const float* stats, const torch::Tensor& labels,
                            const float* bias, float scale, int64_t ignore) {
  T* x = data_as<T>(logits);
  const int64_t* y = labels.data_ptr<int64_t>();
  const int64_t rows = logits.size(0), v = logits.size(1);
  const int64_t blocks = std::max<int64_t>(1, std::min<int64_t>(at::get_num_threads(), rows));
  const auto accumulators = bias ? torch::zeros({blocks, v}, torch::kFloat) : torch::Tensor();
  at::parallel_for(0, blocks, 1, [&](int64_t first, int64_t last) {
    for (int64_t k = first; k < last; ++k) {
      float* bias_grad = bias ? accumulators.data_ptr<float>() + k * v : nullptr;
      for (int64_t r = rows * k / blocks; r < rows * (k + 1) / blocks; ++r) {
        if (y[r] == ignore) std::fill(x + r * v, x + (r + 1) * v, T{0});
        else row_gradient(x + r * v, bias, v, stats[2 * r], stats[2 * r + 1], y[r], scale, bias_grad);
      }
    }
  });
  return bias ? accumulators.sum(0) : torch::Tensor();
}

}  // namespace

torch::Tensor log_softmax_rows(const torch::Tensor& x) {
  if (!x.device().is_cpu() || x.scalar_type() != torch::kFloat || x.dim() != 2 || x.stride(1) != 1 ||
      x.requires_grad())
    return torch::log_softmax(x, -1, torch::kFloat);
  const int64_t rows = x.size(0), v = x.size(1), stride = x.stride(0);
  auto out = torch::empty({rows, v}, torch::kFloat);
  const float* in = x.data_ptr<float>();
  float* o = out.data_ptr<float>();
  at::parallel_for(0, rows, 1, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const float* row = in + r * stride;
      const float m = max_of(row, v);
      chunk_subtract(row, o + r * v, v, m + std::log(chunk_sum_exp_only(row, v, m)));
    }
  });
  return out;
}

torch::Tensor log_mean_of_distributions(const std::vector<torch::Tensor>& log_probs) {
  return torch::logsumexp(torch::stack(log_probs), 0) - std::log(static_cast<double>(log_probs.size()));
}

std::pair<torch::Tensor, torch::Tensor> softmax_rows_loss(const torch::Tensor& logits, const torch::Tensor& labels,
                                                          int64_t ignore_index, const torch::Tensor& bias) {
  check(logits, labels, bias);
  const auto y = labels.contiguous();
  const auto b = fp32(bias);
  auto stats = torch::empty({logits.size(0), 2}, torch::kFloat), loss = torch::empty({logits.size(0)}, torch::kFloat);
  if (logits.scalar_type() == torch::kFloat)
    rows_loss<float>(logits, y, data_or_null(b), ignore_index, stats.data_ptr<float>(), loss.data_ptr<float>());
  else
    rows_loss<uint16_t>(logits, y, data_or_null(b), ignore_index, stats.data_ptr<float>(), loss.data_ptr<float>());
  return {stats, loss};
}

torch::Tensor softmax_rows_gradient_(torch::Tensor& logits, const torch::Tensor& stats, const torch::Tensor& labels,
                                     float scale, int64_t ignore_index, const torch::Tensor& bias) {
  check(logits, labels, bias);
  const auto y = labels.contiguous();
  const auto l = stats.contiguous();
  const auto b = fp32(bias);
  auto bias_grad = logits.scalar_type() == torch::kFloat
                       ? rows_gradient<float>(logits, l.data_ptr<float>(), y, data_or_null(b), scale, ignore_index)
                       : rows_gradient<uint16_t>(logits, l.data_ptr<float>(), y, data_or_null(b), scale, ignore_index);
  torch::autograd::impl::bump_version(logits);  // written through its data: autograd must know
  return bias_grad;
}

}  // namespace zoo::models
