#pragma once
// Quantizing a loaded model's linear layers for inference (--quantize int8, zoo::LoadOptions):
// each torch::nn::Linear gets its int8 copy (models/kernels/int8_linear.h) registered on it as a
// child module "int8", which models::linear(x, layer) (models/kernels/linear.h), the one
// product every layer goes through, uses in place of the fp32 weight. A model whose output
// projection reuses its embedding's weight (GPT-2, a Marian model without lm_head) says so
// through SharedOutputWeight and gets a separate int8 copy of it, registered on the model and
// read by its output layer; the embedding lookup stays fp32. What stays fp32: embeddings,
// norms, attention's products of activations, ViT's patch projection, the GRU's weights
// (seq2seq), BERT's tied MLM decoder. The fp32 weights are kept (the model's memory grows by
// about a quarter of its linear weights).
#include <string>

#include <torch/torch.h>

#include "models/kernels/int8_linear.h"

namespace zoo::models {

/// The int8 copy of a layer's weight: a module without parameters, so that it follows the
/// layer's lifetime and stays out of its checkpoint.
class Int8WeightsImpl : public torch::nn::Module {
 public:
  explicit Int8WeightsImpl(PackedInt8Linear packed) : packed(std::move(packed)) {}
  PackedInt8Linear packed;
};
TORCH_MODULE(Int8Weights);

/// The int8 weights registered on `module` (a Linear, or a model's shared output), or null.
/// Throws zoo::Error when `module` is in training mode: int8 layers are for inference only.
const PackedInt8Linear* int8_weights(const torch::nn::Module& module);

/// A model whose output projection is its input embedding's weight.
class SharedOutputWeight {
 public:
  virtual ~SharedOutputWeight() = default;
  /// The (vocabulary, hidden) weight its logits are computed with; undefined when the output
  /// layer is a Linear of its own.
  virtual torch::Tensor shared_output_weight() const = 0;
};

/// Throws zoo::Error unless `quantize` is "" or "int8", and for "int8" unless `device` is the
/// CPU and this LibTorch has a quantized engine; `option` names the setting in the message
/// ("--quantize", "LoadOptions::quantize").
void check_quantize(const std::string& quantize, const torch::Device& device, const std::string& option = "--quantize");
/// The same for a device given by name ("cpu", "cuda:0", as --device spells it).
void check_quantize(const std::string& quantize, const std::string& device, const std::string& option);

/// Quantizes `model` (on the CPU, in eval mode) as `quantize` says: "" leaves it fp32, "int8"
/// packs every Linear and the shared output weight. Returns the number of layers packed.
int64_t quantize_model(torch::nn::Module& model, const std::string& quantize);

}  // namespace zoo::models
