#pragma once
// What the families' registry entries (ModelEntry, beside each model: vit.cc, gpt.cc, ...)
// share: resolving a config section into its options, and the Hugging Face config.json
// conventions (same-named fields, id2label/label2id).
#include <algorithm>
#include <string>
#include <vector>

#include "core/options.h"
#include "models/registry.h"

namespace zoo::models::entry {

/// The canonical section of `Options`: model_type first, every field, validated.
template <class Options>
json resolve_section(const json& merged, const std::string& model_type) {
  auto o = read_options<Options>(merged, "model", {"model_type"});
  o.validate();
  json out = {{"model_type", model_type}};
  out.update(to_json(o));
  return out;
}

/// The fields of `Options` that a Hugging Face config carries under the same names.
template <class Options>
json same_named_fields(const json& hf, const std::string& model_type) {
  json model = {{"model_type", model_type}};
  for (const auto& doc : describe_options<Options>())
    if (hf.contains(doc.key)) model[doc.key] = hf[doc.key];
  return model;
}

/// A classifier's names and count from Hugging Face's id2label, when the config has one.
json with_labels_of_hf(json model, const json& hf);
/// Classification heads: labels become id2label/label2id ("LABEL_i" when unnamed).
json with_hf_labels(json hf);

/// Keys of a translation model's section beside its options' fields: the target vocabulary's
/// <start> and <end> ids, which the translation task fills in from the data.
const std::vector<std::string>& translation_extra_keys();
/// The integer at `key` of a model section, or `unset` when absent; a wrong type is a
/// zoo::Error naming model.KEY.
int64_t section_int(const json& section, const std::string& key, int64_t unset);
/// A translation model's DataFacts keys (ModelEntry::fact_keys): the vocabulary sizes and the
/// special ids under their own names.
std::map<std::string, std::string> translation_fact_keys();

/// The section of a translation model (Seq2SeqOptions, TransformerOptions): vocabulary sizes
/// of 0 (absent) mean "from the data", the task fills them in; everything else is checked
/// now, with stand-in sizes.
template <class Options>
json resolve_translation_section(const json& merged, const std::string& model_type) {
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

/// The documented keys of a translation model's section: its options' and bos_id/eos_id.
template <class Options>
std::vector<detail::Doc> translation_docs() {
  auto docs = describe_options<Options>();
  docs.push_back({"bos_id", "int", "-1", "id of <start> in the target vocabulary (filled in from the data)", ">= -1"});
  docs.push_back({"eos_id", "int", "-1", "id of <end> in the target vocabulary (filled in from the data)", ">= -1"});
  return docs;
}

}  // namespace zoo::models::entry
