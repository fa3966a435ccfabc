#include "train/tasks/bert_pretraining.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "core/paths.h"
#include "data/reviews.h"
#include "models/registry.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {
namespace F = torch::nn::functional;
constexpr int64_t kIgnore = data::BertItems::kIgnore;

std::unique_ptr<data::BasicEnglishTokenizer> read_vocab(const std::string& path, const std::string& fingerprint) {
  if (!fs::exists(path))
    throw Error(cat(path, ": missing; a BERT pretraining checkpoint needs the vocabulary it was trained with "
                          "(zoo train writes vocab.txt into every checkpoint)"));
  auto tokenizer = data::BasicEnglishTokenizer::load(path);
  data::check_tokenizer_fingerprint(*tokenizer, fingerprint, path);
  return tokenizer;
}
}  // namespace

BertPretrainingTask::BertPretrainingTask(const json& config, const TaskContext& context,
                                         const std::string& checkpoint_dir) {
  config_ = config;
  context_ = context;
  data_ = read_options<BertPretrainingDataOptions>(config.value("data", json::object()), "data");
  json& model = config_["model"];
  // Refused before the reviews are read: nothing the data says changes the answer.
  if (data_.next_sentence_prediction && models::resolve_model_config(model).value("pretraining_head", "") == "electra")
    throw Error("config: model.pretraining_head electra has no next-sentence head; set "
                "data.next_sentence_prediction false");
  items_.emplace(data_, static_cast<uint64_t>(context_.seed));
  if (checkpoint_dir.empty()) {
    items_->build();
    tokenizer_ = std::make_unique<data::BasicEnglishTokenizer>(items_->examples().vocab.tokens());
    config_["data"]["sentence_length"] = data_.sentence_length = items_->examples().sentence_length;
  } else {
    tokenizer_ = read_vocab(data::WordPiece::vocab_file(checkpoint_dir), data_.tokenizer_fingerprint);
  }
  config_["data"]["tokenizer_fingerprint"] = data_.tokenizer_fingerprint = tokenizer_->fingerprint();
  DataFacts facts;
  facts.origin = checkpoint_dir.empty() ? std::string("the reviews' vocabulary") : data::WordPiece::vocab_file(checkpoint_dir);
  if (!checkpoint_dir.empty()) facts.mismatch_hint = "this vocabulary does not belong to this checkpoint";
  facts.vocab_size = tokenizer_->vocab_size();
  model = models::complete_model_section(model, facts);
  const json resolved = models::resolve_model_config(model);
  positions_ = resolved.value("max_position_embeddings", int64_t{512});
  if (items_->examples().width > positions_)
    throw Error(cat("config: the examples are ", items_->examples().width, " tokens wide (",
                    data_.layout == "segments" ? cat("data.max_length ", data_.max_length)
                                               : cat("2 x data.sentence_length ", data_.sentence_length, " + 1"),
                    ") but model.max_position_embeddings is ", positions_, "; raise it"));
  const auto built = models::build_model(resolved, "bert_pretraining");
  if (auto electra = std::dynamic_pointer_cast<models::BertForReplacedTokenDetectionImpl>(built)) {
    electra_ = models::BertForReplacedTokenDetection(electra);
  } else {
    model_ = models::BertForPreTraining(std::dynamic_pointer_cast<models::BertForPreTrainingImpl>(built));
  }
}

void BertPretrainingTask::prepare_training(const std::string& /*output_dir*/) {
  if (items_->examples().size() == 0) throw Error("BERT pretraining: no examples (the task was loaded from a checkpoint)");
  require_validation_split(items_->train_size() < static_cast<int64_t>(items_->examples().size()), "validation_fraction",
                           data_.validation_fraction, cat("a share that holds out one example or more of the ",
                                                          items_->examples().size()));
}

Batch BertPretrainingTask::make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  return items_->train_batch(indices, seed);
}

