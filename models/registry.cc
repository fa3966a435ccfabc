#include "models/registry.h"

#include <algorithm>
#include <map>

#include "models/bert.h"
#include "models/model_size.h"
#include "models/gpt.h"
#include "models/seq2seq.h"
#include "models/transformer.h"
#include "models/vit.h"

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

// Keys of a translation model's section beside its options' fields: the target
// vocabulary's <start> and <end> ids, which the translation task fills in from the data.
const std::vector<std::string>& translation_extra_keys() {
  static const std::vector<std::string> keys{"model_type", "bos_id", "eos_id"};
  return keys;
}

// The section of a translation model (Seq2SeqOptions, TransformerOptions): vocabulary sizes
// of 0 (absent) mean "from the data", the task fills them in; everything else is checked
// now, with stand-in sizes.
template <class Options>
json resolve_translation_model(const json& merged, const std::string& model_type) {
  auto o = read_options<Options>(merged, "model", translation_extra_keys());
  int64_t special[2] = {-1, -1};
  const char* names[2] = {"bos_id", "eos_id"};
  for (int i = 0; i < 2; ++i) {
    if (!merged.contains(names[i])) continue;
    const std::string where = cat("model.", names[i]);
    detail::read_value(merged[names[i]], where, special[i]);
    detail::check_limits(where, special[i], at_least(-1));
    if (o.target_vocab_size > 0 && special[i] >= o.target_vocab_size)
      throw Error(cat("config: ", where, " (", special[i], ") must be below model.target_vocab_size (",
                      o.target_vocab_size, ")"));
  }
  Options check = o;
  const int64_t stand_in = std::max(check.source_vocab_size, check.target_vocab_size);
  for (int64_t* size : {&check.source_vocab_size, &check.target_vocab_size})
    if (*size == 0) *size = stand_in > 0 ? stand_in : check.pad_id + 1;
  check.validate();
  json out = {{"model_type", model_type}};
  out.update(to_json(o));
  if (o.source_vocab_size == 0) out.erase("source_vocab_size");
  if (o.target_vocab_size == 0) out.erase("target_vocab_size");
  if (special[0] >= 0) out["bos_id"] = special[0];
  if (special[1] >= 0) out["eos_id"] = special[1];
  return out;
}

json resolve_seq2seq(const json& merged) { return resolve_translation_model<Seq2SeqOptions>(merged, "seq2seq"); }
json resolve_transformer(const json& merged) {
  return resolve_translation_model<TransformerOptions>(merged, "transformer");
}


