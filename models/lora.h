#pragma once
// LoRA (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models") on any linear
// layer of any family: y = x W^T + b + (alpha / r) * B A dropout(x), with W and b frozen and
// only A (r x in) and B (out x r, zero at the start) trained. The factors are registered on
// the adapted torch::nn::Linear as "lora_A" and "lora_B", modules with a "weight", so their
// names are PEFT's ("transformer.h.0.attn.c_attn.lora_A.weight"; PEFT's files add
// "base_model.model."). Every projection goes through models::linear(x, layer)
// (models/kernels/linear.h), which adds lora_delta(); merge_lora() folds the adapters into W
// for inference and for `zoo export`.
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/options.h"

namespace zoo::models {

/// `train.lora`, with PEFT's LoraConfig meanings (adapter_config.json: r, lora_alpha,
/// lora_dropout, target_modules, modules_to_save).
struct LoraOptions {
  int64_t r = 8;
  double alpha = 8;
  double dropout = 0;
  std::vector<std::string> target_modules;   // empty: the family's default (PEFT's)
  std::vector<std::string> modules_to_save;  // trained in full and saved with the adapter (a new head)

  template <class V>
  void fields(V& v) {
    v("r", r, "rank of the adapters", at_least(1));
    v("alpha", alpha, "scaling: the update is (alpha / r) B A (PEFT's lora_alpha)", between(0, 65536));
    v("dropout", dropout, "dropout on the adapters' input (PEFT's lora_dropout)", between(0, 1));
    v("target_modules", target_modules,
      "linear layers that get adapters, by name or name suffix (PEFT's); empty = the family's default: gpt2 "
      "c_attn, bert and vit query and value, transformer q_proj and v_proj");
    v("modules_to_save", modules_to_save,
      "modules trained in full beside the adapters and saved with them (a classification head); empty = the "
      "task's new head");
  }
};

/// One factor of an adapter (`weight`, out x in), and the adapter's scaling and dropout.
class LoraFactorImpl : public torch::nn::Module {
 public:
  LoraFactorImpl(int64_t in, int64_t out, double scaling, double dropout);
  torch::Tensor weight;
  double scaling, dropout;
};
TORCH_MODULE(LoraFactor);

/// scaling * B A dropout(x) for a Linear with adapters; an undefined tensor for one without.
torch::Tensor lora_delta(const torch::Tensor& x, const torch::nn::Module& layer);

/// PEFT's default target_modules for a model type (empty when PEFT has none).
std::vector<std::string> default_lora_targets(const std::string& model_type);

/// Adds adapters (A ~ Kaiming-uniform as PEFT, B = 0) to every Linear whose dotted name is a
/// target or ends with "." + target, freezes every other parameter except those under
/// `modules_to_save`; returns the adapted layers' names. Throws zoo::Error naming the targets
/// when none matches, or a module to save that names no module, with the model's layer names.
std::vector<std::string> add_lora(torch::nn::Module& model, const LoraOptions& o,
                                  const std::vector<std::string>& modules_to_save);

/// W += scaling B A for every adapter, then removes the adapters (the model is plain again).
void merge_lora(torch::nn::Module& model);

/// Whether `name` is a tensor of an adapter factor ("....lora_A.weight", "....lora_B.weight").
bool is_lora_name(const std::string& name);

/// The adapters' tensors (and those of `modules_to_save`), by the model's names.
std::vector<std::pair<std::string, torch::Tensor>> lora_tensors(const torch::nn::Module& model,
                                                                 const std::vector<std::string>& modules_to_save);

}  // namespace zoo::models
