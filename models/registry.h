#pragma once
// model_type -> options, presets by name, and conversion to/from Hugging Face configs.
#include <string>
#include <vector>

#include "core/options.h"

namespace zoo::models {

/// Model types zoo can build ("vit", ...).
const std::vector<std::string>& model_types();
/// Preset names ("vit-tiny", "vit-base-patch16-224", ...).
std::vector<std::string> preset_names();

/// Expands "preset" (if any), checks model_type, validates every field and fills defaults.
/// Returns the canonical model section (model_type first, all fields present).
json resolve_model_config(const json& model_section);

/// A Hugging Face config.json (top-level "model_type") -> our model section. Keys we do not
/// use (architectures, torch_dtype, ...) are ignored, as transformers does.
json from_hf_config(const json& hf);
/// Our model section -> a config.json that transformers' from_pretrained accepts.
json to_hf_config(const json& model_section);

}  // namespace zoo::models
