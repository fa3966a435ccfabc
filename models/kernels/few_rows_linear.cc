#include "models/kernels/few_rows_linear.h"

#include <algorithm>
#include <utility>

#include <ATen/Parallel.h>

#include "models/autocast_state.h"
#include "models/kernels/fp32_product.h"
#include "models/kernels/vectorize.h"

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define ZOO_FEW_ROWS_KERNEL 1
#pragma GCC diagnostic ignored "-Wpsabi"  // 64-byte vectors only pass between inlined functions
#endif

namespace zoo::models {

namespace {

#ifdef ZOO_FEW_ROWS_KERNEL

// 16 fp32 lanes: one AVX-512 register, two AVX2 ones (GCC splits the operations).
typedef float v16 __attribute__((vector_size(64)));
typedef float v16u __attribute__((vector_size(64), aligned(4)));  // an unaligned load of 16
typedef int v16i __attribute__((vector_size(64)));

#define ZOO_INLINE __attribute__((always_inline)) inline

ZOO_INLINE v16 load16(const float* p) { return *reinterpret_cast<const v16u*>(p); }

ZOO_INLINE float lane_sum(v16 v) {
  float s = 0.0f;
  for (int i = 0; i < 16; ++i) s += v[i];
  return s;
}

// Lanes in groups of G (each group the partial sums of one accumulator) folded to groups of
// G/2, p's and q's groups interleaved: group 2j of the result is p's group j, 2j+1 q's. Lane i
// adds lane t and lane t + G/2 of group i / G (t = i % (G/2)) of p, or of q (lanes 16-31 of the
// shuffle's pair) in the second half of each group.
template <int G, int Half, int... I>
constexpr v16i fold_mask(std::integer_sequence<int, I...>) {
  return v16i{((I / G) * G + (I % G) % (G / 2) + Half * (G / 2) + ((I % G) >= G / 2 ? 16 : 0))...};
}
template <int G>
ZOO_INLINE v16 fold(v16 p, v16 q) {
  constexpr auto lanes = std::make_integer_sequence<int, 16>{};
  return __builtin_shuffle(p, q, fold_mask<G, 0>(lanes)) + __builtin_shuffle(p, q, fold_mask<G, 1>(lanes));
}

// Lane i of the result: the sum of a[i]'s lanes (15 additions of vectors, not 240 of floats).
ZOO_INLINE v16 sum_lanes_of_16(const v16* a) {
  v16 b[8], c[4], d[2];
  for (int i = 0; i < 8; ++i) b[i] = fold<16>(a[i], a[i + 8]);  // groups: a[i], a[i+8]
  for (int i = 0; i < 4; ++i) c[i] = fold<8>(b[i], b[i + 4]);   // a[i], a[i+4], a[i+8], a[i+12]
  for (int i = 0; i < 2; ++i) d[i] = fold<4>(c[i], c[i + 2]);   // a[i], a[i+2], ..., a[i+14]
  return fold<2>(d[0], d[1]);                                    // a[0], a[1], ..., a[15]
}

// y[r][c] = x[r] . w[c] + b[c] for R rows of x (ldx apart) and C rows of W (k apart).
template <int R, int C>
ZOO_INLINE void dot_block(const float* x, int64_t ldx, const float* w, int64_t k, const float* b, float* y,
                          int64_t ldy) {
  v16 acc[R][C] = {};
  int64_t p = 0;
  for (; p + 16 <= k; p += 16) {
    v16 xv[R], wv[C];
    for (int r = 0; r < R; ++r) xv[r] = load16(x + r * ldx + p);
    for (int c = 0; c < C; ++c) wv[c] = load16(w + c * k + p);
    for (int r = 0; r < R; ++r)
      for (int c = 0; c < C; ++c) acc[r][c] += xv[r] * wv[c];
  }
  if constexpr (R == 4 && C == 4) {
    if (p == k) {
      const v16 s = sum_lanes_of_16(&acc[0][0]);
      for (int r = 0; r < R; ++r)
        for (int c = 0; c < C; ++c) y[r * ldy + c] = s[r * C + c] + (b ? b[c] : 0.0f);
      return;
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < C; ++c) {
      float s = lane_sum(acc[r][c]);
      for (int64_t t = p; t < k; ++t) s += x[r * ldx + t] * w[c * k + t];
      y[r * ldy + c] = s + (b ? b[c] : 0.0f);
    }
}

// Output columns [n0, n1) of all m rows: 4 x 4 blocks, then the rows and columns left over.
__attribute__((target_clones("avx512f", "arch=haswell", "default"))) void few_rows_columns(
    const float* x, int64_t m, int64_t k, const float* w, const float* b, float* y, int64_t n, int64_t n0,
    int64_t n1) {
  int64_t c = n0;
  for (; c + 4 <= n1; c += 4) {
    const float* bc = b ? b + c : nullptr;
    int64_t r = 0;
    for (; r + 4 <= m; r += 4) dot_block<4, 4>(x + r * k, k, w + c * k, k, bc, y + r * n + c, n);
    for (; r < m; ++r) dot_block<1, 4>(x + r * k, k, w + c * k, k, bc, y + r * n + c, n);
  }
  for (; c < n1; ++c)
    for (int64_t r = 0; r < m; ++r) dot_block<1, 1>(x + r * k, k, w + c * k, k, b ? b + c : nullptr, y + r * n + c, n);
}

bool has_vector_units() {
  static const bool has = __builtin_cpu_supports("avx512f") ||
                          (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"));
  return has;
}

#endif  // ZOO_FEW_ROWS_KERNEL

}  // namespace

bool few_rows_linear_applies(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
#ifdef ZOO_FEW_ROWS_KERNEL
  if (!has_vector_units()) return false;
  const int64_t rows = fp32_cpu_product_rows(x, weight, bias);
  if (rows < 2 || rows > kFewRowsMax) return false;
  return !records_graph(x, weight, bias) && !AutocastState::current().cpu;
#else
  (void)x, (void)weight, (void)bias;
  return false;
#endif
}

torch::Tensor few_rows_linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
#ifdef ZOO_FEW_ROWS_KERNEL
  const int64_t k = weight.size(1), n = weight.size(0), m = x.numel() / k;
  const auto rows = x.reshape({m, k}).contiguous();
  auto sizes = x.sizes().vec();
  sizes.back() = n;
  auto y = torch::empty(sizes, x.options());
  const float* xp = rows.data_ptr<float>();
  const float* wp = weight.data_ptr<float>();
  const float* bp = bias.defined() ? bias.data_ptr<float>() : nullptr;
  float* yp = y.data_ptr<float>();
  // Threads take whole blocks of 4 columns, at least 4M multiply-adds each (~50 us): a smaller
  // product runs on the calling thread, as waking another costs more than it saves.
  const int64_t blocks = (n + 3) / 4, grain = std::max<int64_t>(1, (int64_t{1} << 22) / std::max<int64_t>(1, 4 * m * k));
  at::parallel_for(0, blocks, grain, [&](int64_t begin, int64_t end) {
    few_rows_columns(xp, m, k, wp, bp, yp, n, begin * 4, std::min(n, end * 4));
  });
  return y;
#else
  return at::linear(x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
#endif
}

}  // namespace zoo::models
