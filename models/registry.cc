#include "models/registry.h"

#include <algorithm>
#include <map>

#include "models/entry_helpers.h"
#include "models/model_size.h"

namespace zoo::models {

namespace {

struct Preset {
  std::string model_type;
  json fields;
};

const std::map<std::string, Preset>& presets() {
  static const std::map<std::string, Preset> p{
      // ~0.8M parameters: Fashion-MNIST / MNIST from scratch on a CPU.
      {"vit-tiny",
       {"vit",
        {{"hidden_size", 128}, {"num_hidden_layers", 4}, {"num_attention_heads", 4},
         {"intermediate_size", 256}, {"image_size", 28}, {"patch_size", 4}, {"num_channels", 1},
         {"num_labels", 10}, {"hidden_dropout_prob", 0.0}}}},
      // CIFAR-10 sized.
      {"vit-small-cifar",
       {"vit",
        {{"hidden_size", 192}, {"num_hidden_layers", 6}, {"num_attention_heads", 3},
         {"intermediate_size", 384}, {"image_size", 32}, {"patch_size", 4}, {"num_channels", 3},
         {"num_labels", 10}}}},
      // google/vit-base-patch16-224 (Hugging Face defaults).
      {"vit-base-patch16-224",
       {"vit",
        {{"hidden_size", 768}, {"num_hidden_layers", 12}, {"num_attention_heads", 12},
         {"intermediate_size", 3072}, {"image_size", 224}, {"patch_size", 16}, {"num_channels", 3},
         {"num_labels", 1000}}}},
      // Hugging Face's gpt2 (124M); vocab_size 50257 with GPT-2's byte-level BPE.
      {"gpt2",
       {"gpt2",
        {{"vocab_size", 50257}, {"n_positions", 1024}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12},
         {"bos_token_id", 50256}, {"eos_token_id", 50256}}}},
      // GPT-1 as document 000 describes it (12 masked decoder blocks, 768 wide; 512 positions as
      // Radford et al. 2018), in GPT-2's pre-norm layout; the vocabulary comes from the data.
      {"gpt1-doc000",
       {"gpt2",
        {{"vocab_size", 0}, {"n_positions", 512}, {"n_embd", 768}, {"n_layer", 12}, {"n_head", 12},
         {"activation_function", "gelu"}}}},
      // nanoGPT's CPU configuration for tiny Shakespeare, character level.
      {"gpt-nano-char",
       {"gpt2",
        {{"vocab_size", 0}, {"n_positions", 64}, {"n_embd", 128}, {"n_layer", 4}, {"n_head", 4},
         {"resid_pdrop", 0.0}, {"embd_pdrop", 0.0}, {"attn_pdrop", 0.0}}}},
      // nanoGPT's train_shakespeare_char configuration ("baby GPT", 10.7M parameters).
      {"gpt-shakespeare-char",
       {"gpt2",
        {{"vocab_size", 0}, {"n_positions", 256}, {"n_embd", 384}, {"n_layer", 6}, {"n_head", 6},
         {"resid_pdrop", 0.2}, {"embd_pdrop", 0.2}, {"attn_pdrop", 0.2}}}},
      // Document 000's GRU encoder-decoder with Bahdanau attention: embedding 256, GRU 1024.
      // The vocabulary sizes and special ids are filled in from the data by the task.
      {"seq2seq-bahdanau-doc000",
       {"seq2seq", {{"embedding_dim", 256}, {"units", 1024}, {"attention", "bahdanau"}}}},
      // google-bert/bert-base-uncased (Hugging Face defaults).
      {"bert-base-uncased", {"bert", {{"vocab_size", 30522}}}},
      // A small BERT for IMDB on a 2-core CPU; the vocabulary comes from the data.
      {"bert-small-imdb",
       {"bert",
        {{"hidden_size", 256}, {"num_hidden_layers", 4}, {"num_attention_heads", 4}, {"intermediate_size", 1024},
         {"max_position_embeddings", 512}}}},
      // Two layers 256 wide (Turc et al. 2019's L-2_H-256_A-4): the IMDB pretraining recipe's
      // shape, the width that pays most for two hours of one CPU core.
      {"bert-l2-h256-imdb",
       {"bert",
        {{"hidden_size", 256}, {"num_hidden_layers", 2}, {"num_attention_heads", 4}, {"intermediate_size", 1024},
         {"max_position_embeddings", 512}}}},
      // BERT-tiny's shape (Turc et al. 2019: 2 layers, 128 wide) for IMDB on a 2-core CPU.
      {"bert-tiny-imdb",
       {"bert",
        {{"hidden_size", 128}, {"num_hidden_layers", 2}, {"num_attention_heads", 2}, {"intermediate_size", 512},
         {"max_position_embeddings", 512}}}},
      // "Attention Is All You Need"'s base model: 6 + 6 layers, 512 wide, 8 heads, 2048, dropout 0.1.
      {"transformer-base", {"transformer", json::object()}},
      // Sized for the Tatoeba Chinese-English pairs (~27k) on a 2-core CPU.
      {"transformer-small",
       {"transformer",
        {{"d_model", 256}, {"encoder_layers", 3}, {"decoder_layers", 3}, {"encoder_attention_heads", 4},
         {"decoder_attention_heads", 4}, {"encoder_ffn_dim", 1024}, {"decoder_ffn_dim", 1024}, {"dropout", 0.1},
         {"max_position_embeddings", 256}}}},
  };
  return p;
}

// Hugging Face's id2label {"0": name, ...} -> labels by index.
std::vector<std::string> labels_of(const json& id2label) {
  std::vector<std::string> labels(id2label.size());
  for (auto it = id2label.begin(); it != id2label.end(); ++it) {
    size_t i = 0;
    try {
      i = std::stoul(it.key());
    } catch (...) {
      throw Error(cat("Hugging Face config: id2label key '", it.key(), "' is not an index"));
    }
    if (i >= labels.size()) throw Error("Hugging Face config: id2label indices are not 0..N-1");
    labels[i] = it.value().get<std::string>();
  }
  return labels;
}

}  // namespace

