#include "train/tasks/translation.h"

#include <cmath>
#include <filesystem>

#include "models/encoder_decoder_ensemble.h"
#include "models/entry_helpers.h"
#include "models/registry.h"
#include "train/bleu.h"
#include "train/objectives.h"

namespace fs = std::filesystem;

namespace zoo {

namespace F = torch::nn::functional;

TranslationTask::TranslationTask(const json& config, const TaskContext& context,
                                 const std::string& checkpoint_dir) {
  config_ = config;
  context_ = context;
  data_ = read_options<TranslationDataOptions>(config.value("data", json::object()), "data");
  // Below 1, the steps that feed back the model's own argmax would feed each R-Drop copy its
  // own tokens: the two passes would no longer read the same input.
  if (context_.r_drop_alpha > 0 && data_.teacher_forcing_ratio < 1.0)
    throw Error(cat("config: train.r_drop_alpha=", context_.r_drop_alpha,
                    " runs with teacher forcing only, not data.teacher_forcing_ratio=", data_.teacher_forcing_ratio,
                    "; set data.teacher_forcing_ratio=1 or train.r_drop_alpha=0"));
  text_.emplace(data_);
  dataset_.emplace(data_, *text_, checkpoint_dir);
  const json& model_section = config.at("model");
  const int64_t pad_id = models::entry::section_int(model_section, "pad_id", data::TranslationText::kPadId);
  if (pad_id != data::TranslationText::kPadId)
    throw Error(
        cat("config: model.pad_id must be 0 for translation (the vocabularies' padding "
            "index), got ",
            pad_id));

  DataFacts facts;
  if (checkpoint_dir.empty()) {
    dataset_->load_split();
    text_->fit(dataset_->split().train);
    // The checkpoint's config says which tokenizers (cutting, SentencePiece model, vocabulary)
    // its files must be.
    config_["data"]["source_tokenizer_fingerprint"] = data_.source_tokenizer_fingerprint = text_->source_fingerprint();
    config_["data"]["target_tokenizer_fingerprint"] = data_.target_tokenizer_fingerprint = text_->target_fingerprint();
    text_->find_special_ids("the training split of data.path");
    facts = text_->facts();
    facts.origin = cat("the vocabulary built from ", data_.path);
  } else {
    text_->load(checkpoint_dir, models::entry::section_int(model_section, "source_vocab_size", 0),
                models::entry::section_int(model_section, "target_vocab_size", 0));
    const std::string where = (fs::path(checkpoint_dir) / data::TranslationText::kTargetVocabFile).string();
    text_->find_special_ids(where);
    facts = text_->facts();
    facts.origin = where;
    facts.mismatch_hint = "the vocabulary does not belong to this model";
  }

  // The facts from the data, under the names every translation model accepts; the model
  // section is then complete and the registry builds whatever model type it names.
  json& section = config_["model"];
  section = models::complete_model_section(section, facts);
  model_ = models::build_encoder_decoder(section);
  if (model_->pad_id() != data::TranslationText::kPadId)
    throw Error(cat("model_type '", section.value("model_type", ""), "' pads with id ", model_->pad_id(),
                    " although model.pad_id is 0; its build() must honour model.pad_id"));
  if (checkpoint_dir.empty()) dataset_->encode_training(model_->max_positions());
}

void TranslationTask::prepare_training(const std::string& output_dir) {
  dataset_->load_split();
  if (dataset_->train_size() == 0) dataset_->encode_training(model_->max_positions());
  if (!output_dir.empty() && context().primary) dataset_->write_split(output_dir);
}

std::vector<std::vector<int64_t>> TranslationTask::epoch_plan(uint64_t seed, int64_t epoch,
                                                              int64_t batch_size) const {
  return dataset_->epoch_plan(seed, epoch, batch_size);
}

Batch TranslationTask::make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  Batch b = dataset_->train_batch(indices, seed);
  b.seed = seed;
  return b;
}

Loss TranslationTask::loss(const Batch& batch) {
  const torch::Tensor& src = batch["input_ids"];
  const torch::Tensor& tgt = batch["labels"];
  const int64_t steps = tgt.size(1) - 1;
  auto tgt_in = tgt.narrow(1, 0, steps);   // <start> w1 ... wn
  auto tgt_out = tgt.narrow(1, 1, steps);  // w1 ... wn <end>
  if (context_.r_drop_alpha > 0) return loss_twice(src, tgt_in, tgt_out);
  torch::Tensor logits;                    // (B, T, V)
  if (data_.teacher_forcing_ratio < 1.0) {
    torch::Generator gen = at::detail::createCPUGenerator(batch.seed);
    logits = model_->forward(src, tgt_in, data_.teacher_forcing_ratio, &gen);
  } else {
    logits = model_->forward(src, tgt_in);
  }
  return {F::cross_entropy(logits.reshape({-1, logits.size(-1)}), tgt_out.reshape({-1}),
                           F::CrossEntropyFuncOptions()
                               .ignore_index(model_->pad_id())
                               .label_smoothing(context_.label_smoothing))};
}

bool TranslationTask::splittable() const {
  return data_.teacher_forcing_ratio >= 1.0 && model_->random_only_in_dropout();
}

double TranslationTask::loss_terms(const Batch& batch) const {
  const torch::Tensor& tgt = batch["labels"];
  return tgt.narrow(1, 1, tgt.size(1) - 1).ne(model_->pad_id()).sum().item<double>();
}

