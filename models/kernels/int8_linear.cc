#include "models/kernels/int8_linear.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>

#include <ATen/Parallel.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/version.h>

#include "core/error.h"
#include "models/kernels/vectorize.h"

// The packed weight's C++ type, for typed dispatcher calls (LibTorch >= 1.12 and 2.x install it
// here). Without it the ops are called boxed, through IValues.
#if __has_include(<ATen/native/quantized/PackedParams.h>)
#include <ATen/native/quantized/PackedParams.h>
#define ZOO_INT8_TYPED 1
#else
#define ZOO_INT8_TYPED 0
#endif

#include "models/kernels/onednn.h"  // ZOO_WITH_ONEDNN, and oneDNN where it is 1

namespace zoo::models {

struct Int8Pack {
  c10::IValue params;  // the engine's LinearPackedParamsBase, as the ops take it boxed
#if ZOO_INT8_TYPED
  c10::intrusive_ptr<LinearPackedParamsBase> typed;  // the same, for the typed call
#endif
  // For zoo's own products (int8_products): the int8 weight (out, in) row-major, each row's
  // scale and sum, and the fp32 bias (or none).
  torch::Tensor weight, scale, row_sum, bias;
#if ZOO_WITH_ONEDNN
  // oneDNN's u8 x s8 -> s32 matmul for any number of input rows, built once; the weight (in,
  // out) row-major, as it reads it.
  std::optional<dnnl::matmul::primitive_desc> matmul_pd;
  std::optional<dnnl::matmul> matmul;
  torch::Tensor weight_t;
#endif
};

namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

std::string build_name() { return cat("LibTorch ", TORCH_VERSION_MAJOR, ".", TORCH_VERSION_MINOR, ".", TORCH_VERSION_PATCH); }

// The engine of that name among this build's (mkldnn is onednn's older name).
std::optional<at::QEngine> engine_named(const std::string& name) {
  for (const auto e : at::globalContext().supportedQEngines()) {
    const std::string n = lower(c10::toString(e));
    if (n == name || (name == "mkldnn" && n == "onednn") || (name == "onednn" && n == "mkldnn")) return e;
  }
  return std::nullopt;
}

[[noreturn]] void no_engine(const std::string& why) {
  throw Error(cat("int8 quantization (--quantize int8) needs LibTorch's quantized engines, and ", why,
                  ": use a LibTorch built with FBGEMM, oneDNN (USE_MKLDNN) or QNNPACK (Debian's libtorch-dev and "
                  "the pytorch.org builds have them), or run without --quantize"));
}

#if ZOO_INT8_TYPED
// quantized::linear_dynamic's kernel as LibTorch 1.13 registers it (a typed call must name
// the registered C++ signature exactly; where it differs the op is called boxed).
using DynamicFn = at::Tensor(at::Tensor, const c10::intrusive_ptr<LinearPackedParamsBase>&, bool);
#endif

// The operator `name`, or a zoo::Error naming it and this build (never an abort).
c10::OperatorHandle find_op(const char* name) {
  try {
    return c10::Dispatcher::singleton().findSchemaOrThrow(name, "");
  } catch (const c10::Error&) {
    no_engine(cat(build_name(), " has no operator ", name));
  }
}

const c10::OperatorHandle& dynamic_op() {
  static const auto op = find_op("quantized::linear_dynamic");
  return op;
}

#if ZOO_INT8_TYPED
// The typed handle of quantized::linear_dynamic, or none where this build registers another
// C++ signature.
const std::optional<c10::TypedOperatorHandle<DynamicFn>>& typed_dynamic_op() {
  static const auto op = []() -> std::optional<c10::TypedOperatorHandle<DynamicFn>> {
    try {
      return dynamic_op().typed<DynamicFn>();
    } catch (const c10::Error&) {
      return std::nullopt;
    }
  }();
  return op;
}
#endif

std::mutex engine_mutex;  // the global engine is set while a weight is packed

// PyTorch's quant_utils::ChooseQuantizationParams (ATen/native/quantized/cpu/QuantUtils.h)
// for the input of quantized::linear_dynamic: uint8 over [min(x, 0), max(x, 0)], the zero point
// nudged to an integer; qmax 127 with reduce_range.
std::pair<float, int32_t> input_qparams(float min, float max, bool reduce_range) {
  int32_t qmin = 0, qmax = 255;
  if (reduce_range) qmin /= 2, qmax /= 2;
  min = std::min(min, 0.f);
  max = std::max(max, 0.f);
  double scale = (static_cast<double>(max) - min) / (qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) scale = 0.1;
  constexpr float kSmallScale = 6.1e-5f;  // SMALL_SCALE_THRESHOLD
  if (scale < kSmallScale) {
    const float original = static_cast<float>(scale);
    scale = kSmallScale;
    if (min == 0.0f) max = kSmallScale * (qmax - qmin);
    else if (max == 0.0f) min = -kSmallScale * (qmax - qmin);
    else min *= kSmallScale / original, max *= kSmallScale / original;
  }
  const double from_min = qmin - min / scale, from_max = qmax - max / scale;
  const double from_min_error = std::abs(qmin) - std::abs(min / scale);
  const double from_max_error = std::abs(qmax) - std::abs(max / scale);
  const double initial = from_min_error < from_max_error ? from_min : from_max;
  const int32_t zero = initial < qmin ? qmin : initial > qmax ? qmax : static_cast<int32_t>(std::nearbyint(initial));
  return {static_cast<float>(scale), zero};
}

// x (n) -> uint8 with 1 / scale and the zero point, rounded to nearest even, saturated.
ZOO_VECTOR_CLONES void quantize_row(const float* __restrict x, uint8_t* __restrict q, int64_t n, float inverse,
                                    float zero, float qmax) {
  for (int64_t i = 0; i < n; ++i) q[i] = static_cast<uint8_t>(std::min(std::max(std::nearbyint(x[i] * inverse) + zero, 0.f), qmax));
}

// out[r] = sum_i w[r, i] q[i] for rows [first, last) of w (rows of k int8).
ZOO_INT8_CLONES void dot_rows(const int8_t* __restrict w, const uint8_t* __restrict q, int32_t* __restrict out,
                                int64_t first, int64_t last, int64_t k) {
  for (int64_t r = first; r < last; ++r) {
    const int8_t* __restrict row = w + r * k;
    int32_t acc = 0;
    for (int64_t i = 0; i < k; ++i) acc += static_cast<int32_t>(row[i]) * static_cast<int32_t>(q[i]);
    out[r] = acc;
  }
}

// dot_rows for four inputs at once (q's rows ldq apart, out's ldo apart): each row of w is read
// once for the four.
ZOO_INT8_CLONES void dot_rows4(const int8_t* __restrict w, const uint8_t* __restrict q, int64_t ldq,
                               int32_t* __restrict out, int64_t ldo, int64_t first, int64_t last, int64_t k) {
  const uint8_t* __restrict q0 = q;
  const uint8_t* __restrict q1 = q + ldq;
  const uint8_t* __restrict q2 = q + 2 * ldq;
  const uint8_t* __restrict q3 = q + 3 * ldq;
  for (int64_t r = first; r < last; ++r) {
    const int8_t* __restrict row = w + r * k;
    int32_t a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    for (int64_t i = 0; i < k; ++i) {
      const int32_t v = row[i];
      a0 += v * q0[i], a1 += v * q1[i], a2 += v * q2[i], a3 += v * q3[i];
    }
    out[r] = a0, out[ldo + r] = a1, out[2 * ldo + r] = a2, out[3 * ldo + r] = a3;
  }
}

#if ZOO_WITH_ONEDNN
// The matmul of any number of uint8 rows (in) with the weight, to int32 (out), built once.
void build_onednn_matmul(Int8Pack& pack) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t out_features = pack.weight.size(0), in = pack.weight.size(1);
  pack.weight_t = pack.weight.t().contiguous();
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // each call its own: calls from several threads
  const dnnl::memory::desc src({DNNL_RUNTIME_DIM_VAL, in}, dt::u8, tag::ab), weights({in, out_features}, dt::s8, tag::ab),
      dst({DNNL_RUNTIME_DIM_VAL, out_features}, dt::s32, tag::ab);
  pack.matmul_pd.emplace(dnnl::matmul::desc(src, weights, dst), attr, onednn::cpu());
  pack.matmul.emplace(*pack.matmul_pd);
}

