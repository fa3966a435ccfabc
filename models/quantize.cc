#include "models/quantize.h"

#include "core/error.h"

namespace zoo::models {

const PackedInt8Linear* int8_weights(const torch::nn::Module& module) {
  for (const auto& child : module.children()) {
    if (const auto* q = dynamic_cast<const Int8WeightsImpl*>(child.get())) {
      if (module.is_training())
        throw Error("a model quantized to int8 is for inference only: training (or train mode) needs its fp32 "
                    "weights; load it without --quantize");
      return &q->packed;
    }
  }
  return nullptr;
}

void check_quantize(const std::string& quantize, const torch::Device& device, const std::string& option) {
  check_quantize(quantize, device.is_cpu() ? std::string("cpu") : device.str(), option);
}

void check_quantize(const std::string& quantize, const std::string& device, const std::string& option) {
  if (quantize.empty()) return;
  if (quantize != "int8")
    throw Error(cat(option, " '", quantize, "': unknown; give int8 (dynamic int8 linear layers, CPU only), or leave it "
                    "out for fp32"));
  if (device != "cpu")
    throw Error(cat(option, " int8 runs on the CPU only, and the device is ", device, ": load the model on the CPU, or "
                    "leave out ", option, " on ", device));
  if (int8_engine().empty())
    throw Error(cat(option, " int8: this LibTorch has no quantized engine (FBGEMM, oneDNN or QNNPACK): use a LibTorch "
                    "built with one (Debian's libtorch-dev and the pytorch.org builds have them), or leave out ", option));
}

int64_t quantize_model(torch::nn::Module& model, const std::string& quantize) {
  check_quantize(quantize, torch::kCPU);
  if (quantize.empty()) return 0;
  if (model.is_training()) throw Error("int8 quantization is for inference: put the model in eval mode first");
  for (const auto& p : model.parameters())
    if (!p.is_cpu())
      throw Error(cat("--quantize int8 runs on the CPU only, and the model is on ", p.device().str(),
                      ": load it on the CPU"));
  int64_t packed = 0;
  for (const auto& item : model.named_modules("", /*include_self=*/true)) {
    auto& m = *item.value();
    if (int8_weights(m)) continue;  // quantized already
    torch::Tensor weight, bias;
    if (auto* linear = dynamic_cast<torch::nn::LinearImpl*>(&m)) {
      if (!linear->children().empty())  // unmerged LoRA adapters (the loaders merge them)
        throw Error(cat(item.key(), ": a layer with LoRA adapters; merge them into the weights before quantizing"));
      weight = linear->weight;
      bias = linear->bias;
    } else if (const auto* shared = dynamic_cast<const SharedOutputWeight*>(&m)) {
      weight = shared->shared_output_weight();
    }
    if (!weight.defined()) continue;
    m.register_module("int8", Int8Weights(pack_int8(weight, bias)));
    ++packed;
  }
  return packed;
}

}  // namespace zoo::models
