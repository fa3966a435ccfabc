#include "io/model_files.h"

#include <filesystem>
#include <map>
#include <set>

#include "core/input_file.h"
#include "io/checkpoint.h"
#include "models/lora.h"
#include "models/registry.h"

namespace fs = std::filesystem;

namespace zoo {

bool is_index(const std::string& part) {
  return !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
}

std::vector<std::pair<std::string, torch::Tensor>> state_dict(const torch::nn::Module& model) {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (const auto& p : model.named_parameters(/*recurse=*/true))
    if (!models::is_lora_name(p.key())) out.emplace_back(p.key(), p.value());  // adapters: io/adapters.h
  for (const auto& b : model.named_buffers(/*recurse=*/true)) out.emplace_back(b.key(), b.value());
  return out;
}

void save_model(const torch::nn::Module& model, const std::string& path, const json& config,
                uint64_t max_shard_bytes) {
  std::map<std::string, std::string> meta{{"format", "pt"}, {"producer", "zoo"}};
  if (config.contains("model")) meta["model_type"] = config["model"].value("model_type", "");
  auto tensors = state_dict(model);
  models::TensorMap converted(tensors.begin(), tensors.end());
  models::tensors_to_file(meta["model_type"], converted);
  if (converted.size() != tensors.size() || !std::equal(tensors.begin(), tensors.end(), converted.begin(),
                                                        [](const auto& a, const auto& b) {
                                                          return a.first == b.first && a.second.is_same(b.second);
                                                        }))
    tensors.assign(converted.begin(), converted.end());
  if (max_shard_bytes > 0) return save_weights(fs::path(path).parent_path().string(), tensors, meta, max_shard_bytes);
  safetensors::save(path, tensors, meta);
}

std::string model_dir(const std::string& dir) {
  std::error_code ec;
  const fs::path refs = fs::path(dir) / "refs" / "main";
  if (!fs::is_regular_file(refs, ec) || !fs::is_directory(fs::path(dir) / "snapshots", ec)) {
    if (has_weights(dir)) return dir;
    const std::string newest = latest_checkpoint(dir);  // a training run's output directory
    return newest.empty() ? dir : newest;
  }
  std::string hash = read_input_file(refs.string(), "Hub cache reference", 4096);
  while (!hash.empty() && std::isspace(static_cast<unsigned char>(hash.back()))) hash.pop_back();
  if (hash.empty() || hash.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
    throw Error(cat(refs.string(), ": not a commit hash; pass the snapshot folder (", dir, "/snapshots/HASH) itself"));
  const fs::path snapshot = fs::path(dir) / "snapshots" / hash;
  if (!fs::is_directory(snapshot, ec))
    throw Error(cat(dir, ": refs/main names snapshot ", hash, ", which is not in snapshots/ (an incomplete download?)"));
  return snapshot.string();
}

namespace {
constexpr const char* kIndex = "model.safetensors.index.json";
}  // namespace

bool has_weights(const std::string& dir) {
  std::error_code ec;
  return fs::exists(fs::path(dir) / "model.safetensors", ec) || fs::exists(fs::path(dir) / kIndex, ec);
}

safetensors::File load_weights(const std::string& dir) {
  const fs::path single = fs::path(dir) / "model.safetensors";
  std::error_code ec;
  if (fs::exists(single, ec) || !fs::exists(fs::path(dir) / kIndex, ec)) return safetensors::load(single.string());
  const std::string index_path = (fs::path(dir) / kIndex).string();
  const json index = read_json_file(index_path);
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(cat(index_path, ": no \"weight_map\" object (tensor name -> shard file)"));
  std::map<std::string, std::set<std::string>> expected;  // shard -> its tensors
  for (const auto& [name, shard] : index["weight_map"].items()) {
    if (!shard.is_string()) throw Error(cat(index_path, ": the shard of '", name, "' is not a file name"));
    const std::string file = shard.get<std::string>();
    if (file.empty() || file.find('/') != std::string::npos || file.find('\\') != std::string::npos || file == "." ||
        file == "..")
      throw Error(cat(index_path, ": shard '", file, "' of '", name, "' is not a file name in ", dir));
    expected[file].insert(name);
  }
  safetensors::File all;
  for (const auto& [file, names] : expected) {
    const std::string path = (fs::path(dir) / file).string();
    auto shard = safetensors::load(path);
    for (auto& [name, tensor] : shard.tensors) {
      if (!names.count(name))
        throw Error(cat(path, ": tensor '", name, "' is not listed for this shard in ", index_path));
      if (all.tensors.count(name)) throw Error(cat(path, ": tensor '", name, "' is in two shards"));
      all.tensors.emplace(name, std::move(tensor));
    }
    for (const auto& name : names)
      if (!all.tensors.count(name)) throw Error(cat(index_path, ": '", name, "' is not in its shard ", path));
    for (auto& [k, v] : shard.metadata) all.metadata.emplace(k, v);
  }
  return all;
}

void save_weights(const std::string& dir, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                  const std::map<std::string, std::string>& metadata, uint64_t max_shard_bytes) {
  std::vector<std::vector<std::pair<std::string, torch::Tensor>>> shards(1);
  uint64_t size = 0, total = 0;
  for (const auto& t : tensors) {
    const uint64_t bytes = static_cast<uint64_t>(t.second.numel()) * t.second.element_size();
    if (max_shard_bytes > 0 && size > 0 && size + bytes > max_shard_bytes) shards.emplace_back(), size = 0;
    shards.back().push_back(t);
    size += bytes;
    total += bytes;
  }
  if (shards.size() == 1) return safetensors::save((fs::path(dir) / "model.safetensors").string(), tensors, metadata);
  json weight_map = json::object();
  for (size_t i = 0; i < shards.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "model-%05zu-of-%05zu.safetensors", i + 1, shards.size());
    safetensors::save((fs::path(dir) / name).string(), shards[i], metadata);
    for (const auto& t : shards[i]) weight_map[t.first] = name;
  }
  write_json_file((fs::path(dir) / kIndex).string(), json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}});
}

