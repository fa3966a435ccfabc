#pragma once
// A model for inference, from a checkpoint or a Hugging Face directory: what `zoo eval` and the
// predictors (predict/) load alike. The memory check comes before anything is built, then the
// directory's assets are checked against the fingerprints they were saved with, the model is
// built through the registry and its weights are loaded strictly.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/options.h"

namespace zoo {

/// Refuses, with a zoo::Error naming DIR/config.json and the model keys behind the figure, a
/// model whose weights do not fit the machine (they are built on the CPU, then moved); skipped
/// when config's train.check_memory is false.
void check_inference_memory(const json& config, const std::string& dir);

/// config's model (config.json of `dir`, as load_checkpoint_config() reads it) with the head
/// of config's task: memory checked, the assets of `dir` checked against their fingerprints,
/// built through the model registry, weights loaded strictly and LoRA adapters merged, on
/// `device`, in eval mode; with `quantize` "int8" its linear layers quantized
/// (models/quantize.h: CPU only, checked before anything is read).
std::shared_ptr<torch::nn::Module> load_inference_model(const std::string& dir, const json& config,
                                                        const torch::Device& device, const std::string& quantize = "");

/// What a predictor opens: the model directory of `given` (as model_dir() finds it) and its
/// config (load_checkpoint_config()).
struct InferenceSource {
  std::string dir;
  json config;
  /// The config's task, or, when it names none, its model type's default task.
  std::string task() const;
};
/// The source of `given`, for any task.
InferenceSource open_inference_source(const std::string& given);
/// Throws unless the source's task is one of `tasks`: a zoo::Error naming `given`, the task
/// and model type it has, and what `command` ("zoo translate") needs.
void require_task(const InferenceSource& source, const std::string& given, const std::vector<std::string>& tasks,
                  const std::string& command);
/// The source of `given`, whose task must be `task` (require_task()).
InferenceSource open_inference_source(const std::string& given, const std::string& task, const std::string& command);

}  // namespace zoo
