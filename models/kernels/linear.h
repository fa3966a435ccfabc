#pragma once
// The linear layers' product for every model: x W^T + b in the form each device runs fastest.
#include <torch/torch.h>

#include "models/autocast_state.h"
#include "models/kernels/few_rows_linear.h"
#include "models/kernels/onednn_linear.h"
#include "models/lora.h"
#include "models/quantize.h"

namespace zoo::models {

/// x W^T + b, as torch::nn::Linear. On the CPU as LibTorch's C++ Linear computes it (a matrix
/// product, then the bias added in place, in the product's dtype: under bf16 autocast a bf16
/// bias, as Python's autocast gives `linear`), which on LibTorch 1.13 beats ATen's `linear`
/// (`addmm` over the flattened rows; docs/results.md, GPT on an NVIDIA H100); a single row
/// (cached decoding of one sequence) as a matrix-vector product, which reads W once where
/// OpenBLAS's matrix product first copies it into packed panels (not under autocast, whose
/// casts only the matrix product takes, nor for mixed dtypes); a few rows (a batch's decoding
/// step) outside autograd through few_rows_linear, which reads W in place too; more rows in fp32
/// through oneDNN's matmul where the build has it (onednn_linear, its backward too). Elsewhere ATen's
/// `linear`, as PyTorch's Python Linear: on CUDA the bias is added in the GEMM's epilogue
/// instead of a pass of its own over the output; there, an output width that is not a multiple
/// of 8 (GPT-2's 50,257-word vocabulary) goes through linear_padded (tensor-core products need
/// rows of 16 bytes; without them cuBLAS falls back to far slower kernels, docs/results.md).
inline torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias = {});

/// x W^T + b with W (and b) padded with zero rows to a multiple of `multiple` and the extra
/// output columns dropped: the same values and gradients as linear(), as a view whose rows are
/// `padded` wide. The padding is one copy of W per call (and one of its gradient).
inline torch::Tensor linear_padded(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias,
                                   int64_t multiple = 64) {
  const int64_t n = weight.size(0), extra = (n + multiple - 1) / multiple * multiple - n;
  const auto w = torch::constant_pad_nd(weight, {0, 0, 0, extra});
  const auto b = bias.defined() ? c10::optional<at::Tensor>(torch::constant_pad_nd(bias, {0, extra})) : c10::nullopt;
  return at::linear(x, w, b).narrow(-1, 0, n);
}

/// Whether linear() pads W on CUDA for this input: an output width that is not a multiple of 8
/// (and at least 1,024), over many rows (not one decoding step's few).
inline bool pads_output_width(const torch::Tensor& x, const torch::Tensor& weight) {
  const bool many_rows = x.dim() >= 1 && x.numel() >= 256 * x.size(-1);
  return weight.size(0) % 8 != 0 && weight.size(0) >= 1024 && many_rows;
}

inline torch::Tensor linear(const torch::Tensor& x, const torch::Tensor& weight, const torch::Tensor& bias) {
  if (x.is_cpu()) {
    const bool one_row = x.dim() >= 1 && x.numel() == x.size(-1) && x.scalar_type() == weight.scalar_type() &&
                         (!bias.defined() || bias.scalar_type() == weight.scalar_type()) &&
                         !AutocastState::current().cpu;
    if (one_row) {  // cached decoding of one sequence
      const auto row = x.reshape({-1});
      auto y = bias.defined() ? at::addmv(bias, weight, row) : at::mv(weight, row);
      auto sizes = x.sizes().vec();
      sizes.back() = weight.size(0);
      return y.view(sizes);
    }
    if (few_rows_linear_applies(x, weight, bias)) return few_rows_linear(x, weight, bias);
    if (onednn_linear_applies(x, weight, bias)) return onednn_linear(x, weight, bias);
    if (!bias.defined()) return x.matmul(weight.t());
    if (x.dim() == 2) return torch::addmm(bias, x, weight.t());
    auto y = x.matmul(weight.t());
    // Under autocast the product is bf16 while the bias stays fp32, and ATen adds mixed dtypes
    // in place through a scalar casting loop; the bias is cast first, as autocast casts it
    // for PyTorch's linear.
    return y.add_(bias.to(y.scalar_type()));  // the bias itself where the dtypes agree
  }
  if (x.is_cuda() && pads_output_width(x, weight)) return linear_padded(x, weight, bias);
  return at::linear(x, weight, bias.defined() ? c10::optional<at::Tensor>(bias) : c10::nullopt);
}

/// A layer's product, plus its LoRA adapter when it has one (models/lora.h); with its int8
/// copy when the model was quantized (models/quantize.h: the one place every model's linear
/// layers consult it).
inline torch::Tensor linear(const torch::Tensor& x, const torch::nn::Linear& layer) {
  if (const auto* q = int8_weights(*layer)) return linear_int8(x, *q);
  auto y = linear(x, layer->weight, layer->bias);
  const auto delta = lora_delta(x, *layer);
  return delta.defined() ? y + delta : y;
}

/// layer(x), LibTorch's own Linear forward (the heads, BERT's pooler, the GRU model's layers),
/// or the layer's int8 product when the model was quantized (models/quantize.h).
inline torch::Tensor apply_linear(const torch::nn::Linear& layer, const torch::Tensor& x) {
  if (const auto* q = int8_weights(*layer)) return linear_int8(x, *q);
  if (onednn_linear_applies(x, layer->weight, layer->bias)) return onednn_linear(x, layer->weight, layer->bias);
  return torch::nn::functional::linear(x, layer->weight, layer->bias);  // LinearImpl::forward
}

}  // namespace zoo::models
