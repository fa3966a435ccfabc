#pragma once
// Dynamic int8 quantization of a linear layer (inference on the CPU): the weight quantized once
// to int8 per output row and packed for LibTorch's quantized engine; each call quantizes its
// input to uint8 from the input's own range, multiplies in integers and returns fp32. This is
// torch.ao.quantization.quantize_dynamic's Linear with per_channel_dynamic_qconfig, through the
// same ops (quantized::linear_prepack, quantized::linear_dynamic), called through the
// dispatcher. The engine is onednn / x86 / fbgemm where this LibTorch has one, else qnnpack
// (Debian's LibTorch 1.13: onednn and qnnpack); ZOO_INT8_ENGINE names one to use instead.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace zoo::models {

struct Int8Pack;  // the engine's packed weight (int8_linear.cc)

/// A linear layer's int8 weight (and fp32 bias) packed for one quantized engine. Copies share
/// the packed weight, which is read only: several threads may use one at once.
struct PackedInt8Linear {
  std::shared_ptr<const Int8Pack> pack;
  int64_t in_features = 0, out_features = 0;
  /// The input quantized to 7 bits instead of 8 (fbgemm's and x86's kernels need it to avoid
  /// overflow; Python's dynamic Linear always passes true).
  bool reduce_range = false;
  std::string engine;  ///< "onednn", "x86", "fbgemm" or "qnnpack"
  bool defined() const { return pack != nullptr; }
};

/// Quantizes `weight` (out x in, any float dtype and device: copied to the CPU in fp32) per
/// output row, symmetric int8 (PyTorch's default_per_channel_weight_observer: scale =
/// max|row| / 127.5, zero point 0), and packs it with `bias` (out, or undefined) for
/// `engine` ("" = int8_engine()). Throws zoo::Error when this LibTorch has no quantized engine
/// or lacks the ops, naming the build and the fix.
PackedInt8Linear pack_int8(const torch::Tensor& weight, const torch::Tensor& bias = {}, const std::string& engine = "");

/// Where linear_int8 computes: kAuto picks kLoops for a single row and for products of at most
/// $ZOO_INT8_SMALL_PRODUCT multiply-adds (rows x out x in; default 2^22: a decoding step's
/// rows), else kOneDnn where the weight has it and the input has at most 256 rows (a decoding
/// step's), else kEngine.
enum class Int8Kernel {
  kAuto,
  kEngine,  ///< quantized::linear_dynamic (LibTorch 1.13's oneDNN: ~45 us a call whatever its size)
  kLoops,   ///< the same arithmetic in zoo's vectorised loops (a few us for a 768 x 768 row)
  /// The same arithmetic with the integer products in LibTorch's own oneDNN, called by zoo
  /// through a matmul built once per weight (for the onednn engine, where zoo was built with
  /// oneDNN's headers: ZOO_WITH_ONEDNN); linear_dynamic builds a new input reorder every call.
  kOneDnn,
};

/// x W^T + b with W int8: x (..., in) on the CPU, any float dtype (computed in fp32) -> (..., out) fp32.
/// The input is quantized to uint8 with one scale over all its rows, as quantized::linear_dynamic
/// does. No gradient flows through it (inference only).
torch::Tensor linear_int8(const torch::Tensor& x, const PackedInt8Linear& w, Int8Kernel kernel = Int8Kernel::kAuto);

/// Whether linear_int8 can compute `w` with Int8Kernel::kOneDnn.
bool has_onednn_matmul(const PackedInt8Linear& w);

/// The packed weight as a quantized tensor (qint8, per-row scales): what the engine multiplies with.
torch::Tensor int8_weight(const PackedInt8Linear& w);

/// The quantized engines this LibTorch has ("onednn", "qnnpack", …; without "none").
std::vector<std::string> int8_engines();
/// The engine pack_int8 uses: $ZOO_INT8_ENGINE when set (it must be one of int8_engines()),
/// else the first of x86, fbgemm, onednn, qnnpack this LibTorch has; "" when it has none.
std::string int8_engine();

}  // namespace zoo::models
