#include "io/inference_model.h"

#include <filesystem>

#include "io/adapters.h"
#include "io/checkpoint.h"
#include "io/memory_budget.h"
#include "models/registry.h"

namespace zoo {

void check_inference_memory(const json& config, const std::string& dir) {
  if (!config.value("train", json::object()).value("check_memory", true)) return;
  const std::string source = (std::filesystem::path(dir) / "config.json").string();
  check_memory_budget(estimate_inference_memory(config.at("model")), torch::kCPU, cat(source, ": this model"));
}

std::shared_ptr<torch::nn::Module> load_inference_model(const std::string& dir, const json& config,
                                                        const torch::Device& device) {
  check_inference_memory(config, dir);
  check_asset_fingerprints(dir);
  auto model = models::build_model(config.at("model"), config.value("task", std::string()));
  load_checkpoint_weights(*model, dir, config, /*merge=*/true);
  model->to(device);
  model->eval();
  return model;
}

InferenceSource open_inference_source(const std::string& given, const std::string& task, const std::string& command) {
  InferenceSource source{model_dir(given), json()};
  source.config = load_checkpoint_config(source.dir);
  const std::string type = source.config.at("model").value("model_type", std::string());
  std::string has = source.config.value("task", std::string());
  if (has.empty() && !type.empty()) has = models::model_entry(type).default_task;
  if (has != task)
    throw Error(cat(given, ": a model for '", has, "' (model_type '", type, "'); ", command, " needs one for '", task,
                    "'"));
  return source;
}

}  // namespace zoo
