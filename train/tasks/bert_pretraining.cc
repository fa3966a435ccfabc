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
constexpr const char* kVocabFile = "vocab.txt";
constexpr int64_t kIgnore = -100;

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
  if (checkpoint_dir.empty()) {
    build_examples();
    tokenizer_ = std::make_unique<data::BasicEnglishTokenizer>(examples_.vocab.tokens());
    config_["data"]["sentence_length"] = data_.sentence_length = examples_.sentence_length;
  } else {
    tokenizer_ = read_vocab((fs::path(checkpoint_dir) / kVocabFile).string(), data_.tokenizer_fingerprint);
  }
  config_["data"]["tokenizer_fingerprint"] = data_.tokenizer_fingerprint = tokenizer_->fingerprint();
  DataFacts facts;
  facts.origin = checkpoint_dir.empty() ? std::string("the reviews' vocabulary")
                                        : (fs::path(checkpoint_dir) / kVocabFile).string();
  if (!checkpoint_dir.empty()) facts.mismatch_hint = "this vocabulary does not belong to this checkpoint";
  facts.vocab_size = tokenizer_->vocab_size();
  model = models::complete_model_section(model, facts);
  const json resolved = models::resolve_model_config(model);
  positions_ = resolved.value("max_position_embeddings", int64_t{512});
  if (examples_.width > positions_)
    throw Error(cat("config: the examples are ", examples_.width, " tokens wide (",
                    data_.layout == "segments" ? cat("data.max_length ", data_.max_length)
                                               : cat("2 x data.sentence_length ", data_.sentence_length, " + 1"),
                    ") but model.max_position_embeddings is ", positions_, "; raise it"));
  model_ = models::BertForPreTraining(
      std::dynamic_pointer_cast<models::BertForPreTrainingImpl>(models::build_model(resolved, "bert_pretraining")));
}

void BertPretrainingTask::build_examples() {
  if (data_.path.empty())
    throw Error("config: data.path is not set; point it at the IMDB folder (tools/fetch_data.sh imdb, then "
                "--set data.path=imdb/aclImdb) or a CSV of reviews");
  const std::string path = existing_data_path(data_.path);
  data::TextReadOptions read;
  read.strict = data_.strict;
  read.replace_invalid_utf8 = data_.replace_invalid_utf8;
  read.keep_html = true;  // basic_english drops "<br />" itself, as in the document
  data::TextReadReport report;
  std::vector<data::LabeledText> texts;
  if (fs::is_directory(path)) {
    for (const auto& folder : data_.folders) {
      auto part = data::read_text_folders((fs::path(path) / folder).parent_path().string(),
                                          {fs::path(folder).filename().string()}, read, report);
      texts.insert(texts.end(), std::make_move_iterator(part.begin()), std::make_move_iterator(part.end()));
    }
  } else if (ends_with(path, ".csv")) {
    texts = data::read_text_csv(path, data_.text_column, "", read, report);
  } else {
    throw Error(cat(path, ": neither a folder of reviews nor a .csv file"));
  }
  if (report.skipped > 0) {
    std::cerr << "zoo: warning: skipped " << report.skipped << " bad review" << (report.skipped == 1 ? "" : "s")
              << " (data.strict=true makes this an error):\n";
    for (const auto& m : report.messages) std::cerr << "  " << m << "\n";
  }
  if (data_.max_reviews > 0 && static_cast<int64_t>(texts.size()) > data_.max_reviews)
    texts.resize(static_cast<size_t>(data_.max_reviews));
  if (texts.empty()) throw Error(cat(path, ": no reviews"));
  std::vector<std::string> reviews;
  reviews.reserve(texts.size());
  for (auto& t : texts) reviews.push_back(std::move(t.text));
  data::BertExampleOptions o;
  o.masking = data_.masking;
  o.mask_probability = data_.mask_probability;
  o.min_freq = data_.min_freq;
  o.length_percentile = data_.length_percentile;
  o.layout = data_.layout;
  o.max_length = data_.max_length;
  o.next_sentence = data_.next_sentence_prediction;
  if (!data_.next_sentence_prediction && data_.layout != "segments")
    throw Error("config: data.next_sentence_prediction=false needs data.layout segments (document 000's sentence "
                "pairs are half random by construction)");
  o.seed = static_cast<uint64_t>(context_.seed);
  examples_ = data::build_bert_examples(reviews, o);
  if (examples_.size() < 2)
    throw Error(cat(path, ": the reviews give ", examples_.size(),
                    " examples; BERT pretraining needs reviews of two sentences (or, with data.layout segments, two words) or more"));
  const auto held_out = static_cast<int64_t>(static_cast<double>(examples_.size()) * data_.validation_fraction);
  train_items_ = examples_.size() - held_out;
  std::cerr << "zoo: " << reviews.size() << " reviews -> " << examples_.size() << " examples ("
            << held_out << " held out), " << examples_.width << " tokens wide (sentence length "
            << examples_.sentence_length << "), vocabulary "
            << examples_.vocab.size() << std::endl;
}

void BertPretrainingTask::prepare_training(const std::string& /*output_dir*/) {
  if (examples_.size() == 0) throw Error("BERT pretraining: no examples (the task was loaded from a checkpoint)");
}