// acc (rows, out) = q (rows, in) W^T in int32 through the pack's oneDNN matmul.
void onednn_products(const Int8Pack& pack, const uint8_t* q, int64_t rows, int32_t* acc) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const int64_t out_features = pack.weight.size(0), in = pack.weight.size(1);
  auto& engine = onednn::cpu();
  const dnnl::memory src({{rows, in}, dt::u8, tag::ab}, engine, const_cast<uint8_t*>(q));
  const dnnl::memory weights({{in, out_features}, dt::s8, tag::ab}, engine, pack.weight_t.data_ptr<int8_t>());
  const dnnl::memory dst({{rows, out_features}, dt::s32, tag::ab}, engine, acc);
  pack.matmul->execute(onednn::stream(), {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst},
                                          {DNNL_ARG_SCRATCHPAD, onednn::scratchpad(*pack.matmul_pd)}});
  onednn::stream().wait();
}
#endif

bool has_onednn_matmul(const Int8Pack& pack) {
#if ZOO_WITH_ONEDNN
  return pack.matmul.has_value();
#else
  (void)pack;
  return false;
#endif
}

// What quantized::linear_dynamic computes, with its integer products in zoo's loops (small
// products: a decoding step's rows, where LibTorch 1.13's oneDNN call, about 45 us whatever
// its size, would cost more than the arithmetic) or in a oneDNN matmul built once (`onednn`):
// the whole input quantized to uint8 with one scale and zero point (input_qparams over its
// range), each row's int32 products with the int8 weight, y = scale_x scale_w[o] (acc - zero_x
// sum_i w[o, i]) + b[o].
torch::Tensor int8_products(const torch::Tensor& x, const Int8Pack& pack, bool reduce_range, bool onednn) {
  const int64_t k = x.size(-1), out_features = pack.weight.size(0), rows = x.numel() / k;
  const auto flat = x.reshape({rows, k});
  const auto range = at::aminmax(flat);
  const auto [scale, zero] =
      input_qparams(std::get<0>(range).item<float>(), std::get<1>(range).item<float>(), reduce_range);
  auto q = torch::empty({rows, k}, torch::kUInt8);
  const float* xd = flat.data_ptr<float>();
  uint8_t* qd = q.data_ptr<uint8_t>();
  for (int64_t r = 0; r < rows; ++r)
    quantize_row(xd + r * k, qd + r * k, k, 1.0f / scale, static_cast<float>(zero), reduce_range ? 127.f : 255.f);
  auto acc = torch::empty({rows, out_features}, torch::kInt);
  auto y = torch::empty({rows, out_features}, torch::kFloat);
  const int8_t* w = pack.weight.data_ptr<int8_t>();
  const float* ws = pack.scale.data_ptr<float>();
  const int32_t* sums = pack.row_sum.data_ptr<int32_t>();
  const float* b = pack.bias.defined() ? pack.bias.data_ptr<float>() : nullptr;
  int32_t* ad = acc.data_ptr<int32_t>();
  float* yd = y.data_ptr<float>();
#if ZOO_WITH_ONEDNN
  if (onednn) onednn_products(pack, qd, rows, ad);
#endif
  const int64_t grain = std::max<int64_t>(1, (int64_t{1} << 16) / std::max<int64_t>(onednn ? rows : k, 1));
  at::parallel_for(0, out_features, grain, [&](int64_t first, int64_t last) {
    int64_t r = 0;
    if (!onednn) {
      for (; r + 4 <= rows; r += 4) dot_rows4(w, qd + r * k, k, ad + r * out_features, out_features, first, last, k);
      for (; r < rows; ++r) dot_rows(w, qd + r * k, ad + r * out_features, first, last, k);
    }
    for (r = 0; r < rows; ++r) {
      for (int64_t o = first; o < last; ++o)
        yd[r * out_features + o] =
            static_cast<float>(ad[r * out_features + o] - zero * sums[o]) * (scale * ws[o]) + (b ? b[o] : 0.f);
    }
  });
  auto sizes = x.sizes().vec();
  sizes.back() = out_features;
  return y.view(sizes);
}

