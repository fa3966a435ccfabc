#include "predict/translator.h"

#include <filesystem>

#include "core/error.h"
#include "core/threads.h"
#include "data/text.h"
#include "io/checkpoint.h"
#include "io/inference_model.h"
#include "models/encoder_decoder_ensemble.h"
#include "models/entry_helpers.h"
#include "models/registry.h"

namespace zoo {

SentenceTranslator::SentenceTranslator(std::shared_ptr<models::EncoderDecoder> model, data::TranslationText text)
    : model_(std::move(model)), text_(std::move(text)) {}

models::GenerationOptions SentenceTranslator::generation_options(int64_t num_beams, int64_t max_length,
                                                         double length_penalty) const {
  return models::search_options(*model_, text_.bos_id(), text_.eos_id(), num_beams, max_length, length_penalty);
}

std::vector<SentenceTranslation> SentenceTranslator::translate(const std::vector<std::string>& sentences,
                                               const models::GenerationOptions& options,
                                               const models::Constraint* constraint, int64_t batch_size,
                                               std::optional<bool> truncate) {
  std::vector<SentenceTranslation> out(sentences.size());
  std::vector<std::vector<int64_t>> ids;
  std::vector<size_t> where;  // sentence index of each entry of `ids`
  std::vector<int64_t> lengths;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const std::string text = data::python_strip(sentences[i]);
    if (text.empty()) continue;
    ids.push_back(truncate ? text_.encode_source(text, model_->max_positions(), &out[i].source_tokens, *truncate)
                           : text_.encode_source(text, model_->max_positions(), &out[i].source_tokens));
    where.push_back(i);
    lengths.push_back(static_cast<int64_t>(ids.back().size()));
  }
  if (ids.empty()) return out;
  const auto params = model_->module()->parameters();
  const torch::Device device = params.empty() ? torch::Device(torch::kCPU) : params[0].device();
  const auto batches = data::bucket_batches(lengths, std::max<int64_t>(1, batch_size), 0, /*shuffle=*/false);
  const auto run = [&](size_t b) { translate_batch(ids, batches[b], options, constraint, device, where, out); };
  if (device.is_cpu()) {
    run_side_by_side(batches.size(), run);  // a batch per thread, each on its own core
  } else {
    for (size_t b = 0; b < batches.size(); ++b) run(b);
  }
  return out;
}

void SentenceTranslator::translate_batch(const std::vector<std::vector<int64_t>>& ids, const std::vector<int64_t>& batch,
                                         const models::GenerationOptions& options, const models::Constraint* constraint,
                                         const torch::Device& device, const std::vector<size_t>& where,
                                         std::vector<SentenceTranslation>& out) const {
  std::vector<std::vector<int64_t>> rows;
  for (int64_t k : batch) rows.push_back(ids[k]);
  const auto hyps = models::generate(*model_, data::pad_sequences(rows).to(device), options, constraint);
  for (size_t j = 0; j < batch.size(); ++j) {
    const models::Hypothesis& h = hyps[j].at(0);
    SentenceTranslation& t = out[where[batch[j]]];
    const auto s_len = static_cast<int64_t>(rows[j].size());
    t.text = text_.detokenize(h.tokens);
    t.target_tokens = text_.target_tokens(h.tokens);
    if (h.attention.defined())
      t.attention = h.attention.narrow(1, 0, s_len).to(torch::kCPU, torch::kFloat).contiguous();
    else if (options.attention)  // a model without attention rows
      t.attention = torch::zeros({static_cast<int64_t>(h.tokens.size()), s_len});
    t.score = h.score;
    t.finished = h.finished;
  }
}

data::TranslationText load_translation_text(const std::string& dir, const json& config) {
  data::TranslationText text(read_options<data::TranslationDataOptions>(config.value("data", json::object()), "data"));
  const json& section = config.at("model");
  text.load(dir, models::entry::section_int(section, "source_vocab_size", 0),
            models::entry::section_int(section, "target_vocab_size", 0));
  return text;
}

namespace {
struct LoadedTranslation {
  std::shared_ptr<models::EncoderDecoder> model;
  data::TranslationText text;
};

LoadedTranslation load_translation(const std::string& given, const torch::Device& device, bool truncate,
                                   const std::string& quantize) {
  auto [dir, config] = open_inference_source(given, "translation", "zoo translate");
  const json& section = config.at("model");
  if (truncate) config["data"]["truncate_source"] = true;
  auto module = load_inference_model(dir, config, device, quantize);  // the assets' fingerprints checked too
  auto model = std::dynamic_pointer_cast<models::EncoderDecoder>(module);
  if (!model) throw Error(cat(given, ": model_type '", section.value("model_type", ""), "' is not an encoder-decoder"));
  model->set_origin(dir);  // named if its output is not finite
  data::TranslationText text = load_translation_text(dir, config);
  const std::string where = (std::filesystem::path(dir) / data::TranslationText::kTargetVocabFile).string();
  text.find_special_ids(where);
  DataFacts facts = text.facts();
  facts.origin = where;
  facts.mismatch_hint = "the vocabulary does not belong to this model";
  models::complete_model_section(section, facts);  // throws when they disagree
  return {std::move(model), std::move(text)};
}
}  // namespace

std::unique_ptr<SentenceTranslator> load_translator(const std::string& given, const torch::Device& device, bool truncate,
                                                    const std::string& quantize,
                                                    const std::vector<std::string>& ensemble) {
  LoadedTranslation first = load_translation(given, device, truncate, quantize);
  if (ensemble.empty()) return std::make_unique<SentenceTranslator>(std::move(first.model), std::move(first.text));
  std::vector<std::shared_ptr<models::EncoderDecoder>> members = {first.model};
  for (const auto& dir : ensemble) {
    LoadedTranslation other = load_translation(dir, device, truncate, quantize);
    if (!other.text.same_tokenizers(first.text))
      throw Error(cat(dir, ": its tokenizers or vocabularies differ from ", given,
                      "'s: an ensemble's members must share them (train them from the same data section)"));
    members.push_back(std::move(other.model));
  }
  return std::make_unique<SentenceTranslator>(std::make_shared<models::EncoderDecoderEnsemble>(std::move(members)),
                                              std::move(first.text));
}

}  // namespace zoo
