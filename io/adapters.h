#pragma once
// LoRA adapters in PEFT's files: adapter_model.safetensors ("base_model.model." + the
// model's tensor names) and adapter_config.json (peft_type LORA, r, lora_alpha, ...), written
// into every checkpoint of a run with train.lora and by `zoo export --adapter`, and read back
// onto the base model (resume, eval, `--init-from ADAPTER_DIR`).
#include <optional>
#include <string>

#include <torch/torch.h>

#include "core/options.h"
#include "models/lora.h"

namespace zoo {

/// The adapter files of a directory.
inline constexpr const char* kAdapterWeights = "adapter_model.safetensors";
inline constexpr const char* kAdapterConfig = "adapter_config.json";

/// train.lora of a resolved config, completed: the family's default target_modules and the
/// task's new head as modules_to_save; nullopt when train.lora is null (no adapters).
std::optional<models::LoraOptions> lora_options(const json& config);

/// Adds the adapters of `o` to the model (models::add_lora) and says on stderr how many
/// parameters train: "LoRA r=8 on 12 layers (c_attn): 294,912 of 124,734,720 parameters train (0.24%)".
void attach_lora(torch::nn::Module& model, const models::LoraOptions& o);

/// Writes DIR/adapter_model.safetensors and DIR/adapter_config.json. `base` is the base model's
/// directory (adapter_config's base_model_name_or_path; "" for none).
void save_adapter(const torch::nn::Module& model, const std::string& dir, const models::LoraOptions& o,
                  const json& config, const std::string& base);

/// Loads DIR/adapter_model.safetensors into the model's adapters (attach_lora first): every
/// adapter tensor must be in the file with its shape, and the file must hold nothing else.
void load_adapter(torch::nn::Module& model, const std::string& dir, const models::LoraOptions& o);

/// A checkpoint's weights into `model` built from its `config`: DIR/model.safetensors (or its
/// shards) strictly, in the layout of config's model_type, then for a LoRA run (train.lora and
/// an adapter file) the adapters, merged into the weights when `merge`.
void load_checkpoint_weights(torch::nn::Module& model, const std::string& dir, const json& config, bool merge);

/// Whether DIR holds a PEFT adapter (adapter_config.json).
bool is_adapter_dir(const std::string& dir);

/// DIR/adapter_config.json -> the adapter's options; `base` gets base_model_name_or_path.
/// Throws zoo::Error for another peft_type or options zoo does not implement (use_dora, ...).
models::LoraOptions read_adapter_config(const std::string& dir, std::string* base);

}  // namespace zoo