json resolve_vit(const json& merged) {
  auto o = read_options<ViTOptions>(merged, "model", {"model_type"});
  o.validate();
  json out = {{"model_type", "vit"}};
  out.update(to_json(o));
  return out;
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

// The fields of `Options` that a Hugging Face config carries under the same names.
template <class Options>
json same_named_fields(const json& hf, const std::string& model_type) {
  json model = {{"model_type", model_type}};
  for (const auto& doc : describe_options<Options>())
    if (hf.contains(doc.key)) model[doc.key] = hf[doc.key];
  return model;
}

// A classifier's names and count from Hugging Face's id2label, when the config has one.
json with_labels_of_hf(json model, const json& hf) {
  if (hf.contains("id2label") && hf["id2label"].is_object()) {
    const auto labels = labels_of(hf["id2label"]);
    model["labels"] = labels;
    model["num_labels"] = labels.size();
  }
  return model;
}

json vit_from_hf(const json& hf) { return with_labels_of_hf(same_named_fields<ViTOptions>(hf, "vit"), hf); }

// Classification heads: labels become id2label/label2id ("LABEL_i" when unnamed).
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

json vit_to_hf(const json& model, const std::string& architecture) {
  json hf = with_hf_labels(model);
  hf["architectures"] = {architecture};
  hf["encoder_stride"] = model.value("patch_size", 16);
  hf["torch_dtype"] = "float32";
  return hf;
}

json seq2seq_from_hf(const json& hf) {  // what seq2seq_to_hf writes
  json model = same_named_fields<Seq2SeqOptions>(hf, "seq2seq");
  if (hf.contains("decoder_start_token_id")) model["bos_id"] = hf["decoder_start_token_id"];
  if (hf.contains("eos_token_id")) model["eos_id"] = hf["eos_token_id"];
  return model;
}

// No transformers class implements this GRU model; the file records the architecture and
// the special ids under Hugging Face's encoder-decoder names (zoo loads it back).
json seq2seq_to_hf(const json& model, const std::string& architecture) {
  json hf = model;
  hf.erase("bos_id");
  hf.erase("eos_id");
  hf["architectures"] = {architecture};
  hf["is_encoder_decoder"] = true;
  hf["vocab_size"] = model.value("target_vocab_size", 0);
  hf["hidden_size"] = model.value("units", 0);
  hf["pad_token_id"] = model.value("pad_id", 0);
  hf["bos_token_id"] = model.value("bos_id", -1);
  hf["decoder_start_token_id"] = model.value("bos_id", -1);
  hf["eos_token_id"] = model.value("eos_id", -1);
  hf["torch_dtype"] = "float32";
  return hf;
}

// Our Transformer section <-> Hugging Face's MarianConfig. Marian is post-norm with no final
// LayerNorms, so a pre-norm model has no Marian form.
const std::vector<std::pair<const char*, const char*>>& transformer_marian_names() {
  static const std::vector<std::pair<const char*, const char*>> names{
      {"source_vocab_size", "vocab_size"}, {"target_vocab_size", "decoder_vocab_size"},
      {"pad_id", "pad_token_id"},          {"bos_id", "decoder_start_token_id"},
      {"eos_id", "eos_token_id"}};
  return names;
}

json transformer_from_hf(const json& hf) {
  json model = same_named_fields<TransformerOptions>(hf, "transformer");
  for (const auto& [ours, theirs] : transformer_marian_names())
    if (hf.contains(theirs) && !hf[theirs].is_null()) model[ours] = hf[theirs];
  if (!model.contains("target_vocab_size") && hf.contains("vocab_size")) model["target_vocab_size"] = hf["vocab_size"];
  if (hf.contains("normalize_before") && hf["normalize_before"].is_boolean() && hf["normalize_before"].get<bool>())
    throw Error("Hugging Face config: normalize_before is true; Marian models are post-norm");
  return model;
}

json transformer_to_hf(const json& model, const std::string& architecture) {
  if (model.value("normalize_before", false))
    throw Error("this Transformer is pre-norm (model.normalize_before = true): Hugging Face's MarianMTModel is "
                "post-norm only, so it has no Marian export; train with normalize_before false to export");
  json hf = model;
  hf.erase("normalize_before");
  hf.erase("model_type");
  for (const auto& [ours, theirs] : transformer_marian_names()) {
    hf.erase(ours);
    if (model.contains(ours)) hf[theirs] = model[ours];
  }
  hf["model_type"] = "marian";
  hf["architectures"] = {architecture};
  hf["is_encoder_decoder"] = true;
  hf["forced_eos_token_id"] = hf.value("eos_token_id", 0);
  hf["bos_token_id"] = hf.value("decoder_start_token_id", 0);
  hf["num_hidden_layers"] = model.value("encoder_layers", 6);
  hf["encoder_layerdrop"] = 0.0;
  hf["decoder_layerdrop"] = 0.0;
  hf["use_cache"] = true;
  hf["torch_dtype"] = "float32";
  return hf;
}

json resolve_gpt2(const json& merged) {
  auto o = read_options<GPT2Options>(merged, "model", {"model_type"});
  GPT2Options check = o;  // vocab_size 0 means "from the data": the task fills it in
  if (check.vocab_size == 0) check.vocab_size = std::max<int64_t>({1, o.bos_token_id + 1, o.eos_token_id + 1});
  check.validate();
  json out = {{"model_type", "gpt2"}};
  out.update(to_json(o));
  return out;
}

json gpt2_from_hf(const json& hf) {
  json model = {{"model_type", "gpt2"}};
  for (const auto& doc : describe_options<GPT2Options>())
    if (hf.contains(doc.key) && !hf[doc.key].is_null()) model[doc.key] = hf[doc.key];
  if (!hf.contains("n_positions") && hf.contains("n_ctx")) model["n_positions"] = hf["n_ctx"];  // older configs
  return model;
}

json gpt2_to_hf(const json& model, const std::string& architecture) {
  json hf = model;
  if (model.value("n_inner", 0) == 0) hf["n_inner"] = nullptr;
  for (const char* id : {"bos_token_id", "eos_token_id"})
    if (model.value(id, -1) < 0) hf[id] = nullptr;
  hf["architectures"] = {architecture};
  hf["n_ctx"] = model.value("n_positions", 1024);
  hf["tie_word_embeddings"] = true;
  hf["scale_attn_weights"] = true;
  hf["use_cache"] = true;
  hf["torch_dtype"] = "float32";
  return hf;
}

json resolve_bert(const json& merged) {
  auto o = read_options<BertOptions>(merged, "model", {"model_type"});
  BertOptions check = o;  // vocab_size 0 means "from the data": the task fills it in
  if (check.vocab_size == 0) check.vocab_size = check.pad_token_id + 1;
  check.validate();
  json out = {{"model_type", "bert"}};
  out.update(to_json(o));
  return out;
}

json bert_from_hf(const json& hf) { return with_labels_of_hf(same_named_fields<BertOptions>(hf, "bert"), hf); }

json bert_to_hf(const json& model, const std::string& architecture) {
  json hf = model;
  if (architecture == "BertForSequenceClassification") {
    hf = with_hf_labels(model);
  } else {  // pretraining heads have no classes
    hf.erase("labels");
    hf.erase("num_labels");
  }
  hf.erase("position_embedding_init");  // zoo's: how training starts, not a BertConfig field
  hf["architectures"] = {architecture};
  hf["position_embedding_type"] = "absolute";
  hf["torch_dtype"] = "float32";
  return hf;
}

std::shared_ptr<torch::nn::Module> build_bert(const json& section) {
  return BertForPreTraining(read_options<BertOptions>(resolve_bert(section), "model", {"model_type"})).ptr();
}

std::shared_ptr<torch::nn::Module> build_gpt2(const json& section) {
  return GPT2LMHeadModel(read_options<GPT2Options>(resolve_gpt2(section), "model", {"model_type"})).ptr();
}

std::shared_ptr<torch::nn::Module> build_vit(const json& section) {
  return ViTForImageClassification(read_options<ViTOptions>(resolve_vit(section), "model", {"model_type"}))
      .ptr();
}

// Resolving again checks bos_id/eos_id against the vocabulary sizes the task filled in.
std::shared_ptr<torch::nn::Module> build_seq2seq(const json& section) {
  return Seq2Seq(read_options<Seq2SeqOptions>(resolve_seq2seq(section), "model", translation_extra_keys())).ptr();
}

// Resolving again checks bos_id/eos_id against the vocabulary sizes the task filled in.
std::shared_ptr<torch::nn::Module> build_transformer(const json& section) {
  return Transformer(read_options<TransformerOptions>(resolve_transformer(section), "model", translation_extra_keys()))
      .ptr();
}

template <class Options>
std::vector<detail::Doc> translation_docs() {
  auto docs = describe_options<Options>();
  docs.push_back({"bos_id", "int", "-1", "id of <start> in the target vocabulary (filled in from the data)", ">= -1"});
  docs.push_back({"eos_id", "int", "-1", "id of <end> in the target vocabulary (filled in from the data)", ">= -1"});
  return docs;
}

}  // namespace

