#include "io/pretrained.h"

#include <filesystem>
#include <iostream>
#include <map>
#include <set>

#include "io/model_files.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {

// "FROM=TO" renames, checked.
std::vector<std::pair<std::string, std::string>> parse_key_map(const std::vector<std::string>& key_map) {
  std::vector<std::pair<std::string, std::string>> renames;
  for (const auto& entry : key_map) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos)
      throw Error(cat("config: train.init_from_key_map entry \"", entry,
                      "\" must be FROM=TO (a tensor-name prefix of the file and its replacement, either may be empty)"));
    renames.emplace_back(entry.substr(0, eq), entry.substr(eq + 1));
  }
  return renames;
}

std::string renamed(const std::string& name, const std::vector<std::pair<std::string, std::string>>& renames) {
  for (const auto& [from, to] : renames)
    if (name.rfind(from, 0) == 0) return to + name.substr(from.size());
  return name;
}

// `name` with each all-digit part replaced by '#' ("bert.encoder.layer.3.output.dense.weight"
// -> "bert.encoder.layer.#.output.dense.weight": that tensor of every layer).
std::string layer_pattern(const std::string& name) {
  std::string out, part;
  std::istringstream parts(name);
  while (std::getline(parts, part, '.')) out += (out.empty() ? "" : ".") + (is_index(part) ? std::string("#") : part);
  return out;
}

// `name` up to and including its first all-digit part ("bert.encoder.layer.3."), or "".
std::string layer_prefix(const std::string& name) {
  std::string part;
  size_t end = 0;
  std::istringstream parts(name);
  while (std::getline(parts, part, '.')) {
    end += part.size() + 1;
    if (is_index(part)) return name.substr(0, end);
  }
  return "";
}

// Throws when tensors that the model did not take belong to layers it has fewer of (the model
// has the same tensor at another layer index): a model built shallower than its checkpoint,
// which would otherwise train as a silently truncated copy. `source_of`: the model's name of
// each tensor of the file (after train.init_from_key_map) -> the file's; `used`: the file's
// names that were loaded.
void check_no_layer_left_out(const std::string& path, const std::map<std::string, std::string>& source_of,
                             const std::set<std::string>& used,
                             const std::vector<std::pair<std::string, torch::Tensor>>& model_tensors) {
  std::set<std::string> patterns;
  for (const auto& [name, _] : model_tensors) patterns.insert(layer_pattern(name));
  std::vector<std::string> left_out;
  for (const auto& [target, name] : source_of) {
    const std::string pattern = layer_pattern(target);
    if (!used.count(name) && pattern != target && patterns.count(pattern)) left_out.push_back(name);
  }
  if (left_out.empty()) return;
  const std::string prefix = layer_prefix(left_out.front());
  throw Error(cat(path, ": ", left_out.size(), " of its tensors belong to layers the model does not have (e.g. '",
                  left_out.front(), "'): the model is built with fewer layers than the checkpoint. Its shape comes "
                  "from the checkpoint's config.json unless --set model.KEY=VALUE gives it: drop the --set that "
                  "makes it shallower, or, to keep only the first layers on purpose, send the others elsewhere with "
                  "train.init_from_key_map, e.g. \"", prefix, "=unused.", prefix, "\""));
}

void print_names(const std::string& title, const std::vector<std::string>& names) {
  if (names.empty()) return;
  std::cerr << "zoo: " << title << ":";
  for (const auto& n : names) std::cerr << " " << n;
  std::cerr << "\n";
}

}  // namespace

PretrainedReport init_from_pretrained(torch::nn::Module& model, const std::string& given,
                                      const std::vector<std::string>& key_map, const std::string& model_type) {
  const std::string dir = model_dir(given);
  const std::string path = (fs::path(dir) / "model.safetensors").string();
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(cat("train.init_from: ", dir, ": no such directory; give a zoo checkpoint or a Hugging Face model "
                    "directory with model.safetensors"));
  if (!has_weights(dir))
    throw Error(cat("train.init_from: ", path, ": missing; the directory needs model.safetensors or "
                    "model.safetensors.index.json and its shards (Hugging Face: save_pretrained(..., "
                    "safe_serialization=True))"));
  const auto renames = parse_key_map(key_map);
  auto file = load_converted(path, model_type);
  std::map<std::string, std::string> source_of;  // model name -> file name
  PretrainedReport report;
  for (const auto& [name, _] : file.tensors) {
    const std::string target = renamed(name, renames);
    if (source_of.count(target))
      throw Error(cat(path, ": tensors '", source_of[target], "' and '", name, "' both map to '", target,
                      "'; fix train.init_from_key_map"));
    source_of[target] = name;
  }
  torch::NoGradGuard no_grad;
  std::set<std::string> used;
  for (auto& [name, tensor] : state_dict(model)) {
    auto it = source_of.find(name);
    if (it == source_of.end()) {
      report.missing.push_back(name);
      continue;
    }
    const torch::Tensor& source = file.tensors.at(it->second);
    if (source.sizes() != tensor.sizes())
      throw Error(cat(path, ": tensor '", it->second, "' has shape ", source.sizes(), " but the model's '", name,
                      "' has shape ", tensor.sizes(), "; the configs differ (or map it elsewhere with "
                      "train.init_from_key_map)"));
    check_dtype(path, it->second, source, tensor);
    tensor.copy_(source.to(tensor.dtype()));
    report.loaded.push_back(name);
    used.insert(it->second);
  }
  for (const auto& [name, _] : file.tensors)
    if (!used.count(name)) report.unexpected.push_back(name);
  check_no_layer_left_out(path, source_of, used, state_dict(model));
  if (report.loaded.empty())
    throw Error(cat(path, ": none of its ", file.tensors.size(), " tensors matches a tensor of the model (e.g. '",
                    file.tensors.empty() ? std::string() : file.tensors.begin()->first, "' against '",
                    state_dict(model).empty() ? std::string() : state_dict(model).front().first,
                    "'); map the names with train.init_from_key_map, e.g. \"FROM=TO\""));
  std::cerr << "zoo: init_from " << dir << ": loaded " << report.loaded.size() << " of "
            << report.loaded.size() + report.missing.size() << " tensors\n";
  print_names(cat("some weights of ", path, " were not used (unexpected)"), report.unexpected);
  print_names("some weights of the model were not initialized from the checkpoint and are newly initialized (missing)",
              report.missing);
  return report;
}

}  // namespace zoo