// Products at most this large (rows x out x in multiply-adds) run in zoo's loops (int8_products).
int64_t small_product_limit() {
  static const int64_t limit = [] {
    const char* env = std::getenv("ZOO_INT8_SMALL_PRODUCT");
    return env && *env ? std::atoll(env) : int64_t{1} << 22;
  }();
  return limit;
}

// kAuto's limit for kOneDnn: on more rows the engine's code generation per call is small beside
// the product, and its fused output pass wins (the encoder's 640 rows: 57.7 against 60.0 ms;
// bert-small-imdb's 8,192: 251.8 against 263.6 ms; docs/results.md).
constexpr int64_t kOneDnnMaxRows = 256;

}  // namespace

bool has_onednn_matmul(const PackedInt8Linear& w) { return w.defined() && has_onednn_matmul(*w.pack); }

torch::Tensor int8_weight(const PackedInt8Linear& w) {
  TORCH_CHECK(w.defined(), "int8_weight: no packed weight");
  std::vector<c10::IValue> stack{w.pack->params};
  find_op("quantized::linear_unpack").callBoxed(&stack);
  return stack.at(0).toTensor();
}

std::vector<std::string> int8_engines() {
  std::vector<std::string> out;
  for (const auto e : at::globalContext().supportedQEngines())
    if (e != at::QEngine::NoQEngine) out.push_back(lower(c10::toString(e)));
  return out;
}