Batch BertPretrainingTask::batch_of(const std::vector<int64_t>& items) const {
  const int64_t n = static_cast<int64_t>(items.size()), W = examples_.width;
  auto ids = torch::empty({n, W}, torch::kLong), labels = torch::empty({n, W}, torch::kLong);
  auto types = torch::empty({n, W}, torch::kLong), nsp = torch::empty({n}, torch::kLong);
  auto pi = ids.accessor<int64_t, 2>(), pl = labels.accessor<int64_t, 2>(), pt = types.accessor<int64_t, 2>();
  auto pn = nsp.accessor<int64_t, 1>();
  for (int64_t r = 0; r < n; ++r) {
    const auto item = static_cast<size_t>(items[r]);
    const size_t at = item * static_cast<size_t>(W);
    // Type 1 from the second part on: [CLS] first [SEP] | [CLS] second, or [CLS] A [SEP] | B [SEP].
    const int64_t second = examples_.second_start[item];
    for (int64_t p = 0; p < W; ++p) {
      pi[r][p] = examples_.input_ids[at + p];
      pl[r][p] = examples_.masked[at + p] ? examples_.original[at + p] : kIgnore;
      pt[r][p] = p >= second ? 1 : 0;
    }
    pn[r] = examples_.is_next[item] ? 0 : 1;
  }
  auto mask = ids.ne(data::BertVocab::kPad).to(torch::kLong);
  return Batch{{{"input_ids", ids},
                {"token_type_ids", types},
                {"attention_mask", mask},
                {"labels", labels},
                {"next_sentence_label", nsp}},
               n,
               0};
}

Batch BertPretrainingTask::make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const {
  Batch b = batch_of(indices);
  b.seed = seed;
  if (data_.dynamic_masking) remask(b);
  return b;
}

// Each row's word tokens (not [CLS], [SEP] or padding): round(mask_probability x their count)
// distinct positions, 80% [MASK], 10% a random word, 10% kept; as the static draw of
// data::build_bert_examples with masking "bert", but from the batch's seed.
void BertPretrainingTask::remask(Batch& b) const {
  auto& ids = b["input_ids"];
  auto& labels = b["labels"];
  auto original = torch::where(labels.ne(kIgnore), labels, ids);
  ids = original.clone();
  labels = torch::full_like(original, kIgnore);
  auto po = original.accessor<int64_t, 2>(), pi = ids.accessor<int64_t, 2>(), pl = labels.accessor<int64_t, 2>();
  std::mt19937_64 rng(b.seed ^ 0x9E3779B97F4A7C15ULL);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  const int64_t vocab = examples_.vocab.size(), first_word = data::BertVocab::kFirstWord;
  std::vector<int64_t> words;
  for (int64_t r = 0; r < original.size(0); ++r) {
    words.clear();
    for (int64_t p = 0; p < original.size(1); ++p) {
      const int64_t id = po[r][p];
      if (id != data::BertVocab::kCls && id != data::BertVocab::kSep && id != data::BertVocab::kPad) words.push_back(p);
    }
    const auto n = static_cast<int64_t>(words.size());
    const auto k = static_cast<int64_t>(std::nearbyint(static_cast<double>(n) * data_.mask_probability));
    for (int64_t d = 0; d < k; ++d) {  // partial Fisher-Yates: k distinct positions
      std::swap(words[d], words[std::uniform_int_distribution<int64_t>(d, n - 1)(rng)]);
      const int64_t p = words[d];
      const double u = unit(rng);
      if (u < 0.8) pi[r][p] = data::BertVocab::kMask;
      else if (u < 0.9 && vocab > first_word) pi[r][p] = std::uniform_int_distribution<int64_t>(first_word, vocab - 1)(rng);
      pl[r][p] = po[r][p];
    }
  }
}

Loss BertPretrainingTask::loss(const Batch& batch) {
  auto selected = batch["labels"].ne(kIgnore);
  int64_t offset = 0;
  if (data_.position_offset == "random")  // from the batch's seed: the same on a resumed run
    offset = static_cast<int64_t>(std::mt19937_64(batch.seed)() % static_cast<uint64_t>(positions_ - batch["input_ids"].size(1) + 1));
  auto out = model_->forward(batch["input_ids"], batch["token_type_ids"], batch["attention_mask"], selected, offset);  // MLM scores of the selected tokens only
  auto mlm = F::cross_entropy(out.prediction_logits, batch["labels"].index({selected}));
  if (!data_.next_sentence_prediction) return Loss{mlm, {{"mlm", mlm}}};
  auto nsp = F::cross_entropy(out.seq_relationship_logits, batch["next_sentence_label"]);
  return Loss{mlm + nsp, {{"mlm", mlm}, {"nsp", nsp}}};
}

std::vector<std::vector<int64_t>> BertPretrainingTask::eval_plan(const std::string& split, int64_t batch_size) {
  if (split != "valid") throw Error(cat("BERT pretraining evaluates the held-out examples: --split valid, not ", split));
  if (examples_.size() == 0) {  // from a checkpoint: the same examples again (same reviews, seed, options)
    build_examples();
    if (examples_.vocab.tokens() != tokenizer_->tokens())
      throw Error(cat("the vocabulary built from ", data_.path, " (", examples_.vocab.size(),
                      " tokens) is not the checkpoint's vocab.txt (", tokenizer_->vocab_size(),
                      " tokens): the reviews or data options differ from training, or vocab.txt does not belong to "
                      "this checkpoint"));
  }
  const int64_t n = examples_.size() - train_items_;
  if (n <= 0) throw Error("data.validation_fraction is 0: no held-out examples to evaluate");
  return consecutive_batches(n, batch_size);
}

Batch BertPretrainingTask::make_eval_batch(const std::string&, const std::vector<int64_t>& examples) const {
  std::vector<int64_t> items;
  for (int64_t e : examples) items.push_back(train_items_ + e);
  return batch_of(items);
}

Metrics BertPretrainingTask::eval_sums(const std::string&, const Batch& batch) {
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
