// zoo export --checkpoint DIR --out DIR: model.safetensors + a Hugging Face config.json
// (+ tokenizer/vocabulary files where the model has them), loadable from Python.
#include <cctype>
#include <filesystem>
#include <map>
#include <iostream>

#include "core/paths.h"
#include "models/registry.h"
#include "tools/commands.h"
#include "io/adapters.h"
#include "io/checkpoint.h"
#include "train/task_registry.h"

namespace fs = std::filesystem;

namespace zoo::cli {

namespace {
struct ExportArgs {
  std::string checkpoint;
  std::string out;
  bool adapter = false;
  std::string max_shard_size;  // "2GB", "500MB", bytes; "" = one file
};

// Hugging Face's max_shard_size: "5GB" (10^9), "500MiB" (2^20), or bytes.
uint64_t shard_bytes(const std::string& text) {
  if (text.empty()) return 0;
  size_t end = 0;
  double value = 0;
  try {
    value = std::stod(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  std::string unit = text.substr(end);
  for (auto& c : unit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  const std::map<std::string, double> units{{"", 1},       {"B", 1},          {"KB", 1e3},     {"MB", 1e6},
                                            {"GB", 1e9},   {"KIB", 1024.0},   {"MIB", 1 << 20}, {"GIB", 1 << 30}};
  const auto it = units.find(unit);
  if (end == 0 || it == units.end() || !(value > 0))
    throw Error(cat("--max-shard-size ", text, ": expected a size such as 2GB, 500MB or 400MiB"));
  return static_cast<uint64_t>(value * it->second);
}

// --adapter: PEFT's two files, for PeftModel.from_pretrained(base, OUT).
int export_adapter(const ExportArgs& a) {
  auto task = load_task(a.checkpoint, {}, torch::Device(torch::kCPU), /*merge_adapters=*/false);
  const json& config = task->config();
  const auto lora = lora_options(config);
  if (!lora || !is_adapter_dir(a.checkpoint))
    throw Error(cat(a.checkpoint, ": no LoRA adapter (its run had no train.lora); export without --adapter"));
  std::string base;
  read_adapter_config(a.checkpoint, &base);
  std::error_code ec;
  fs::create_directories(a.out, ec);
  if (ec) throw Error(cat(a.out, ": cannot create: ", ec.message()));
  save_adapter(*task->model(), a.out, *lora, config, base);
  std::cout << "exported the adapter of " << a.checkpoint << " to " << a.out << " (" << kAdapterWeights << ", "
            << kAdapterConfig << ")" << std::endl;
  return 0;
}

int run_export(const ExportArgs& a) {
  checked_checkpoint_dir(a.checkpoint);
  std::error_code ec;
  if (fs::exists(a.out, ec) && !fs::is_directory(a.out, ec)) throw Error(cat(a.out, ": exists and is not a directory"));
  // The export's config.json is Hugging Face's, not zoo's: written over the checkpoint's own it
  // would leave a checkpoint zoo cannot load.
  if (path_inside(a.out, a.checkpoint) || path_inside(a.checkpoint, a.out))
    throw Error(cat("--out ", a.out, " is the checkpoint ", a.checkpoint, " or holds it; give another directory"));
  if (a.adapter) return export_adapter(a);
  // Loading checks that the weights match the config before anything is written; a LoRA
  // run's adapters are merged into the weights (W + (alpha / r) B A).
  auto task = load_task(a.checkpoint, {}, torch::Device(torch::kCPU));
  const json& config = task->config();
  // A model with no Hugging Face form is refused here, before anything is written.
  const json hf_config = models::to_hf_config(config.at("model"), task_name(config));
  fs::create_directories(a.out, ec);
  if (ec) throw Error(cat(a.out, ": cannot create: ", ec.message()));
  save_model(*task->model(), (fs::path(a.out) / "model.safetensors").string(), config, shard_bytes(a.max_shard_size));
  write_json_file((fs::path(a.out) / "config.json").string(), hf_config);
  task->save_assets(a.out);
  if (config.at("model").value("model_type", "") == "gpt2") {  // as save_pretrained: the generation defaults
    json generation = {{"_from_model_config", true}};
    for (const char* id : {"bos_token_id", "eos_token_id"})
      if (config["model"].value(id, int64_t{-1}) >= 0) generation[id] = config["model"][id];
    write_json_file((fs::path(a.out) / "generation_config.json").string(), generation);
  }
  if (config.contains("data") && config["data"].contains("mean")) {
    // Hugging Face image processor settings, so that pipelines normalise as we trained.
    const auto& d = config["data"];
    const int64_t size = config["model"].value("image_size", 224);
    json pre = {{"image_processor_type", "ViTImageProcessor"}, {"do_normalize", true}, {"do_rescale", true},
                {"rescale_factor", 1.0 / 255}, {"do_resize", true}, {"size", {{"height", size}, {"width", size}}},
                {"image_mean", d["mean"]}, {"image_std", d["std"]}};
    write_json_file((fs::path(a.out) / "preprocessor_config.json").string(), pre);
  }
  if (config.at("model").value("model_type", "") == "transformer" && !fs::exists(fs::path(a.out) / "vocab.json"))
    std::cerr << "zoo: note: no MarianTokenizer files written: they need SentencePiece on both sides with one joint "
                 "vocabulary (data.source_tokenizer=sentencepiece, data.target_tokenizer=sentencepiece, "
                 "data.joint_vocabulary=true); this checkpoint has data.source_tokenizer="
              << config.value("data", json::object()).value("source_tokenizer", "char") << ", data.target_tokenizer="
              << config.value("data", json::object()).value("target_tokenizer", "word")
              << ", so Python needs zoo's source_vocab.json / target_vocab.json to encode text for it" << std::endl;
  const bool sharded = std::filesystem::exists(std::filesystem::path(a.out) / "model.safetensors.index.json");
  std::cout << "exported " << a.checkpoint << " to " << a.out
            << (sharded ? " (model-*.safetensors shards, model.safetensors.index.json, config.json)"
                        : " (model.safetensors, config.json)")
            << std::endl;
  return 0;
}
}  // namespace

void setup_export(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ExportArgs>();
  auto* cmd = app.add_subcommand("export", "Write model.safetensors + Hugging Face config.json for Python");
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint directory")->required();
  cmd->add_option("--out", a->out, "output directory")->required();
  cmd->add_option("--max-shard-size", a->max_shard_size,
                  "write the weights as shards of at most this size (2GB, 500MB, 400MiB) with "
                  "model.safetensors.index.json, as Hugging Face's save_pretrained(max_shard_size=...)");
  cmd->add_flag("--adapter", a->adapter,
                "a LoRA run: write only PEFT's adapter_model.safetensors + adapter_config.json (default: the "
                "adapters merged into a plain Hugging Face model)");
  cmd->callback([a, exit_code] { *exit_code = run_export(*a); });
}

}  // namespace zoo::cli
