#include "io/inference_model.h"

#include <algorithm>
#include <filesystem>

#include "io/adapters.h"
#include "io/checkpoint.h"
#include "io/memory_budget.h"
#include "models/quantize.h"
#include "models/registry.h"

namespace zoo {

void check_inference_memory(const json& config, const std::string& dir) {
  if (!config.value("train", json::object()).value("check_memory", true)) return;
  const std::string source = (std::filesystem::path(dir) / "config.json").string();
  check_memory_budget(estimate_inference_memory(config.at("model")), torch::kCPU, cat(source, ": this model"));
}

std::shared_ptr<torch::nn::Module> load_inference_model(const std::string& dir, const json& config,
                                                        const torch::Device& device, const std::string& quantize) {
  models::check_quantize(quantize, device);
  check_inference_memory(config, dir);
  check_asset_fingerprints(dir);
  auto model = models::build_model(config.at("model"), config.value("task", std::string()));
  load_checkpoint_weights(*model, dir, config, /*merge=*/true);
  model->to(device);
  model->eval();
  models::quantize_model(*model, quantize);
  return model;
}

std::string InferenceSource::task() const {
  const std::string named = config.value("task", std::string());
  if (!named.empty()) return named;
  const std::string type = config.at("model").value("model_type", std::string());
  return type.empty() ? std::string() : models::model_entry(type).default_task;
}

InferenceSource open_inference_source(const std::string& given) {
  InferenceSource source{model_dir(given), json()};
  source.config = load_checkpoint_config(source.dir);
  return source;
}

void require_task(const InferenceSource& source, const std::string& given, const std::vector<std::string>& tasks,
                  const std::string& command) {
  const std::string has = source.task();
  if (std::find(tasks.begin(), tasks.end(), has) != tasks.end()) return;
  std::string wanted;
  for (const auto& t : tasks) wanted += cat(wanted.empty() ? "" : " or ", "'", t, "'");
  throw Error(cat(given, ": a model for '", has, "' (model_type '",
                  source.config.at("model").value("model_type", std::string()), "'); ", command, " needs one for ",
                  wanted));
}

InferenceSource open_inference_source(const std::string& given, const std::string& task, const std::string& command) {
  auto source = open_inference_source(given);
  require_task(source, given, {task}, command);
  return source;
}

}  // namespace zoo