namespace entry {

json with_labels_of_hf(json model, const json& hf) {
  if (hf.contains("id2label") && hf["id2label"].is_object()) {
    const auto labels = labels_of(hf["id2label"]);
    model["labels"] = labels;
    model["num_labels"] = labels.size();
  }
  return model;
}

json with_hf_labels(json hf) {
  json id2label = json::object(), label2id = json::object();
  const int64_t n = hf.value("num_labels", 0);
  for (int64_t i = 0; i < n; ++i) {
    std::string name = cat("LABEL_", i);
    if (hf.contains("labels") && static_cast<int64_t>(hf["labels"].size()) == n) name = hf["labels"][i];
    id2label[std::to_string(i)] = name;
    label2id[name] = i;
  }
  hf.erase("labels");
  hf.erase("num_labels");
  hf["id2label"] = id2label;
  hf["label2id"] = label2id;
  return hf;
}

const std::vector<std::string>& translation_extra_keys() {
  static const std::vector<std::string> keys{"model_type", "bos_id", "eos_id"};
  return keys;
}

int64_t section_int(const json& section, const std::string& key, int64_t unset) {
  if (!section.contains(key)) return unset;
  int64_t value = unset;
  detail::read_value(section[key], cat("model.", key), value);
  return value;
}

std::map<std::string, std::string> translation_fact_keys() {
  std::map<std::string, std::string> keys;
  for (const char* k : {"source_vocab_size", "target_vocab_size", "bos_id", "eos_id", "pad_id"}) keys[k] = k;
  return keys;
}

}  // namespace entry

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> table{vit_entry(), seq2seq_entry(), transformer_entry(), gpt2_entry(),
                                             bert_entry()};
  return table;
}