Loss TranslationTask::loss_twice(const torch::Tensor& src, const torch::Tensor& tgt_in, const torch::Tensor& tgt_out) {
  // One forward pass of the batch twice over (teacher forcing only: see the constructor).
  const auto halves = model_->forward(torch::cat({src, src}), torch::cat({tgt_in, tgt_in})).chunk(2);  // (B, T, V) x 2
  const int64_t vocab = halves[0].size(-1);
  return r_drop_loss(halves[0].reshape({-1, vocab}), halves[1].reshape({-1, vocab}), tgt_out.reshape({-1}),
                     RDropOptions{context_.r_drop_alpha, context_.label_smoothing, model_->pad_id()});
}

// ---------------------------------------------------------------------------------------
// Evaluation and inference

std::vector<std::vector<int64_t>> TranslationTask::eval_plan(const std::string& split, int64_t batch_size) {
  auto plan = dataset_->eval_plan(split, batch_size, model_->max_positions());
  eval_split_ = split;
  return plan;
}

Batch TranslationTask::make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const {
  check_eval_split(eval_split_, split);
  return dataset_->eval_batch(examples);
}

Metrics TranslationTask::eval_sums(const std::string&, const Batch& batch) {
  const auto& src = batch["input_ids"];
  const auto& tgt = batch["labels"];
  const int64_t steps = tgt.size(1) - 1;
  auto tgt_out = tgt.narrow(1, 1, steps);
  auto logits = model_->forward(src, tgt.narrow(1, 0, steps));
  Metrics sums{
      {"loss_sum", F::cross_entropy(logits.reshape({-1, logits.size(-1)}), tgt_out.reshape({-1}),
                                    F::CrossEntropyFuncOptions().ignore_index(model_->pad_id()).reduction(torch::kSum))
                       .item<double>()},
      {"tokens", tgt_out.ne(model_->pad_id()).sum().item<double>()},
      {"examples", static_cast<double>(batch.size)}};
  const auto hyps = models::generate(*model_, src, generation_options(data_.eval_beam_size, data_.eval_max_length));
  std::vector<std::string> hypotheses, references, unseen_hyps, unseen_refs;
  for (size_t j = 0; j < batch.examples.size(); ++j) {
    const auto e = static_cast<size_t>(batch.examples[j]);
    hypotheses.push_back(text_->detokenize(hyps[j].at(0).tokens));
    references.push_back(dataset_->reference(static_cast<int64_t>(e)));
    if (dataset_->unseen(static_cast<int64_t>(e))) {
      unseen_hyps.push_back(hypotheses.back());
      unseen_refs.push_back(references.back());
    }
  }
  add_bleu_sums(bleu_statistics(hypotheses, references), "bleu_", sums);
  add_bleu_sums(bleu_statistics(unseen_hyps, unseen_refs), "bleu_unseen_", sums);
  sums["examples_unseen_source"] += static_cast<double>(unseen_hyps.size());
  return sums;
}

Metrics TranslationTask::metrics_from_sums(const Metrics& sums) const {
  const double tokens = sums.at("tokens"), loss = tokens > 0 ? sums.at("loss_sum") / tokens : 0.0;
  const double unseen = sums.at("examples_unseen_source");
  return Metrics{{"loss", loss},
                 {"perplexity", std::exp(loss)},
                 {"bleu", bleu_score(bleu_from_sums(sums, "bleu_")).score},
                 {"examples", sums.at("examples")},
                 {"bleu_unseen_source", unseen > 0 ? bleu_score(bleu_from_sums(sums, "bleu_unseen_")).score : 0.0},
                 {"examples_unseen_source", unseen}};
}

bool TranslationTask::decode_as_ensemble(const std::vector<Task*>& others, const std::vector<std::string>& names) {
  std::vector<std::shared_ptr<models::EncoderDecoder>> members = {model_};
  for (size_t i = 0; i < others.size(); ++i) {
    const auto* other = dynamic_cast<const TranslationTask*>(others.at(i));
    if (!other) throw Error(cat(names.at(i), ": not a translation checkpoint: an ensemble's members all translate"));
    const auto& d = other->data_;
    if (d.path != data_.path || d.num_examples != data_.num_examples || d.test_size != data_.test_size ||
        d.valid_size != data_.valid_size || d.split_seed != data_.split_seed)
      throw Error(cat(names.at(i), ": trained on another split (data.path, num_examples, test_size, valid_size, "
                                   "split_seed) than the first checkpoint: its test pairs may be the other's "
                                   "training pairs; ensemble checkpoints trained on the same data section"));
    if (!other->text_->same_tokenizers(*text_))
      throw Error(cat(names.at(i), ": its tokenizers or vocabularies differ from the first checkpoint's "
                                   "(data.source_tokenizer_fingerprint / target_tokenizer_fingerprint in config.json): "
                                   "an ensemble's members must share them"));
    members.push_back(other->model_);
  }
  model_ = std::make_shared<models::EncoderDecoderEnsemble>(std::move(members));
  return true;
}

models::GenerationOptions TranslationTask::generation_options(int64_t num_beams, int64_t max_length) const {
  return models::search_options(*model_, text_->bos_id(), text_->eos_id(), num_beams, max_length,
                                data_.eval_length_penalty);
}

void TranslationTask::save_assets(const std::string& dir) const { text_->save(dir, model_->max_positions()); }

}  // namespace zoo
