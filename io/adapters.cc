#include "io/adapters.h"

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "io/safetensors.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;
constexpr const char* kPeftPrefix = "base_model.model.";

// The head a task adds on a pretrained trunk: trained in full beside the adapters (PEFT's
// SEQ_CLS task type does the same with its modules_to_save).
std::vector<std::string> new_head_of(const std::string& task) {
  if (task == "text_classification" || task == "image_classification") return {"classifier"};
  return {};
}

std::string with_commas(int64_t n) {
  std::string s = std::to_string(n);
  for (int i = static_cast<int>(s.size()) - 3; i > 0; i -= 3) s.insert(static_cast<size_t>(i), ",");
  return s;
}

std::string percent(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * static_cast<double>(part) / static_cast<double>(std::max<int64_t>(1, whole)));
  return text;
}

}  // namespace

std::optional<models::LoraOptions> lora_options(const json& config) {
  const json train = config.value("train", json::object());
  if (!train.contains("lora") || train["lora"].is_null()) return std::nullopt;
  auto o = read_options<models::LoraOptions>(train["lora"], "train.lora");
  const std::string type = config.value("model", json::object()).value("model_type", std::string());
  if (o.target_modules.empty()) o.target_modules = models::default_lora_targets(type);
  if (o.target_modules.empty())
    throw Error(cat("train.lora.target_modules: PEFT has no default for model_type '", type,
                    "'; name the linear layers to adapt"));
  if (o.modules_to_save.empty()) o.modules_to_save = new_head_of(config.value("task", std::string()));
  return o;
}

void attach_lora(torch::nn::Module& model, const models::LoraOptions& o) {
  const auto adapted = models::add_lora(model, o, o.modules_to_save);
  int64_t total = 0, trained = 0;
  for (const auto& p : model.parameters()) {
    total += p.numel();
    if (p.requires_grad()) trained += p.numel();
  }
  std::cerr << "zoo: LoRA r=" << o.r << " alpha=" << o.alpha << " on " << adapted.size() << " linear layers ("
            << join(o.target_modules) << (o.modules_to_save.empty() ? "" : "; trained in full: " + join(o.modules_to_save))
            << "): " << with_commas(trained) << " of " << with_commas(total) << " parameters train ("
            << percent(trained, total) << ")" << std::endl;
}

void save_adapter(const torch::nn::Module& model, const std::string& dir, const models::LoraOptions& o,
                  const json& config, const std::string& base) {
  std::vector<std::pair<std::string, torch::Tensor>> tensors;
  for (auto& [name, t] : models::lora_tensors(model, o.modules_to_save)) tensors.emplace_back(kPeftPrefix + name, t);
  safetensors::save((fs::path(dir) / kAdapterWeights).string(), tensors, {{"format", "pt"}, {"producer", "zoo"}});
  const std::string type = config.value("model", json::object()).value("model_type", std::string());
  const std::string task = config.value("task", std::string());
  json c = {{"peft_type", "LORA"},
            {"r", o.r},
            {"lora_alpha", o.alpha},
            {"lora_dropout", o.dropout},
            {"target_modules", o.target_modules},
            {"modules_to_save", o.modules_to_save.empty() ? json(nullptr) : json(o.modules_to_save)},
            {"bias", "none"},
            {"fan_in_fan_out", type == "gpt2"},  // GPT-2's layers are Conv1D in transformers
            {"init_lora_weights", true},
            {"inference_mode", true},
            {"use_dora", false},
            {"use_rslora", false},
            {"base_model_name_or_path", base.empty() ? json(nullptr) : json(base)},
            {"task_type", task == "language_modeling"     ? json("CAUSAL_LM")
                          : task == "text_classification" ? json("SEQ_CLS")
                          : task == "translation"         ? json("SEQ_2_SEQ_LM")
                                                          : json(nullptr)}};
  write_json_file((fs::path(dir) / kAdapterConfig).string(), c);
}

void load_adapter(torch::nn::Module& model, const std::string& dir, const models::LoraOptions& o) {
  const std::string path = (fs::path(dir) / kAdapterWeights).string();
  auto file = safetensors::load(path);
  check_finite(path, file.tensors);
  copy_tensors(path, file.tensors, models::lora_tensors(model, o.modules_to_save),
               TensorSet{kPeftPrefix, "the adapter", "the adapter does not match train.lora", "a different r or base model"});
}

void load_checkpoint_weights(torch::nn::Module& model, const std::string& dir, const json& config, bool merge) {
  load_model(model, (std::filesystem::path(dir) / "model.safetensors").string(),
             config.at("model").value("model_type", std::string()));
  if (const auto lora = lora_options(config); lora && is_adapter_dir(dir)) {
    models::add_lora(model, *lora, lora->modules_to_save);
    load_adapter(model, dir, *lora);
    if (merge) models::merge_lora(model);
  }
}

bool is_adapter_dir(const std::string& dir) {
  std::error_code ec;
  return fs::is_regular_file(fs::path(dir) / kAdapterConfig, ec);
}

models::LoraOptions read_adapter_config(const std::string& dir, std::string* base) {
  const std::string path = (fs::path(dir) / kAdapterConfig).string();
  const json c = read_json_file(path);
  if (!c.is_object() || c.value("peft_type", std::string()) != "LORA")
    throw Error(cat(path, ": not a LoRA adapter (peft_type ", c.is_object() && c.contains("peft_type") ? c["peft_type"].dump() : "missing",
                    "); zoo loads PEFT's LORA adapters"));
  for (const char* unsupported : {"use_dora", "use_rslora"})
    if (c.value(unsupported, false))
      throw Error(cat(path, ": ", unsupported, " is true; zoo implements plain LoRA only"));
  // PEFT's keys and train.lora's; each value is checked as train.lora checks it, and an error
  // names the file's key.
  json mine = json::object();
  for (const auto& [peft, key] : {std::pair{"r", "r"}, {"lora_alpha", "alpha"}, {"lora_dropout", "dropout"},
                                  {"target_modules", "target_modules"}, {"modules_to_save", "modules_to_save"}}) {
    if (!c.contains(peft) || c[peft].is_null()) continue;
    const json value = std::string(key) == "target_modules" && c[peft].is_string() ? json::array({c[peft]}) : c[peft];
    try {
      read_options<models::LoraOptions>(json{{key, value}}, "train.lora");
    } catch (const Error& e) {
      std::string why = e.what();
      if (why.rfind("config: ", 0) == 0) why = why.substr(8);
      throw Error(cat(path, ": ", peft, " ", c[peft].dump(), " is not accepted (", why, "); correct the file, or "
                      "fine-tune its base with --init-from BASE and train.lora"));
    }
    mine[key] = value;
  }
  if (base) *base = c.value("base_model_name_or_path", json(nullptr)).is_string() ? c["base_model_name_or_path"].get<std::string>() : "";
  return read_options<models::LoraOptions>(mine, "train.lora");
}

}  // namespace zoo
