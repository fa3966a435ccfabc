#include "models/kernels/int8_linear.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <optional>

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/version.h>

#include "core/error.h"

// The packed weight's C++ type, for typed dispatcher calls (LibTorch >= 1.12 and 2.x install it
// here). Without it the ops are called boxed, through IValues.
#if __has_include(<ATen/native/quantized/PackedParams.h>)
#include <ATen/native/quantized/PackedParams.h>
#define ZOO_INT8_TYPED 1
#else
#define ZOO_INT8_TYPED 0
#endif

namespace zoo::models {

struct Int8Pack {
  c10::IValue params;  // the engine's LinearPackedParamsBase, as the ops take it boxed
#if ZOO_INT8_TYPED
  c10::intrusive_ptr<LinearPackedParamsBase> typed;  // the same, for the typed call
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

}  // namespace

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
  PackedInt8Linear out;
  out.pack = std::move(pack);
  out.out_features = w.size(0);
  out.in_features = w.size(1);
  out.reduce_range = name == "fbgemm" || name == "x86";
  out.engine = name;
  return out;
}

torch::Tensor linear_int8(const torch::Tensor& x, const PackedInt8Linear& w) {
  TORCH_CHECK(w.defined(), "linear_int8: no packed weight");
  if (!x.is_cpu()) throw Error(cat("int8 layers run on the CPU only; the input is on ", x.device().str()));
  TORCH_CHECK(x.dim() >= 1 && x.size(-1) == w.in_features, "linear_int8: the input's last dimension must be ",
              w.in_features, ", got ", x.sizes());
  torch::NoGradGuard no_grad;
  const auto in = (x.scalar_type() == torch::kFloat ? x : x.to(torch::kFloat)).contiguous();
#if ZOO_INT8_TYPED
  if (const auto& typed = typed_dynamic_op()) return typed->call(in, w.pack->typed, w.reduce_range);
#endif
  std::vector<c10::IValue> stack{in, w.pack->params, w.reduce_range};
  dynamic_op().callBoxed(&stack);
  return stack.at(0).toTensor();
}

}  // namespace zoo::models