std::vector<std::string> model_types() {
  std::vector<std::string> types;
  for (const auto& e : model_registry()) types.push_back(e.model_type);
  return types;
}

const ModelEntry& model_entry(const std::string& type) {
  for (const auto& e : model_registry())
    if (e.model_type == type) return e;
  const std::string near = nearest(type, model_types());
  throw Error(cat("config: unknown model_type '", type, "'; known types: ", join(model_types()),
                  near.empty() ? "" : " (did you mean '" + near + "'?)"));
}

std::vector<std::string> encoder_decoder_types() {
  std::vector<std::string> types;
  for (const auto& e : model_registry())
    if (e.is_encoder_decoder) types.push_back(e.model_type);
  return types;
}

namespace {
std::string model_type_of(const json& section) {
  if (!section.is_object() || !section.contains("model_type") || !section["model_type"].is_string())
    throw Error("config: the model section needs a model_type (a string)");
  return section["model_type"];
}
}  // namespace

namespace {
// LibTorch's allocator names no key when a model does not fit ("DefaultCPUAllocator: can't
// allocate memory: you tried to allocate ..."): say which fields made it that big.
template <class Build>
auto built_or_named(const json& section, Build build) {
  try {
    return build();
  } catch (const c10::Error& e) {
    const std::string what = e.what_without_backtrace();
    if (what.find("allocate") == std::string::npos) throw;
    const ModelSize size = model_size(section);
    throw Error(cat("config: the ", model_type_of(section), " model of ", size.keys, " (about ", size.parameters,
                    " parameters) does not fit in memory: ",
                    what.substr(0, what.find('\n')), "; make those fields smaller"));
  }
}
}  // namespace

std::shared_ptr<torch::nn::Module> build_model(const json& section, const std::string& task) {
  const std::string type = model_type_of(section);  // named: GCC 13 warns of a reference bound through a temporary
  const ModelEntry& entry = model_entry(type);
  return built_or_named(section, [&] { return entry.build(entry.resolve(section), task); });
}

std::shared_ptr<EncoderDecoder> build_encoder_decoder(const json& section) {
  const std::string type = model_type_of(section);
  const ModelEntry& entry = model_entry(type);
  if (!entry.is_encoder_decoder)
    throw Error(cat("config: model_type '", type,
                    "' is not an encoder-decoder; translation needs one of: ", join(encoder_decoder_types())));
  auto model = std::dynamic_pointer_cast<EncoderDecoder>(built_or_named(section, [&] { return entry.build(entry.resolve(section), entry.default_task); }));
  if (!model)  // a registry mistake, not a config one
    throw Error(cat("model_type '", type,
                    "': the registry says is_encoder_decoder, but its build() returned a module that does not "
                    "implement models::EncoderDecoder"));
  return model;
}

json complete_model_section(json section, const DataFacts& facts) {
  const auto& keys = model_entry(model_type_of(section)).fact_keys;
  const auto key_of = [&](const char* fact) {
    const auto it = keys.find(fact);
    return it == keys.end() ? std::string() : it->second;
  };
  const auto fail = [&](const std::string& key, const std::string& what, int64_t given) {
    throw Error(cat(facts.origin, " has ", what, " but model.", key, " is ", given, "; ",
                    facts.mismatch_hint.empty() ? cat("remove model.", key, " (it is filled in from the data)")
                                                : facts.mismatch_hint));
  };
  for (auto [fact, value] : {std::pair{"vocab_size", facts.vocab_size}, {"source_vocab_size", facts.source_vocab_size},
                             {"target_vocab_size", facts.target_vocab_size}}) {
    const std::string key = key_of(fact);
    if (value <= 0 || key.empty()) continue;
    const int64_t given = entry::section_int(section, key, 0);
    const bool at_least = facts.vocab_size_at_least && std::string(fact) == "vocab_size";
    if (given != 0 && (at_least ? given < value : given != value))
      fail(key, cat(value, at_least ? " ids, more than the model's rows," : " entries"), given);
    if (given == 0) section[key] = value;
  }
  for (auto [fact, value] : {std::pair{"bos_id", facts.bos_id}, {"eos_id", facts.eos_id}}) {
    const std::string key = key_of(fact);
    if (value < 0 || key.empty()) continue;
    const int64_t given = entry::section_int(section, key, -1);
    if (given >= 0 && given != value) fail(key, cat(std::string(fact) == "bos_id" ? "the start" : "the end", " id ", value), given);
    section[key] = value;
  }
  if (const std::string key = key_of("pad_id"); facts.pad_id >= 0 && !key.empty()) section[key] = facts.pad_id;
  if (const std::string key = key_of("labels"); !facts.labels.empty() && !key.empty()) {
    section[key] = facts.labels;
    section["num_labels"] = facts.labels.size();
  }
  return section;
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& [name, _] : presets()) names.push_back(name);
  return names;
}