Loss BertPretrainingTask::loss(const Batch& batch) {
  int64_t offset = 0;
  if (data_.position_offset == "random")  // from the batch's seed: the same on a resumed run
    offset = static_cast<int64_t>(std::mt19937_64(batch.seed)() % static_cast<uint64_t>(positions_ - batch["input_ids"].size(1) + 1));
  if (electra_) return electra_loss(batch, offset);
  auto selected = batch["labels"].ne(kIgnore);
  // The MLM loss of the selected tokens only, the vocabulary's scores never kept.
  auto out = model_->forward(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], selected, offset,
                             batch["labels"].index({selected}));
  const auto& mlm = out.mlm_loss;
  if (!data_.next_sentence_prediction) return Loss{mlm, {{"mlm", mlm}}};
  auto nsp = F::cross_entropy(out.seq_relationship_logits, batch["next_sentence_label"]);
  return Loss{mlm + nsp, {{"mlm", mlm}, {"nsp", nsp}}};
}

bool BertPretrainingTask::splittable() const {
  return !electra_ && !data_.next_sentence_prediction;  // losses over different terms, or random draws
}

double BertPretrainingTask::loss_terms(const Batch& batch) const {
  return batch["labels"].ne(kIgnore).sum().item<double>();
}

std::vector<std::vector<int64_t>> BertPretrainingTask::eval_plan(const std::string& split, int64_t batch_size) {
  if (split != "valid") throw Error(cat("BERT pretraining evaluates the held-out examples: --split valid, not ", split));
  const auto& examples = items_->examples();
  if (examples.size() == 0) {  // from a checkpoint: the same examples again (same reviews, seed, options)
    items_->build();
    if (examples.vocab.tokens() != tokenizer_->tokens())
      throw Error(cat("the vocabulary built from ", data_.path, " (", examples.vocab.size(),
                      " tokens) is not the checkpoint's vocab.txt (", tokenizer_->vocab_size(),
                      " tokens): the reviews or data options differ from training, or vocab.txt does not belong to "
                      "this checkpoint"));
  }
  return items_->eval_plan(batch_size);
}

Batch BertPretrainingTask::make_eval_batch(const std::string&, const std::vector<int64_t>& examples) const {
  return items_->eval_batch(examples);
}

Metrics BertPretrainingTask::eval_sums(const std::string&, const Batch& batch) {
  if (electra_) return electra_eval_sums(batch);
  auto keep = batch["labels"].ne(kIgnore);
  auto out = model_->forward(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], keep);
  const auto& logits = out.prediction_logits;
  auto labels = batch["labels"].index({keep});
  const auto sum = F::CrossEntropyFuncOptions().reduction(torch::kSum);
  return Metrics{{"mlm_loss_sum", F::cross_entropy(logits, labels, sum).item<double>()},
                 {"mlm_correct", logits.argmax(-1).eq(labels).sum().item<double>()},
                 {"mlm_selected", keep.sum().item<double>()},
                 {"nsp_loss_sum", F::cross_entropy(out.seq_relationship_logits, batch["next_sentence_label"], sum).item<double>()},
                 {"nsp_correct", out.seq_relationship_logits.argmax(-1).eq(batch["next_sentence_label"]).sum().item<double>()},
                 {"examples", static_cast<double>(batch.size)}};
}

Metrics BertPretrainingTask::metrics_from_sums(const Metrics& sums) const {
  if (electra_) return electra_metrics(sums);
  const double selected = sums.at("mlm_selected"), n = sums.at("examples");
  const double mlm = selected > 0 ? sums.at("mlm_loss_sum") / selected : 0.0;
  const double mlm_accuracy = selected > 0 ? sums.at("mlm_correct") / selected : 0.0;
  if (!data_.next_sentence_prediction)  // the NSP head is not trained: its figures would mean nothing
    return Metrics{{"loss", mlm}, {"loss_mlm", mlm}, {"mlm_accuracy", mlm_accuracy}, {"examples", n}};
  const double nsp = sums.at("nsp_loss_sum") / n;
  return Metrics{{"loss", mlm + nsp},
                 {"loss_mlm", mlm},
                 {"loss_nsp", nsp},
                 {"mlm_accuracy", mlm_accuracy},
                 {"nsp_accuracy", sums.at("nsp_correct") / n},
                 {"examples", n}};
}

void BertPretrainingTask::save_assets(const std::string& dir) const {
  tokenizer_->save(dir);
}

}  // namespace zoo