std::string int8_engine() {
  const auto have = int8_engines();
  if (const char* env = std::getenv("ZOO_INT8_ENGINE"); env && *env) {
    const std::string want = lower(env);
    if (!engine_named(want)) {
      std::string list;
      for (const auto& e : have) list += cat(list.empty() ? "" : ", ", e);
      throw Error(cat("ZOO_INT8_ENGINE=", env, ": ", build_name(), " has no such quantized engine (it has: ",
                      list.empty() ? "none" : list, "); name one of them or unset it"));
    }
    return want;
  }
  for (const char* preferred : {"x86", "fbgemm", "onednn", "mkldnn", "qnnpack"})
    if (std::find(have.begin(), have.end(), preferred) != have.end()) return preferred;
  return "";
}

PackedInt8Linear pack_int8(const torch::Tensor& weight, const torch::Tensor& bias, const std::string& engine) {
  TORCH_CHECK(weight.dim() == 2, "pack_int8: the weight must be (out, in), got ", weight.sizes());
  const std::string name = engine.empty() ? int8_engine() : lower(engine);
  if (name.empty()) no_engine(cat(build_name(), " has none"));
  const auto qengine = engine_named(name);
  if (!qengine) no_engine(cat(build_name(), " has no engine '", name, "'"));
  torch::NoGradGuard no_grad;
  const auto w = weight.detach().to(torch::kCPU, torch::kFloat).contiguous();
  // PyTorch's PerChannelMinMaxObserver(qint8, per_channel_symmetric): quant range [-128, 127],
  // scale = max(|min|, |max|) / ((127 - -128) / 2), at least float's epsilon; zero point 0.
  const auto scale = (w.abs().amax(1) / 127.5f).clamp_min(std::numeric_limits<float>::epsilon());
  const auto zero = torch::zeros({w.size(0)}, torch::kLong);
  const auto q = at::quantize_per_channel(w, scale.to(torch::kDouble), zero, 0, torch::kQInt8);
  c10::optional<at::Tensor> b;
  if (bias.defined()) b = bias.detach().to(torch::kCPU, torch::kFloat).contiguous();
  auto pack = std::make_shared<Int8Pack>();
  {
    std::lock_guard<std::mutex> lock(engine_mutex);
    auto& context = at::globalContext();
    const at::QEngine before = context.qEngine();
    context.setQEngine(*qengine);
    try {
      // Once per layer: boxed, whatever C++ signature this build registered.
      std::vector<c10::IValue> stack{q, b};
      find_op("quantized::linear_prepack").callBoxed(&stack);
      pack->params = std::move(stack.at(0));
#if ZOO_INT8_TYPED
      pack->typed = pack->params.toCustomClass<LinearPackedParamsBase>();
#endif
    } catch (const c10::Error& e) {
      context.setQEngine(before);
      no_engine(cat("quantized::linear_prepack failed on engine ", name, " (", e.what_without_backtrace(), ")"));
    } catch (...) {
      context.setQEngine(before);
      throw;
    }
    context.setQEngine(before);
  }
  pack->weight = q.int_repr().contiguous();
  pack->scale = scale.contiguous();
  pack->row_sum = pack->weight.sum(1, /*keepdim=*/false, torch::kInt).contiguous();
  if (b) pack->bias = *b;
#if ZOO_WITH_ONEDNN
  if (name == "onednn" || name == "mkldnn") {
    try {
      build_onednn_matmul(*pack);
    } catch (const dnnl::error&) {  // this CPU or build has no such matmul: the engine's op then
      pack->matmul.reset();
      pack->matmul_pd.reset();
    }
  }
#endif
  PackedInt8Linear out;
  out.pack = std::move(pack);
  out.out_features = w.size(0);
  out.in_features = w.size(1);
  out.reduce_range = name == "fbgemm" || name == "x86";
  out.engine = name;
  return out;
}

