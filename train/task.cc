#include "train/task.h"

#include <filesystem>

#include "models/registry.h"
#include "train/checkpoint.h"
#include "train/tasks/image_classification.h"
#include "train/tasks/translation.h"
#include "train/trainer.h"

namespace zoo {

// ---------------------------------------------------------------------------------
// Task registry

json resolve_config(json config, const std::string& source) {
  check_sections(config, source);
  try {
    json out;
    out["model"] = models::resolve_model_config(config.value("model", json()));
    const std::string type = out["model"]["model_type"];
    if (type == "vit") {
      auto d = read_options<ImageDataOptions>(config.value("data", json::object()), "data");
      d.resolve(out["model"]["num_channels"].get<int64_t>());
      out["data"] = to_json(d);
    } else if (type == "seq2seq") {
      out["data"] = to_json(read_options<TranslationDataOptions>(config.value("data", json::object()), "data"));
    }
    out["train"] = to_json(read_options<TrainOptions>(config.value("train", json::object()), "train"));
    return out;
  } catch (const Error& e) {
    throw Error(cat(source, ": ", e.what()));
  }
}

std::unique_ptr<Task> make_task(const json& config, const std::string& checkpoint_dir) {
  const std::string type = config.at("model").at("model_type");
  if (type == "vit") return std::make_unique<ImageClassificationTask>(config);
  if (type == "seq2seq") return std::make_unique<TranslationTask>(config, checkpoint_dir);
  throw Error(cat("no task for model_type '", type, "'"));
}


std::unique_ptr<Task> load_task(const std::string& dir, const std::vector<std::string>& overrides,
                                const torch::Device& device) {
  json raw = load_checkpoint_config(dir);
  for (const auto& s : overrides) apply_override(raw, s);
  const json config = resolve_config(raw, (std::filesystem::path(dir) / "config.json").string());
  auto task = make_task(config, dir);
  load_model(*task->model(), (std::filesystem::path(dir) / "model.safetensors").string());
  task->model()->to(device);
  task->model()->eval();
  return task;
}

}  // namespace zoo
