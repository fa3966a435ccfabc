#pragma once
// The task registry: one table entry per task (train/task_registry.cc, kTasks): its name,
// the model types it can train, its "data" options (resolve and describe) and its factory.
// A config names its task ("task": "translation"); without one it gets the model type's
// default task (models/registry.h), so older configs and checkpoints keep working.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "io/config.h"
#include "train/task.h"

namespace zoo {

struct TaskEntry {
  std::string name;
  std::vector<std::string> model_types;
  /// The "data" section -> its canonical form, every field filled in; `model` is the
  /// resolved model section (e.g. for the image channels).
  std::function<json(const json& data, const json& model)> resolve_data;
  /// The keys of the "data" section, with default and help (`zoo train --help-config`).
  std::function<std::vector<detail::Doc>()> describe_data;
  /// Builds the task; `checkpoint_dir`, when not empty, is where assets are loaded from.
  std::function<std::unique_ptr<Task>(const json& config, const TaskContext& context,
                                      const std::string& checkpoint_dir)>
      make;
};

const std::vector<TaskEntry>& task_registry();
/// The entry of `name`; throws zoo::Error listing the tasks (with "did you mean").
const TaskEntry& task_entry(const std::string& name);

/// The task of a config: its "task" key, else the model type's default task.
std::string task_name(const json& config);

/// Validates a config and fills every default: the "resolved config" written to
/// OUT/config.json and into each checkpoint ({"task", "model", "data", "train"}). Throws
/// zoo::Error naming `source` on problems.
json resolve_config(json config, const std::string& source);

/// resolve_config() of a training config, whose model, when its weights start from a checkpoint
/// (train.init_from; the checkpoint `resumed` when --resume continues such a run), takes that
/// checkpoint's architecture (models::ModelEntry::architecture_keys: layers, widths, heads...)
/// where the config's differs, as Hugging Face's from_pretrained does, except the keys that
/// `overrides` (the command line's --set) give: model.KEY, or model.preset for all of them.
/// Each key taken is printed with both values. A checkpoint of another model type, or a
/// directory without config.json (a PEFT adapter), leaves the config as it is.
json resolve_training_config(json raw, const std::string& source, const std::vector<std::string>& overrides,
                             const std::string& resumed);

/// The context a task gets from a resolved config's train section, on the CPU in fp32 until
/// the trainer says otherwise.
TaskContext task_context(const json& config);

/// Builds the task for a resolved config. Seeds the global RNG with train.seed first, so the
/// model's initial weights depend on the seed only. `checkpoint_dir`, when given, is where
/// assets (vocabularies) are loaded from.
std::unique_ptr<Task> make_task(const json& config, const std::string& checkpoint_dir = "");

/// Rebuilds the task of a checkpoint directory (zoo's, or a Hugging Face config.json +
/// model.safetensors), applies --set overrides, loads the weights, moves to `device` and
/// puts the model in eval mode.
/// A checkpoint of a LoRA run (train.lora, adapter_model.safetensors) gets its adapters, merged
/// into the weights unless `merge_adapters` is false.
std::unique_ptr<Task> load_task(const std::string& dir, const std::vector<std::string>& overrides,
                                const torch::Device& device, bool merge_adapters = true);

/// The keys of a task's configuration with their defaults and help, section by section, as
/// `zoo train --help-config` prints them: the model section of `model_type` (or the task's
/// first model type), the task's data section and the train section.
std::string describe_config(const std::string& task, const std::string& model_type = "");

}  // namespace zoo
