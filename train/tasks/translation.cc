#include "train/tasks/translation.h"

#include <cmath>
#include <filesystem>
#include <iostream>
#include <set>

#include "core/paths.h"
#include "data/text.h"
#include "models/entry_helpers.h"
#include "models/registry.h"
#include "train/bleu.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {

namespace F = torch::nn::functional;

// The run directory of a checkpoint directory (OUT of OUT/checkpoint-N), tolerating a
// trailing slash.
fs::path run_dir_of(const std::string& checkpoint_dir) {
  fs::path p = fs::path(checkpoint_dir).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

}  // namespace

TranslationTask::TranslationTask(const json& config, const TaskContext& context,
                                 const std::string& checkpoint_dir)
    : checkpoint_dir_(checkpoint_dir) {
  config_ = config;
  context_ = context;
  data_ = read_options<TranslationDataOptions>(config.value("data", json::object()), "data");
  text_.emplace(data_);
  const json& model_section = config.at("model");
  const int64_t pad_id = models::entry::section_int(model_section, "pad_id", data::TranslationText::kPadId);
  if (pad_id != data::TranslationText::kPadId)
    throw Error(
        cat("config: model.pad_id must be 0 for translation (the vocabularies' padding "
            "index), got ",
            pad_id));

  DataFacts facts;
  if (checkpoint_dir.empty()) {
    load_split();
    text_->fit(split_.train);
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
  if (checkpoint_dir.empty()) encode_training_pairs();
}

// ---------------------------------------------------------------------------------------
// Data

void TranslationTask::load_split() {
  if (split_loaded_) return;
  if (data_.path.empty())
    throw Error(
        "config: data.path is not set; point it at a Tatoeba/Anki pair file (English<TAB>Chinese "
        "per line), e.g. tools/fetch_data.sh cmn-eng, then --set data.path=cmn-eng/cmn.txt");
  const std::string path = existing_data_path(data_.path);
  data::PairReadReport report;
  std::vector<data::SentencePair> pairs = data::read_pair_file(path, data_.strict, report);
  if (report.malformed > 0) {
    std::cerr << "zoo: warning: " << path << ": skipped " << report.malformed
              << " malformed line" << (report.malformed == 1 ? "" : "s") << " of " << report.lines
              << " (data.strict=true makes this an error):\n";
    for (const auto& m : report.messages) std::cerr << "  " << m << "\n";
    if (report.malformed > static_cast<int64_t>(report.messages.size()))
      std::cerr << "  ... and " << report.malformed - static_cast<int64_t>(report.messages.size())
                << " more\n";
    std::cerr.flush();
  }
  if (data_.num_examples > 0 && data_.num_examples < static_cast<int64_t>(pairs.size()))
    pairs.resize(static_cast<size_t>(data_.num_examples));
  try {
    split_ = data::split_pairs(std::move(pairs), data_.test_size, data_.valid_size,
                               static_cast<uint64_t>(data_.split_seed));
  } catch (const Error& e) {
    throw Error(cat(data_.path, ": ", e.what(), "; lower data.test_size / data.valid_size",
                    data_.num_examples > 0 ? " or raise data.num_examples" : ""));
  }
  if (split_.valid.empty())  // checked now, not after training, where the first evaluation needs them
    throw Error(cat(data_.path, ": data.valid_size=", data_.valid_size, " leaves no validation pairs; training "
                    "evaluates on them (train.eval_steps, the best checkpoint): set data.valid_size to 1 or more"));
  split_loaded_ = true;
}

void TranslationTask::encode_training_pairs() {
  train_src_.clear();
  train_tgt_.clear();
  train_order_key_.clear();
  train_cost_.clear();
  int64_t dropped = 0;
  for (const auto& p : split_.train) {
    std::vector<int64_t> src = text_->source_ids(p.source);
    std::vector<int64_t> tgt = text_->target_ids(p.target);
    const auto n_src = static_cast<int64_t>(src.size()) - 2;  // without <start>/<end>
    const auto n_tgt = static_cast<int64_t>(tgt.size()) - 2;
    const int64_t limit = model_->max_positions();
    if ((data_.max_source_length > 0 && n_src > data_.max_source_length) ||
        (data_.max_target_length > 0 && n_tgt > data_.max_target_length) ||
        (limit > 0 && (n_src + 2 > limit || n_tgt + 1 > limit))) {
      ++dropped;
      continue;
    }
    // Bucketing key: target length first (the decoder's steps cost most), then source length.
    train_order_key_.push_back(static_cast<int64_t>(tgt.size()) * 100000 +
                               static_cast<int64_t>(src.size()));
    train_cost_.push_back(static_cast<int64_t>(std::max(src.size(), tgt.size())));
    train_src_.push_back(std::move(src));
    train_tgt_.push_back(std::move(tgt));
  }
  if (dropped > 0) {
    std::cerr << "zoo: note: dropped " << dropped << " of " << split_.train.size()
              << " training pairs longer than data.max_source_length=" << data_.max_source_length
              << " / data.max_target_length=" << data_.max_target_length << " (0 = no limit)"
              << (model_->max_positions() > 0 ? cat(" or the model's ", model_->max_positions(), " positions") : "")
              << std::endl;
  }
  if (train_src_.empty())
    throw Error(
        cat("config: data.max_source_length / data.max_target_length leave no training "
            "pair (all ",
            split_.train.size(), " are longer); raise them or set them to 0"));
}

void TranslationTask::prepare_training(const std::string& output_dir) {
  load_split();
  if (train_src_.empty()) encode_training_pairs();
  if (!output_dir.empty() && context().primary) data::write_split(split_, output_dir);
}

std::vector<data::SentencePair> TranslationTask::eval_pairs(const std::string& split) {
  if (split != "valid" && split != "test" && split != "train")
    throw Error(cat("unknown split '", split, "'; use valid or test"));
  if (!split_loaded_ && !checkpoint_dir_.empty()) {
    // Away from the training machine the pair file may be elsewhere, but the run directory
    // holds the split it used.
    std::error_code ec;
    const fs::path tsv = run_dir_of(checkpoint_dir_) / (split + ".tsv");
    if (!data_path_exists(data_.path) && fs::exists(tsv, ec)) {
      std::cerr << "zoo: note: data.path "
                << (data_.path.empty() ? std::string("is not set")
                                       : "'" + data_.path + "' does not exist")
                << "; using " << tsv.string() << " written by the training run" << std::endl;
      return data::read_tsv_pairs(tsv.string());
    }
  }
  load_split();
  return split == "valid" ? split_.valid : split == "test" ? split_.test : split_.train;
}

const std::set<std::string>& TranslationTask::training_sources() {
  if (!training_sources_) {  // once: every evaluation of a run needs the same set
    training_sources_.emplace();
    for (const auto& p : eval_pairs("train")) training_sources_->insert(data::preprocess_chinese(p.source));
  }
  return *training_sources_;
}

std::vector<std::vector<int64_t>> TranslationTask::epoch_plan(uint64_t seed, int64_t epoch,
                                                              int64_t batch_size) const {
  const uint64_t epoch_seed = data::plan_seed(seed, epoch);
  if (data_.batch_tokens > 0)
    return data::token_batches(train_order_key_, train_cost_, data_.batch_tokens, epoch_seed, /*shuffle=*/true);
  return data::bucket_batches(train_order_key_, batch_size, epoch_seed, /*shuffle=*/true);
}

Batch TranslationTask::make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  std::vector<std::vector<int64_t>> src, tgt;
  src.reserve(indices.size());
  tgt.reserve(indices.size());
  for (int64_t i : indices) {
    src.push_back(train_src_.at(static_cast<size_t>(i)));
    tgt.push_back(train_tgt_.at(static_cast<size_t>(i)));
  }
  return Batch{{{"input_ids", data::pad_sequences(src)}, {"labels", data::pad_sequences(tgt)}},
               static_cast<int64_t>(indices.size()),
               seed};
}