void check_finite(const std::string& path, const std::map<std::string, torch::Tensor>& tensors) {
  torch::NoGradGuard no_grad;
  for (const auto& [name, t] : tensors) {
    if (!t.is_floating_point() || t.numel() == 0) continue;
    if (std::isfinite(t.sum().item<double>())) continue;  // a sum that overflows is checked below
    const auto bad = torch::logical_not(torch::isfinite(t)).flatten();
    const int64_t count = bad.sum().item<int64_t>();
    if (count == 0) continue;  // finite values whose sum overflowed
    const int64_t first = bad.nonzero()[0][0].item<int64_t>();
    throw Error(cat(path, ": tensor '", name, "' holds ", count, " non-finite value(s) (", t.flatten()[first].item<double>(),
                    " at flat index ", first, "); the file is damaged, or was saved after training diverged"));
  }
}

// A file's tensors in the model's layout (see save_model), every one finite.
safetensors::File load_converted(const std::string& path, const std::string& model_type) {
  auto file = fs::path(path).filename() == "model.safetensors" ? load_weights(fs::path(path).parent_path().string())
                                                                : safetensors::load(path);
  check_finite(path, file.tensors);
  const auto it = file.metadata.find("model_type");
  models::tensors_from_file(!model_type.empty() || it == file.metadata.end() ? model_type : it->second, file.tensors);
  return file;
}

// Floating-point widths convert into each other; anything else must match the model's dtype.
void check_dtype(const std::string& path, const std::string& name, const torch::Tensor& from, const torch::Tensor& to) {
  if (from.scalar_type() == to.scalar_type() || (from.is_floating_point() && to.is_floating_point())) return;
  throw Error(cat(path, ": tensor '", name, "' is stored as ", from.scalar_type(), " but the model holds ",
                  to.scalar_type(), "; only floating-point widths are converted (the file does not match the model)"));
}

void copy_tensors(const std::string& path, const std::map<std::string, torch::Tensor>& file,
                  const std::vector<std::pair<std::string, torch::Tensor>>& targets, const TensorSet& set) {
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (const auto& [target_name, target] : targets) {
    const std::string name = set.prefix + target_name;
    auto it = file.find(name);
    if (it == file.end()) throw Error(cat(path, ": missing tensor '", name, "' (", set.missing_hint, ")"));
    if (it->second.sizes() != target.sizes())
      throw Error(cat(path, ": tensor '", name, "' has shape ", it->second.sizes(), " but ", set.owner, " expects ",
                      target.sizes(), " (", set.shape_hint, ")"));
    check_dtype(path, name, it->second, target);
    torch::Tensor(target).copy_(it->second.to(target.dtype()));
    used.insert(name);
  }
  for (const auto& [name, _] : file)
    if (!used.count(name))
      throw Error(cat(path, ": unexpected tensor '", name, "' that ", set.owner, " does not have (", file.size(),
                      " in file, ", used.size(), " in ", set.owner, ")"));
}

void load_model(torch::nn::Module& model, const std::string& path, const std::string& model_type) {
  copy_tensors(path, load_converted(path, model_type).tensors, state_dict(model), TensorSet{});
}

}  // namespace zoo