const std::vector<ModelEntry>& model_registry() {
  static const std::vector<ModelEntry> table{
      {"vit", "image_classification", resolve_vit, describe_options<ViTOptions>, vit_from_hf, vit_to_hf,
       {{"image_classification", "ViTForImageClassification"}}, build_vit, /*is_encoder_decoder=*/false, nullptr,
       nullptr, ""},
      {"seq2seq", "translation", resolve_seq2seq, translation_docs<Seq2SeqOptions>, seq2seq_from_hf, seq2seq_to_hf,
       {{"translation", "Seq2SeqGRUAttention"}}, build_seq2seq, /*is_encoder_decoder=*/true, nullptr,
       nullptr, ""},
      {"transformer", "translation", resolve_transformer, translation_docs<TransformerOptions>, transformer_from_hf,
       transformer_to_hf, {{"translation", "MarianMTModel"}}, build_transformer, /*is_encoder_decoder=*/true,
       transformer_from_hf_tensors, transformer_to_hf_tensors, "marian"},
      {"gpt2", "language_modeling", resolve_gpt2, describe_options<GPT2Options>, gpt2_from_hf, gpt2_to_hf,
       {{"language_modeling", "GPT2LMHeadModel"}}, build_gpt2, /*is_encoder_decoder=*/false, gpt2_from_hf_tensors,
       gpt2_to_hf_tensors, ""},
      {"bert", "bert_pretraining", resolve_bert, describe_options<BertOptions>, bert_from_hf, bert_to_hf,
       {{"bert_pretraining", "BertForPreTraining"}, {"text_classification", "BertForSequenceClassification"}}, build_bert, /*is_encoder_decoder=*/false, bert_from_hf_tensors,
       bert_to_hf_tensors, ""},
  };
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

std::shared_ptr<torch::nn::Module> build_model(const json& section) {
  return built_or_named(section, [&] { return model_entry(model_type_of(section)).build(section); });
}

std::shared_ptr<EncoderDecoder> build_encoder_decoder(const json& section) {
  const std::string type = model_type_of(section);
  const ModelEntry& entry = model_entry(type);
  if (!entry.is_encoder_decoder)
    throw Error(cat("config: model_type '", type,
                    "' is not an encoder-decoder; translation needs one of: ", join(encoder_decoder_types())));
  auto model = std::dynamic_pointer_cast<EncoderDecoder>(built_or_named(section, [&] { return entry.build(section); }));
  if (!model)  // a registry mistake, not a config one
    throw Error(cat("model_type '", type,
                    "': the registry says is_encoder_decoder, but its build() returned a module that does not "
                    "implement models::EncoderDecoder"));
  return model;
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
