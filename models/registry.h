#pragma once
// The model registry: one table entry per model type, and presets by name.
//
// Adding a model family is one entry, written beside the model (vit.cc: vit_entry()) and
// listed in model_registry(): how to resolve its config section (defaults, limits,
// cross-field checks), how to read and write a Hugging Face config.json, the Hugging Face
// architecture name of each head, keyed by the task that uses the head, and how to build
// the model of a section for a task. The entry names the task a config gets when it names
// none; the task table (train/task_registry.h) says which tasks a model type can serve.
// models/entry_helpers.h holds what the entries share.
//
// Translation models are built through build_encoder_decoder(): their entry sets
// is_encoder_decoder, their build() returns a module that implements EncoderDecoder
// (models/encoder_decoder.h), and their section accepts the keys the translation task
// fills in from its vocabularies: source_vocab_size, target_vocab_size, bos_id, eos_id,
// pad_id (0).
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/data_facts.h"
#include "core/options.h"
#include "models/encoder_decoder.h"

namespace zoo::models {

using TensorMap = std::map<std::string, torch::Tensor>;

struct ModelEntry {
  std::string model_type;
  /// The task of a config that names none ("image_classification", "translation").
  std::string default_task;
  /// The merged model section (preset expanded; "model_type" and any extra keys present)
  /// -> the canonical section, every field filled in; throws zoo::Error naming the key.
  std::function<json(const json& merged)> resolve;
  /// The keys of the section, with default and help (`zoo train --help-config`).
  std::function<std::vector<detail::Doc>()> describe;
  /// A Hugging Face config.json -> a model section (resolved afterwards).
  std::function<json(const json& hf)> from_hf;
  /// A resolved model section -> a config.json for transformers, with `architecture`.
  std::function<json(const json& section, const std::string& architecture)> to_hf;
  /// Hugging Face architecture name (the class that holds the head) per task.
  std::map<std::string, std::string> architectures;
  /// A complete model section, as resolve() returns it (build_model() resolves it first, so
  /// that a translation model's bos_id/eos_id are checked against the vocabulary sizes the
  /// task filled in), and the task (which head: BERT's pretraining heads or its classifier)
  /// -> the model, its weights drawn from the global RNG; throws zoo::Error naming the key.
  std::function<std::shared_ptr<torch::nn::Module>(const json& section, const std::string& task)> build;
  /// True when build() returns an EncoderDecoder (Hugging Face's is_encoder_decoder).
  bool is_encoder_decoder = false;
  /// Tensors of a model.safetensors (Hugging Face's or zoo's: both hold Hugging Face's
  /// layout) -> the model's registered names and shapes, and back; null when they are the
  /// same (GPT-2's Conv1D weights are transposed).
  std::function<void(TensorMap&)> from_hf_tensors;
  std::function<void(TensorMap&)> to_hf_tensors;
  /// The model_type of the Hugging Face config.json when it differs ("marian" for zoo's
  /// "transformer"); Hugging Face directories of that type load as this entry.
  std::string hf_model_type;
  /// DataFacts field ("vocab_size", "source_vocab_size", "target_vocab_size", "bos_id",
  /// "eos_id", "pad_id", "labels") -> this family's key for it (GPT-2: "eos_token_id").
  /// complete_model_section() skips the facts a family has no key for.
  std::map<std::string, std::string> fact_keys;
  /// The keys that fix the weights' shapes and what they compute (layers, widths, heads,
  /// positions, activation): training that starts from a checkpoint of this type
  /// (train.init_from) takes them from its config.json, as Hugging Face's from_pretrained
  /// does; dropout, heads and initialisation stay the config's, and the vocabulary size
  /// comes with the data (the embedding's shape is checked when the weights load).
  std::vector<std::string> architecture_keys;
};

/// The families' entries (each beside its model).
ModelEntry vit_entry();
ModelEntry seq2seq_entry();
ModelEntry transformer_entry();
ModelEntry gpt2_entry();
ModelEntry bert_entry();

/// `section` (resolved or not; its model_type names the entry) completed from what the data
/// says, under the family's keys (ModelEntry::fact_keys), by one rule:
/// - a vocabulary size the section leaves out (or 0) is filled in; one it gives must equal
///   the data's (or be at least it, with facts.vocab_size_at_least);
/// - a special id the section leaves out (or -1) is filled in; one it gives must equal it;
/// - the padding id and the class names (and num_labels) are the data's.
/// A mismatch is a zoo::Error naming the key, both values, facts.origin and the fix.
json complete_model_section(json section, const DataFacts& facts);

/// Every model type, in table order.
const std::vector<ModelEntry>& model_registry();
/// The entry of `model_type`; throws zoo::Error listing the types (with "did you mean").
const ModelEntry& model_entry(const std::string& model_type);
/// Model types zoo can build ("vit", ...).
std::vector<std::string> model_types();
/// Preset names ("vit-tiny", "vit-base-patch16-224", ...).
std::vector<std::string> preset_names();
/// Model types whose entry is_encoder_decoder ("seq2seq", ...).
std::vector<std::string> encoder_decoder_types();

/// The model of a complete section for `task` (its model_type's build(); "" or the entry's
/// default_task: the family's default head).
std::shared_ptr<torch::nn::Module> build_model(const json& section, const std::string& task = "");
/// The translation model of a complete section; throws zoo::Error when its model_type is
/// not an encoder-decoder (naming the ones that are).
std::shared_ptr<EncoderDecoder> build_encoder_decoder(const json& section);

/// Expands "preset" (if any), checks model_type, validates every field and fills defaults.
/// Returns the canonical model section (model_type first, all fields present).
json resolve_model_config(const json& model_section);

/// A Hugging Face config.json (top-level "model_type") -> our model section. Keys we do not
/// use (torch_dtype, ...) are ignored, as transformers does. When `task` is given, it is set
/// to the task whose head the config's "architectures" names ("" when none matches).
json from_hf_config(const json& hf, std::string* task = nullptr);
/// A file's tensors -> the model's (ModelEntry::from_hf_tensors of `model_type`; unknown or
/// empty types leave them as they are).
void tensors_from_file(const std::string& model_type, TensorMap& tensors);
/// The model's tensors -> the file layout (ModelEntry::to_hf_tensors).
void tensors_to_file(const std::string& model_type, TensorMap& tensors);

/// Our model section -> a config.json that transformers' from_pretrained accepts, naming the
/// architecture of `task`'s head ("" = the model type's default task).
json to_hf_config(const json& model_section, const std::string& task = "");

}  // namespace zoo::models
