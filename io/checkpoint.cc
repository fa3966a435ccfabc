#include "io/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "core/input_file.h"
#include "core/output_file.h"
#include "data/tokenizer.h"
#include "models/lora.h"
#include "models/registry.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace zoo {

std::string checkpoint_dir_name(int64_t step) { return cat("checkpoint-", step); }

namespace {
// A non-empty run of decimal digits: a checkpoint's step, a layer's index in a tensor name.
bool is_index(const std::string& part) {
  return !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
}
}  // namespace

std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& output_dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(output_dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("checkpoint-", 0) != 0 || !entry.is_directory()) continue;
    const std::string digits = name.substr(11);
    if (!is_index(digits) || digits.size() > 18) continue;  // 18 digits fit an int64_t
    if (!fs::exists(entry.path() / "trainer_state.json")) continue;  // not one of ours / incomplete
    out.emplace_back(std::stoll(digits), entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string latest_checkpoint(const std::string& output_dir) {
  auto all = list_checkpoints(output_dir);
  return all.empty() ? "" : all.back().second;
}

void rotate_checkpoints(const std::string& output_dir, int64_t keep, const std::string& protect) {
  if (keep <= 0) return;
  auto all = list_checkpoints(output_dir);  // oldest first
  std::error_code ec;
  const auto protected_path = protect.empty() ? fs::path() : fs::weakly_canonical(protect, ec);
  const int64_t n = static_cast<int64_t>(all.size());
  for (int64_t i = 0; i + keep < n; ++i) {  // everything but the newest `keep`...
    if (!protect.empty() && fs::weakly_canonical(all[i].second, ec) == protected_path) continue;  // ...and the best
    fs::remove_all(all[i].second, ec);
  }
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
  if (!fs::is_regular_file(refs, ec) || !fs::is_directory(fs::path(dir) / "snapshots", ec)) return dir;
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

namespace {
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
}  // namespace

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

json load_checkpoint_config(const std::string& given) {
  const std::string dir = model_dir(given);
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(cat(dir, ": no such checkpoint directory"));
  const std::string path = (fs::path(dir) / "config.json").string();
  if (!fs::exists(path)) throw Error(cat(dir, ": not a checkpoint (no config.json)"));
  json config = read_json_file(path);
  if (config.is_object() && config.contains("model_type") && !config.contains("model")) {
    std::string task;
    json out{{"model", models::from_hf_config(config, &task)}};
    if (!task.empty()) out["task"] = task;
    // A Hugging Face image processor tells how the model's inputs were normalised.
    const auto pre = fs::path(dir) / "preprocessor_config.json";
    if (fs::exists(pre)) {
      const json p = read_json_file(pre.string());
      if (p.contains("image_mean") && p.contains("image_std"))
        out["data"] = {{"mean", p["image_mean"]}, {"std", p["image_std"]}};
    }
    if (task == "text_classification") {  // a BERT sequence classifier: WordPiece, its classes by name
      json labels = out["model"].value("labels", json::array());
      for (auto i = labels.size(); i < out["model"].value("num_labels", size_t{2}); ++i) labels.push_back(cat("LABEL_", i));
      // It reads as many tokens as it has positions (BertTokenizer's model_max_length, as a rule).
      out["data"] = {{"tokenizer", "wordpiece"}, {"labels", labels},
                     {"max_length", out["model"].value("max_position_embeddings", int64_t{512})}};
    }
    // A Marian tokenizer (source.spm / target.spm) tells how the sentences were cut.
    const auto tok = fs::path(dir) / "tokenizer_config.json";
    if (fs::exists(tok)) {
      const json t = read_json_file(tok.string());
      if (t.value("tokenizer_class", "") == "MarianTokenizer")
        out["data"] = {{"source_tokenizer", "sentencepiece"},
                       {"target_tokenizer", "sentencepiece"},
                       {"joint_vocabulary", !t.value("separate_vocabs", false)}};
    }
    return out;
  }
  return config;
}

std::set<std::string> file_names(const std::string& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file()) names.insert(e.path().filename().string());
  return names;
}

namespace {
std::string file_fingerprint(const std::string& path) { return data::fnv1a_hex(read_text_input(path, "checkpoint asset")); }
}  // namespace

json asset_fingerprints(const std::string& dir, const std::set<std::string>& before) {
  json out = json::object();
  for (const auto& name : file_names(dir))
    if (!before.count(name)) out[name] = file_fingerprint((fs::path(dir) / name).string());
  return out;
}

void check_asset_fingerprints(const std::string& dir) {
  const fs::path state = fs::path(dir) / "trainer_state.json";
  std::error_code ec;
  if (!fs::is_regular_file(state, ec)) return;
  const json st = read_json_file(state.string());
  if (!st.is_object() || !st.contains("asset_fingerprints") || !st["asset_fingerprints"].is_object()) return;
  for (const auto& [name, expected] : st["asset_fingerprints"].items()) {
    if (!expected.is_string() || name.find('/') != std::string::npos || name.find("..") != std::string::npos) continue;
    const fs::path file = fs::path(dir) / name;
    if (!fs::exists(file, ec))
      throw Error(cat(file.string(), ": missing; the checkpoint was saved with it (trainer_state.json lists it)"));
    const std::string found = file_fingerprint(file.string());
    if (found != expected.get<std::string>())
      throw Error(cat(file.string(), ": not the file this checkpoint was saved with (fingerprint ", found, ", saved ",
                      expected.get<std::string>(), " in ", state.string(), "), so it does not belong to this "
                      "checkpoint: the model's ids would mean other tokens; put the checkpoint's own ", name, " back"));
  }
}

namespace {
void fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

void save_optimizer(const torch::optim::Optimizer& optimizer, const std::string& path) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  OutputFile out(path);
  // The archive's sink must take every byte (its writer cannot fail cleanly): OutputFile keeps
  // a failure and reports it at close().
  archive.save_to([&](const void* data, size_t n) -> size_t {
    out.write(data, n);
    return n;
  });
  try {
    out.close();
  } catch (const Error& e) {
    throw Error(cat(e.what(), "; this checkpoint is not saved"));
  }
}

CheckpointWriter::CheckpointWriter(const std::string& output_dir, int64_t step) {
  final_ = (fs::path(output_dir) / checkpoint_dir_name(step)).string();
  tmp_ = (fs::path(output_dir) / ("." + checkpoint_dir_name(step) + ".tmp")).string();
  std::error_code ec;
  fs::remove_all(tmp_, ec);  // leftover of a killed run
  fs::create_directories(tmp_, ec);
  if (ec) throw Error(cat(tmp_, ": cannot create checkpoint directory: ", ec.message()));
}

CheckpointWriter::~CheckpointWriter() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

std::string CheckpointWriter::path(const std::string& file) const { return (fs::path(tmp_) / file).string(); }

std::string CheckpointWriter::commit() {
  for (const auto& e : fs::directory_iterator(tmp_)) fsync_path(e.path());
  fsync_path(tmp_);
  std::error_code ec;
  if (fs::exists(final_)) {
    // Same step saved twice (e.g. periodic save then end of run): replace atomically-ish by
    // moving the old one aside first.
    const std::string old = final_ + ".old";
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    fs::rename(tmp_, final_, ec);
    if (ec) throw Error(cat(final_, ": cannot move checkpoint into place: ", ec.message()));
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp_, final_, ec);
    if (ec) throw Error(cat(final_, ": cannot move checkpoint into place: ", ec.message()));
  }
  fsync_path(fs::path(final_).parent_path());
  committed_ = true;
  return final_;
}

std::string base64_encode(const std::string& in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63], tbl[v & 63]};
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63], '='};
  }
  return out;
}

std::string base64_decode(const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = val(c);
    if (v < 0) throw Error("trainer_state.json: corrupt base64 RNG state");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace zoo