json resolve_model_config(const json& section) {
  if (!section.is_object()) throw Error("config: 'model' must be a JSON object with a model_type or preset");
  json merged = json::object();
  if (section.contains("preset")) {
    if (!section["preset"].is_string()) throw Error("config: model.preset must be a string");
    const std::string name = section["preset"];
    auto it = presets().find(name);
    if (it == presets().end()) {
      const std::string near = nearest(name, preset_names());
      throw Error(cat("config: unknown model.preset '", name, "'; presets: ", join(preset_names()),
                      near.empty() ? "" : " (did you mean '" + near + "'?)"));
    }
    merged = it->second.fields;
    merged["model_type"] = it->second.model_type;
  }
  for (auto it = section.begin(); it != section.end(); ++it)
    if (it.key() != "preset") merged[it.key()] = it.value();
  if (!merged.contains("model_type"))
    throw Error(cat("config: the model section needs a model_type (one of: ", join(model_types()),
                    ") or a preset (", join(preset_names()), ")"));
  if (!merged["model_type"].is_string()) throw Error("config: model.model_type must be a string");
  return model_entry(merged["model_type"]).resolve(merged);
}

json from_hf_config(const json& hf, std::string* task) {
  const std::string type = hf.value("model_type", "");
  const ModelEntry* entry = nullptr;
  for (const auto& e : model_registry())
    if (e.model_type == type || (!e.hf_model_type.empty() && e.hf_model_type == type)) entry = &e;
  if (!entry)
    throw Error(cat("Hugging Face model_type '", type, "' is not supported; zoo loads: ", join(model_types())));
  if (task) {
    *task = "";
    for (const auto& arch : hf.value("architectures", json::array()))
      for (const auto& [name, class_name] : entry->architectures)
        if (arch.is_string() && arch.get<std::string>() == class_name) *task = name;
  }
  return resolve_model_config(entry->from_hf(hf));
}

namespace {
const ModelEntry* find_entry(const std::string& type) {
  for (const auto& e : model_registry())
    if (e.model_type == type) return &e;
  return nullptr;
}
}  // namespace

void tensors_from_file(const std::string& model_type, TensorMap& tensors) {
  const ModelEntry* e = find_entry(model_type);
  if (e && e->from_hf_tensors) e->from_hf_tensors(tensors);
}

void tensors_to_file(const std::string& model_type, TensorMap& tensors) {
  const ModelEntry* e = find_entry(model_type);
  if (e && e->to_hf_tensors) e->to_hf_tensors(tensors);
}

json to_hf_config(const json& model, const std::string& task) {
  const std::string type = model.at("model_type");  // named: a temporary would make GCC 13 warn
  const ModelEntry& entry = model_entry(type);
  const std::string name = task.empty() ? entry.default_task : task;
  auto it = entry.architectures.find(name);
  if (it == entry.architectures.end())
    throw Error(cat("model_type '", entry.model_type, "' has no Hugging Face architecture for the task '", name, "'"));
  return entry.to_hf(model, it->second);
}

}  // namespace zoo::models
