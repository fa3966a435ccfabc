#include "io/checkpoint_assets.h"

#include <algorithm>
#include <filesystem>

#include "core/input_file.h"
#include "data/tokenizer.h"
#include "io/model_files.h"
#include "models/registry.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {
// A BERT sequence classifier's data section: WordPiece, its classes by name, and as many tokens
// as its tokenizer_config.json's model_max_length (what zoo export writes, and what Hugging
// Face's pipelines cut to), else as many as it has positions.
json classifier_data(const json& model, const json& tokenizer) {
  json labels = model.value("labels", json::array());
  for (auto i = labels.size(); i < model.value("num_labels", size_t{2}); ++i) labels.push_back(cat("LABEL_", i));
  const int64_t positions = model.value("max_position_embeddings", int64_t{512});
  int64_t length = positions;
  // Hugging Face writes 1e30 for "no limit"; a length under 3 leaves no room for a token.
  const json& given = tokenizer.value("model_max_length", json());
  if (given.is_number_integer() && given.get<int64_t>() >= 3) length = std::min(positions, given.get<int64_t>());
  json data = {{"tokenizer", "wordpiece"}, {"labels", labels}, {"max_length", length}};
  if (tokenizer.value("zoo_truncation", json()) == "head_tail") data["truncation"] = "head_tail";
  return data;
}
}  // namespace

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
    const json tokenizer = data::read_tokenizer_config(dir);
    if (task == "text_classification") out["data"] = classifier_data(out["model"], tokenizer);
    // A Marian tokenizer (source.spm / target.spm) tells how the sentences were cut.
    if (tokenizer.value("tokenizer_class", json()) == "MarianTokenizer")
      out["data"] = {{"source_tokenizer", "sentencepiece"},
                     {"target_tokenizer", "sentencepiece"},
                     {"joint_vocabulary", !tokenizer.value("separate_vocabs", false)}};
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

namespace {
// The file a message about DIR's tokenizer names: its vocabulary.
std::string tokenizer_file(const std::string& dir) {
  std::error_code ec;
  for (const char* name : {"vocab.txt", "char_vocab.json", "vocab.json", "tokenizer.model", "tokenizer.json"})
    if (fs::is_regular_file(fs::path(dir) / name, ec)) return (fs::path(dir) / name).string();
  return dir;
}

// Without trainer_state.json's file fingerprints (a checkpoint shared as its model, config and
// vocabulary), DIR's tokenizer against the fingerprint its config.json records.
void check_configured_tokenizer(const std::string& dir) {
  std::error_code ec;
  const fs::path path = fs::path(dir) / "config.json";
  if (!fs::is_regular_file(path, ec) || !data::has_tokenizer(dir)) return;
  const json config = read_json_file(path.string());
  const json data = config.is_object() ? config.value("data", json::object()) : json::object();
  const json expected = data.is_object() ? data.value("tokenizer_fingerprint", json()) : json();
  if (!expected.is_string() || expected.get<std::string>().empty()) return;
  data::check_tokenizer_fingerprint(*data::load_tokenizer(dir), expected.get<std::string>(), tokenizer_file(dir));
}
}  // namespace

void check_asset_fingerprints(const std::string& dir) {
  const fs::path state = fs::path(dir) / "trainer_state.json";
  std::error_code ec;
  const json st = fs::is_regular_file(state, ec) ? read_json_file(state.string()) : json();
  if (!st.is_object() || !st.contains("asset_fingerprints") || !st["asset_fingerprints"].is_object())
    return check_configured_tokenizer(dir);
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

}  // namespace zoo
