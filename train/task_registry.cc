#include "train/task_registry.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>

#include "models/registry.h"
#include "io/adapters.h"
#include "io/checkpoint.h"
#include "io/inference_model.h"
#include "train/memory_budget.h"
#include "train/tasks/bert_pretraining.h"
#include "train/tasks/text_classification.h"
#include "train/tasks/image_classification.h"
#include "train/tasks/language_modeling.h"
#include "train/tasks/translation.h"
#include "train/train_options.h"

namespace zoo {

namespace {

json resolve_image_data(const json& data, const json& model) {
  auto d = read_options<ImageDataOptions>(data, "data");
  d.resolve(model.at("num_channels").get<int64_t>());
  return to_json(d);
}

json resolve_translation_data(const json& data, const json&) {
  return to_json(read_options<TranslationDataOptions>(data, "data"));
}

json resolve_bert_pretraining_data(const json& data, const json&) {
  return to_json(read_options<BertPretrainingDataOptions>(data, "data"));
}

json resolve_text_classification_data(const json& data, const json&) {
  return to_json(read_options<TextClassificationDataOptions>(data, "data"));
}

json resolve_language_modeling_data(const json& data, const json&) {
  return to_json(read_options<LanguageModelingDataOptions>(data, "data"));
}

// The factory of a task class whose constructor takes (config, context, checkpoint_dir).
template <class T>
std::unique_ptr<Task> make_with_assets(const json& config, const TaskContext& context, const std::string& dir) {
  return std::make_unique<T>(config, context, dir);
}

std::unique_ptr<Task> make_image_classification(const json& config, const TaskContext& context,
                                                const std::string&) {
  return std::make_unique<ImageClassificationTask>(config, context);
}

}  // namespace

const std::vector<TaskEntry>& task_registry() {
  static const std::vector<TaskEntry> table{
      {"image_classification", {"vit"}, resolve_image_data, describe_options<ImageDataOptions>,
       make_image_classification},
      // Translation trains every model type whose models::ModelEntry is_encoder_decoder: it
      // builds the model with models::build_encoder_decoder() and knows it only as a
      // models::EncoderDecoder, so a new encoder-decoder is served without a change here.
      {"translation", models::encoder_decoder_types(), resolve_translation_data, describe_options<TranslationDataOptions>,
       make_with_assets<TranslationTask>},
      {"language_modeling", {"gpt2"}, resolve_language_modeling_data, describe_options<LanguageModelingDataOptions>,
       make_with_assets<LanguageModelingTask>},
      {"bert_pretraining", {"bert"}, resolve_bert_pretraining_data, describe_options<BertPretrainingDataOptions>,
       make_with_assets<BertPretrainingTask>},
      {"text_classification", {"bert"}, resolve_text_classification_data,
       describe_options<TextClassificationDataOptions>, make_with_assets<TextClassificationTask>},
  };
  return table;
}

const TaskEntry& task_entry(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& e : task_registry()) {
    if (e.name == name) return e;
    names.push_back(e.name);
  }
  const std::string near = nearest(name, names);
  throw Error(cat("config: unknown task '", name, "'; tasks: ", join(names),
                  near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

std::string task_name(const json& config) {
  if (config.contains("task")) {
    if (!config["task"].is_string()) throw Error("config: task must be a string, e.g. \"translation\"");
    return config["task"];
  }
  return models::model_entry(config.at("model").at("model_type")).default_task;
}

namespace {
// Throws unless `task` trains `model_type`.
void check_trains(const TaskEntry& task, const std::string& model_type, const std::string& prefix = "") {
  if (std::find(task.model_types.begin(), task.model_types.end(), model_type) != task.model_types.end()) return;
  throw Error(cat(prefix, "the task '", task.name, "' cannot train model_type '", model_type, "'; it trains ",
                  join(task.model_types)));
}
}  // namespace

namespace {
// "model": {"preset": DIR, ...}: the model section of the zoo checkpoint or Hugging Face
// directory DIR (fine-tuning a model whose sizes the user need not repeat), the other keys
// overriding it. Any other preset is left to the model registry.
void expand_directory_preset(json& config) {
  if (!config.contains("model") || !config["model"].is_object()) return;
  const json& section = config["model"];
  if (!section.contains("preset") || !section["preset"].is_string()) return;
  const std::string name = section["preset"];
  const auto presets = models::preset_names();
  if (std::find(presets.begin(), presets.end(), name) != presets.end()) return;
  if (name.find('/') == std::string::npos || !std::filesystem::exists(std::filesystem::path(model_dir(name)) / "config.json"))
    return;
  const json loaded = load_checkpoint_config(name);
  json model = loaded.at("model");
  for (auto it = section.begin(); it != section.end(); ++it)
    if (it.key() != "preset") model[it.key()] = it.value();
  config["model"] = model;
  if (!config.contains("task") && loaded.contains("task")) config["task"] = loaded["task"];
}
}  // namespace

json resolve_config(json config, const std::string& source) {
  check_sections(config, source);
  try {
    expand_directory_preset(config);
    json out;
    out["model"] = models::resolve_model_config(config.value("model", json()));
    const std::string type = out["model"]["model_type"];
    json named = config;
    named["model"] = out["model"];
    const std::string name = task_name(named);
    const TaskEntry& task = task_entry(name);
    check_trains(task, type, "config: ");
    out["task"] = name;
    out["data"] = task.resolve_data(config.value("data", json::object()), out["model"]);
    out["train"] = to_json(read_options<TrainOptions>(config.value("train", json::object()), "train"));
    return out;
  } catch (const Error& e) {
    throw Error(cat(source, ": ", e.what()));
  }
}

namespace {
// The model keys that the command line's --set gives ("*" for all: model.preset or model).
std::set<std::string> keys_set_by(const std::vector<std::string>& overrides) {
  std::set<std::string> keys;
  for (const auto& o : overrides) {
    const std::string key = o.substr(0, o.find('='));
    if (key == "model" || key == "model.preset") keys.insert("*");
    else if (key.rfind("model.", 0) == 0) keys.insert(key.substr(6));
  }
  return keys;
}
}  // namespace

json resolve_training_config(json raw, const std::string& source, const std::vector<std::string>& overrides,
                             const std::string& resumed) {
  json config = resolve_config(raw, source);
  const std::string init_from = config.at("train").value("init_from", "");
  if (init_from.empty()) return config;
  const std::filesystem::path path = std::filesystem::path(resumed.empty() ? model_dir(init_from) : resumed) / "config.json";
  std::error_code ec;
  const std::set<std::string> given = keys_set_by(overrides);
  if (given.count("*") || !std::filesystem::is_regular_file(path, ec)) return config;
  json theirs;
  try {
    theirs = models::resolve_model_config(load_checkpoint_config(path.parent_path().string()).at("model"));
  } catch (const Error& e) {  // e.g. another family's Hugging Face directory, its names mapped by init_from_key_map
    std::cerr << "zoo: warning: " << path.string() << ": " << e.what() << "; the model keeps the config's architecture\n";
    return config;
  }
  json model = config.at("model");
  if (theirs.at("model_type") != model.at("model_type")) return config;
  std::string taken;
  for (const auto& key : models::model_entry(model.at("model_type")).architecture_keys) {
    if (given.count(key) || !theirs.contains(key) || theirs[key] == model[key]) continue;
    taken += cat(taken.empty() ? "" : ", ", key, " ", theirs[key].dump(), " (the config: ", model[key].dump(), ")");
    model[key] = theirs[key];
  }
  if (taken.empty()) return config;
  std::cerr << "zoo: the model takes its architecture from " << path.string() << ": " << taken
            << "; --set model.KEY=VALUE keeps the config's\n";
  raw["model"] = model;
  return resolve_config(raw, source);
}

TaskContext task_context(const json& config) {
  const auto train = read_options<TrainOptions>(config.value("train", json::object()), "train");
  TaskContext context;
  context.seed = train.seed;
  context.label_smoothing = train.label_smoothing_factor;
  context.r_drop_alpha = train.r_drop_alpha;
  return context;
}

namespace {
// train.r_drop_alpha > 0 only where the task's loss runs R-Drop (train/objectives.h r_drop_loss).
void check_r_drop(const std::string& task, double alpha) {
  static const std::vector<std::string> tasks{"translation", "text_classification", "image_classification"};
  if (alpha == 0 || std::find(tasks.begin(), tasks.end(), task) != tasks.end()) return;
  throw Error(cat("config: train.r_drop_alpha=", alpha, ": R-Drop is implemented for the tasks ", join(tasks),
                  ", not '", task, "'; set train.r_drop_alpha=0"));
}
}  // namespace

std::unique_ptr<Task> make_task(const json& config, const std::string& checkpoint_dir) {
  const TaskContext context = task_context(config);
  check_r_drop(task_name(config), context.r_drop_alpha);
  torch::manual_seed(static_cast<uint64_t>(context.seed));  // the initial weights depend on the seed only
  // A task reads its vocabulary from the checkpoint it starts from: it must be the saved one.
  const std::string init_from = model_dir(config.value("train", json::object()).value("init_from", std::string()));
  std::error_code ec;
  if (!checkpoint_dir.empty()) check_asset_fingerprints(checkpoint_dir);
  else if (!init_from.empty() && std::filesystem::is_directory(init_from, ec)) check_asset_fingerprints(init_from);
  return task_entry(task_name(config)).make(config, context, checkpoint_dir);
}

std::unique_ptr<Task> load_task(const std::string& given, const std::vector<std::string>& overrides,
                                const torch::Device& device, bool merge_adapters) {
  const std::string dir = model_dir(given);
  json raw = load_checkpoint_config(dir);
  for (const auto& s : overrides) apply_override(raw, s);
  const std::string source = (std::filesystem::path(dir) / "config.json").string();
  const json config = resolve_config(raw, source);
  check_inference_memory(config, dir);
  auto task = make_task(config, dir);
  load_checkpoint_weights(*task->model(), dir, config, merge_adapters);
  task->model()->to(device);
  task->model()->eval();
  TaskContext context = task->context();
  context.device = device;
  task->set_context(context);
  return task;
}

namespace {
void describe_section(std::ostringstream& os, const std::string& section, const std::vector<detail::Doc>& docs) {
  os << section << ":\n";
  for (const auto& d : docs) {
    os << "  " << section << "." << d.key << " (" << d.type << ", default " << d.default_value << ")";
    if (!d.limits.empty()) os << " " << d.limits;
    os << "\n      " << d.doc << "\n";
  }
}
}  // namespace

std::string describe_config(const std::string& name, const std::string& model_type) {
  const TaskEntry& task = task_entry(name);
  const std::string type = model_type.empty() ? task.model_types.front() : model_type;
  check_trains(task, type);
  std::ostringstream os;
  os << "task: " << name << " (model types: " << join(task.model_types) << ")\n";
  auto model_docs = models::model_entry(type).describe();
  model_docs.insert(model_docs.begin(), {"model_type", "string", json(type).dump(), "the model family", ""});
  describe_section(os, "model", model_docs);
  describe_section(os, "data", task.describe_data());
  describe_section(os, "train", describe_options<TrainOptions>());
  return os.str();
}

}  // namespace zoo