Loss TranslationTask::loss(const Batch& batch) {
  const torch::Tensor& src = batch["input_ids"];
  const torch::Tensor& tgt = batch["labels"];
  const int64_t steps = tgt.size(1) - 1;
  auto tgt_in = tgt.narrow(1, 0, steps);   // <start> w1 ... wn
  auto tgt_out = tgt.narrow(1, 1, steps);  // w1 ... wn <end>
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

// ---------------------------------------------------------------------------------------
// Evaluation and inference

std::vector<std::vector<int64_t>> TranslationTask::eval_plan(const std::string& split, int64_t batch_size) {
  std::vector<data::SentencePair> pairs = eval_pairs(split);
  if (data_.max_eval_samples > 0 && data_.max_eval_samples < static_cast<int64_t>(pairs.size()))
    pairs.resize(static_cast<size_t>(data_.max_eval_samples));
  if (pairs.empty())
    throw Error(cat("the ", split, " split is empty (data.", split == "valid" ? "valid" : "test",
                    "_size is 0)", split == "valid" ? "; use --split test" : ""));
  // The random split leaves some sources of this split verbatim in the training split: BLEU
  // on the rest says how the model does on sentences it never saw.
  const std::set<std::string>& seen = training_sources();
  eval_split_ = split;
  eval_src_.clear();
  eval_tgt_.clear();
  eval_references_.clear();
  eval_unseen_.clear();
  std::vector<int64_t> lengths;
  for (const auto& p : pairs) {
    eval_src_.push_back(encode_source(p.source));
    eval_tgt_.push_back(text_->target_ids(p.target));
    eval_references_.push_back(data::TranslationText::reference_text(p.target));
    eval_unseen_.push_back(!seen.count(data::preprocess_chinese(p.source)));
    lengths.push_back(static_cast<int64_t>(eval_src_.back().size()));
  }
  return data::bucket_batches(lengths, batch_size, 0, /*shuffle=*/false);
}

Batch TranslationTask::make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const {
  check_eval_split(eval_split_, split);
  std::vector<std::vector<int64_t>> src_rows, tgt_rows;
  for (int64_t i : examples) {
    src_rows.push_back(eval_src_[i]);
    tgt_rows.push_back(eval_tgt_[i]);
  }
  return Batch{{{"input_ids", data::pad_sequences(src_rows)}, {"labels", data::pad_sequences(tgt_rows)}},
               static_cast<int64_t>(examples.size()),
               0};
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
    references.push_back(eval_references_[e]);
    if (eval_unseen_[e]) {
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

models::GenerationOptions TranslationTask::generation_options(int64_t num_beams, int64_t max_length) const {
  return models::search_options(*model_, text_->bos_id(), text_->eos_id(), num_beams, max_length);
}

void TranslationTask::save_assets(const std::string& dir) const { text_->save(dir, model_->max_positions()); }

}  // namespace zoo