torch::Tensor linear_int8(const torch::Tensor& x, const PackedInt8Linear& w, Int8Kernel kernel) {
  TORCH_CHECK(w.defined(), "linear_int8: no packed weight");
  if (!x.is_cpu()) throw Error(cat("int8 layers run on the CPU only; the input is on ", x.device().str()));
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == w.in_features, "linear_int8: the input's last dimension must be ",
              w.in_features, ", got ", x.sizes());
  torch::NoGradGuard no_grad;
  const auto in = (x.scalar_type() == torch::kFloat ? x : x.to(torch::kFloat)).contiguous();
  if (kernel == Int8Kernel::kAuto) {
    // One row (a decoding step of one sequence) reads each int8 weight once: the loops at any size.
    const int64_t rows = in.numel() / w.in_features;
    kernel = (rows == 1 || rows * w.out_features * w.in_features <= small_product_limit()) &&
                     w.in_features <= 16384  // int32 sums of uint8 x int8 products cannot overflow
                 ? Int8Kernel::kLoops
             : has_onednn_matmul(*w.pack) && rows <= kOneDnnMaxRows ? Int8Kernel::kOneDnn
                                                                    : Int8Kernel::kEngine;
  }
  if (kernel == Int8Kernel::kOneDnn && !has_onednn_matmul(*w.pack))
    throw Error(cat("linear_int8: no oneDNN matmul for this weight (engine ", w.engine, ", ", build_name(),
                    (ZOO_WITH_ONEDNN ? "" : ", zoo built without oneDNN's headers: libdnnl-dev"), ")"));
  if ((kernel == Int8Kernel::kLoops || kernel == Int8Kernel::kOneDnn) && in.numel() > 0)
    return int8_products(in, *w.pack, w.reduce_range, kernel == Int8Kernel::kOneDnn);
#if ZOO_INT8_TYPED
  if (const auto& typed = typed_dynamic_op()) return typed->call(in, w.pack->typed, w.reduce_range);
#endif
  std::vector<c10::IValue> stack{in, w.pack->params, w.reduce_range};
  dynamic_op().callBoxed(&stack);
  return stack.at(0).toTensor();
}

}  // namespace zoo::models
