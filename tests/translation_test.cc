// Chinese -> English translation: the task's data side (malformed lines, split, vocabularies
// from the training split only, batches, loss) on an invented pair file, and the command line
// as a user runs it: zoo train -> eval -> translate (greedy, beam, constrained, attention heat
// maps) -> export, plus the errors for empty data and mismatched vocabularies.
#include "train/tasks/translation.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "data/pairs.h"
#include "data/text.h"
#include "data/vocab.h"
#include "models/registry.h"
#include "predict/translator.h"
#include "test_util.h"
#include "train_fixtures.h"
#include "translation_fixtures.h"
#include "train/heatmap.h"
#include "train/slices.h"
#include "train/task_registry.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

using test::eval_json;
using test::kValidPairs;
using test::lines_of;
using test::pair_file_text;
using test::run_zoo;
using test::run_zoo_to_file;
using test::tiny_config;

std::unique_ptr<TranslationTask> make_translation_task(const std::string& config_text,
                                                       const std::string& source = "test.json") {
  const json config = resolve_config(json::parse(config_text), source);
  auto task = make_task(config);
  auto* t = dynamic_cast<TranslationTask*>(task.get());
  if (!t) throw std::runtime_error("make_task did not build a TranslationTask");
  task.release();
  return std::unique_ptr<TranslationTask>(t);
}

// ---------------------------------------------------------------------------------------
// Data side

TEST(TranslationData, MalformedLinesAreReportedOrStrictlyRejected) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());

  testing::internal::CaptureStderr();
  auto task = make_translation_task(tiny_config(pairs));
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("skipped 3 malformed lines"), std::string::npos) << err;
  EXPECT_NE(err.find(pairs + ":5: no tab"), std::string::npos) << err;
  EXPECT_NE(err.find(pairs + ":12: empty English side"), std::string::npos) << err;
  EXPECT_NE(err.find(pairs + ":24: empty Chinese side"), std::string::npos) << err;
  const auto& split = task->split();
  EXPECT_EQ(split.train.size() + split.valid.size() + split.test.size(), size_t{kValidPairs});

  try {
    make_translation_task(tiny_config(pairs, R"(, "strict": true)"));
    FAIL() << "data.strict=true accepted a malformed line";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(pairs + ":5: no tab"), std::string::npos) << e.what();
  }
}

TEST(TranslationData, SplitIsWrittenAndVocabulariesComeFromTheTrainingSplitOnly) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  // A split seed whose valid/test splits hold a character that training never sees, so that
  // "fitted on the training split only" is observable.
  data::PairReadReport report;
  const auto all_pairs = data::read_pair_file(pairs, false, report);
  auto chars_of = [](const std::vector<data::SentencePair>& part) {
    std::set<std::string> chars;
    for (const auto& p : part)
      for (const auto& c : data::split_tokens(data::preprocess_chinese(p.source))) chars.insert(c);
    return chars;
  };
  int64_t seed = 1;
  for (;; ++seed) {
    ASSERT_LT(seed, 1000) << "no split seed holds out an unseen character";
    const auto split = data::split_pairs(all_pairs, 4, 4, static_cast<uint64_t>(seed));
    const auto train = chars_of(split.train), test = chars_of(split.test);
    if (std::any_of(test.begin(), test.end(),
                    [&](const std::string& c) { return !train.count(c); }))
      break;
  }
  const std::string config = tiny_config(pairs, cat(R"(, "split_seed": )", seed));
  testing::internal::CaptureStderr();
  auto task = make_translation_task(config);
  testing::internal::GetCapturedStderr();
  task->prepare_training(dir / "out");

  const data::Split written = data::read_split(dir / "out");
  EXPECT_EQ(written.test.size(), 4u);
  EXPECT_EQ(written.valid.size(), 4u);
  EXPECT_EQ(written.train.size(), size_t{kValidPairs - 8});
  EXPECT_EQ(task->num_train_examples(), kValidPairs - 8);
  // The same split again from the same file and seed.
  testing::internal::CaptureStderr();
  auto again = make_translation_task(config);
  testing::internal::GetCapturedStderr();
  ASSERT_EQ(again->split().test.size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(again->split().test[i].source, written.test[i].source);

  // Vocabularies: exactly Keras' fit on the preprocessed training split.
  std::vector<std::string> src, tgt;
  std::set<std::string> train_chars, held_out_chars;
  for (const auto& p : written.train) {
    src.push_back(data::preprocess_chinese(p.source));
    tgt.push_back(data::preprocess_eng(p.target));
    for (const auto& c : data::split_tokens(src.back())) train_chars.insert(c);
  }
  const auto expected_src = data::Vocab::fit(src, 0, "<unk>");
  const auto expected_tgt = data::Vocab::fit(tgt, 0, "<unk>");
  EXPECT_EQ(task->source_vocab().word_counts(), expected_src.word_counts());
  EXPECT_EQ(task->target_vocab().word_counts(), expected_tgt.word_counts());
  EXPECT_EQ(task->source_vocab().size(), expected_src.size());
  for (const auto* part : {&written.valid, &written.test})
    for (const auto& p : *part)
      for (const auto& c : data::split_tokens(data::preprocess_chinese(p.source)))
        if (!train_chars.count(c)) held_out_chars.insert(c);
  ASSERT_FALSE(held_out_chars.empty());
  for (const auto& c : held_out_chars) {
    EXPECT_FALSE(task->source_vocab().contains(c)) << c;
    EXPECT_EQ(task->source_vocab().encode(c),
              std::vector<int64_t>{task->source_vocab().oov_index()});
  }

  // The config records the sizes and the special ids, read from the vocabulary.
  const json& model = task->config().at("model");
  EXPECT_EQ(model.at("source_vocab_size").get<int64_t>(), expected_src.size());
  EXPECT_EQ(model.at("target_vocab_size").get<int64_t>(), expected_tgt.size());
  EXPECT_EQ(model.at("bos_id").get<int64_t>(), expected_tgt.index("<start>"));
  EXPECT_EQ(model.at("eos_id").get<int64_t>(), expected_tgt.index("<end>"));
  EXPECT_EQ(model.at("pad_id").get<int64_t>(), 0);
  // The model is what the registry builds from that completed section (same tensors and
  // shapes), and the task's interface is that very module.
  std::map<std::string, std::vector<int64_t>> built, used;
  for (const auto& p : models::build_model(model)->named_parameters())
    built[p.key()] = p.value().sizes().vec();
  for (const auto& p : task->model()->named_parameters()) used[p.key()] = p.value().sizes().vec();
  EXPECT_EQ(used, built);
  EXPECT_EQ(task->model().get(), task->encoder_decoder().module().get());
  // A sentence with unseen characters encodes to OOV ids and translates without a crash.
  SentenceTranslator translator(std::dynamic_pointer_cast<models::EncoderDecoder>(task->model()), task->text());
  auto search = translator.generation_options(1, 5);
  search.attention = true;  // the rows of a heat map
  auto out = translator.translate({"三只鼠狗。", "", "  "}, search);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].source_tokens.front(), "<start>");
  EXPECT_EQ(out[0].source_tokens[3], "鼠");
  EXPECT_EQ(out[0].attention.size(1), static_cast<int64_t>(out[0].source_tokens.size()));
  EXPECT_EQ(out[0].attention.size(0), static_cast<int64_t>(out[0].target_tokens.size()));
  EXPECT_TRUE(out[1].text.empty());
  EXPECT_FALSE(out[2].attention.defined());
}

// data.eval_length_penalty reaches the beam search of evaluation's BLEU decodes (default 1,
// as before the key).
TEST(TranslationData, EvalLengthPenaltyReachesTheBleuDecodes) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  for (const auto& [extra, want] : {std::pair<std::string, double>{"", 1.0}, {R"(, "eval_length_penalty": 0.6)", 0.6}}) {
    testing::internal::CaptureStderr();
    auto task = make_translation_task(tiny_config(pairs, extra, "transformer"));
    testing::internal::GetCapturedStderr();
    task->prepare_training(dir / (extra.empty() ? "default" : "set"));
    EXPECT_DOUBLE_EQ(task->generation_options(4, 12).length_penalty, want) << extra;
  }
}

TEST(TranslationData, BatchesArePaddedBucketedAndDeterministic) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  testing::internal::CaptureStderr();
  auto task = make_translation_task(tiny_config(pairs, R"(, "teacher_forcing_ratio": 0.5)"));
  testing::internal::GetCapturedStderr();
  task->prepare_training("");

  const auto plan = task->epoch_plan(42, 0, 8);
  std::vector<int64_t> all;
  for (const auto& b : plan) all.insert(all.end(), b.begin(), b.end());
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t{kValidPairs - 8});
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<int64_t>(i));
  EXPECT_EQ(task->epoch_plan(42, 0, 8), plan);
  EXPECT_NE(task->epoch_plan(42, 1, 8), plan);

  const Batch a = task->make_train_batch(plan[0], 7), b = task->make_train_batch(plan[0], 7);
  ASSERT_EQ(a.tensors.size(), 2u);
  EXPECT_EQ(a.size, static_cast<int64_t>(plan[0].size()));
  EXPECT_EQ(a["input_ids"].dim(), 2);
  EXPECT_EQ(a["input_ids"].size(0), a.size);
  EXPECT_EQ(a["labels"].size(0), a.size);
  EXPECT_EQ(a["input_ids"].scalar_type(), torch::kLong);
  EXPECT_TRUE(a["input_ids"].equal(b["input_ids"]));
  EXPECT_TRUE(a["labels"].equal(b["labels"]));
  // Every target starts with <start>; each row holds <end> once, then only padding.
  EXPECT_TRUE(a["labels"].select(1, 0).eq(task->bos_id()).all().item<bool>());
  EXPECT_TRUE(a["labels"].eq(task->eos_id()).sum(1).eq(1).all().item<bool>());

  // Teacher forcing draws from the batch seed only: same seed, same loss; finite and near
  // log(V) for an untrained model.
  torch::NoGradGuard no_grad;
  const double l1 = task->loss(a).total.item<double>(), l2 = task->loss(b).total.item<double>();
  EXPECT_DOUBLE_EQ(l1, l2);
  EXPECT_TRUE(std::isfinite(l1));
  EXPECT_NEAR(l1, std::log(static_cast<double>(task->target_vocab().size())), 1.0);
}

// Translation batches as one slice per core: the Transformer's (dropout or not) can be cut,
// each slice counted by its target tokens, so that slices of unequal target lengths give the
// whole batch's loss and gradients (counted by examples they would not); teacher forcing
// below 1 and the GRU's dropout between layers (LibTorch's own draws) cannot be.
TEST(TranslationData, BatchSlicesCountTheirTargetTokens) {
  using torch::indexing::None;
  using torch::indexing::Slice;
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  testing::internal::CaptureStderr();
  auto task = make_translation_task(tiny_config(pairs, "", "transformer"));
  json gru = json::parse(tiny_config(pairs));
  gru["model"]["num_layers"] = 2, gru["model"]["dropout"] = 0.2;
  const bool gru_dropout_splittable = make_translation_task(gru.dump())->splittable();
  gru["model"]["dropout"] = 0.0;
  const bool gru_splittable = make_translation_task(gru.dump())->splittable();
  const bool forcing_splittable =
      make_translation_task(tiny_config(pairs, R"(, "teacher_forcing_ratio": 0.5)"))->splittable();
  testing::internal::GetCapturedStderr();
  EXPECT_TRUE(task->splittable());
  EXPECT_TRUE(gru_splittable);
  EXPECT_FALSE(gru_dropout_splittable);
  EXPECT_FALSE(forcing_splittable);

  task->prepare_training("");
  Batch batch = task->make_train_batch(task->epoch_plan(42, 0, 8)[0], 1);
  batch["labels"] = batch["labels"].clone();
  batch["labels"].index_put_({Slice(0, 3), Slice(2, None)}, 0);  // the first rows' targets cut short
  const auto& labels = batch["labels"];
  const double tokens = labels.narrow(1, 1, labels.size(1) - 1).ne(0).sum().item<double>();
  EXPECT_EQ(task->loss_terms(batch), tokens);

  const int saved_threads = at::get_num_threads();
  at::set_num_threads(2);
  task->model()->train();
  const auto params = task->model()->parameters();
  auto loss_of = [&](const Batch& b) { return task->loss(b); };
  auto terms_of = [&](const Batch& b) { return task->loss_terms(b); };
  auto run = [&](int64_t shards, bool by_tokens, std::vector<torch::Tensor>* grads) {
    for (auto& p : params) const_cast<torch::Tensor&>(p).mutable_grad() = torch::Tensor();
    const std::function<double(const Batch&)> terms = by_tokens ? terms_of : std::function<double(const Batch&)>();
    const double loss = forward_backward(loss_of, batch, 1.0, shards, params, {}, false, terms).total;
    for (auto& p : params) grads->push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return loss;
  };
  std::vector<torch::Tensor> whole_grads, sliced_grads, naive_grads;
  const double whole = run(1, true, &whole_grads), sliced = run(2, true, &sliced_grads);
  const double naive = run(2, false, &naive_grads);
  EXPECT_NEAR(sliced, whole, 1e-5);
  EXPECT_GT(std::abs(naive - whole), 1e-4);  // the case needs the token counts
  for (size_t i = 0; i < params.size(); ++i)
    EXPECT_TRUE(torch::allclose(sliced_grads[i], whole_grads[i], 1e-4, 1e-6)) << "parameter " << i;
  at::set_num_threads(saved_threads);
}

// train.r_drop_alpha (R-Drop) on the Transformer with dropout: the task's checks (ce + alpha *
// kl, kl 0 for two identical passes, the plain loss without it), and the KL term replayed from
// the same dropout masks: the mean over the target tokens, padding left out, of the two passes'
// symmetric KL. A batch with a padded target column, so that leaving padding out matters.
// Teacher forcing below 1 is refused, naming both keys.
TEST(TranslationData, RDropAddsTheKlOfTwoDropoutPassesOverTheTargetTokens) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  json config = json::parse(tiny_config(pairs, "", "transformer"));
  config["model"]["dropout"] = 0.3;
  config["train"]["r_drop_alpha"] = 2.0;
  config["train"]["label_smoothing_factor"] = 0.1;
  testing::internal::CaptureStderr();
  auto task = make_translation_task(config.dump());
  testing::internal::GetCapturedStderr();
  task->prepare_training("");
  Batch batch = task->make_train_batch(task->epoch_plan(42, 0, 8)[0], 1);
  const int64_t b = batch.size;
  batch["labels"] = torch::cat({batch["labels"], torch::zeros({b, 2}, torch::kLong)}, 1);  // padding (id 0)
  test::expect_r_drop_loss(*task, batch, 2.0);

  torch::NoGradGuard no_grad;
  task->model()->train();
  torch::manual_seed(5);
  const Loss loss = task->loss(batch);
  torch::manual_seed(5);
  const auto& src = batch["input_ids"];
  const auto& tgt = batch["labels"];
  const int64_t steps = tgt.size(1) - 1;
  const auto tgt_in = tgt.narrow(1, 0, steps), tgt_out = tgt.narrow(1, 1, steps);
  const auto logp = torch::log_softmax(
      task->encoder_decoder().forward(torch::cat({src, src}), torch::cat({tgt_in, tgt_in})).to(torch::kDouble), -1);
  const auto p = logp.narrow(0, 0, b), q = logp.narrow(0, b, b);                     // (B, T, V)
  const auto kl = 0.5 * ((p.exp() * (p - q)).sum(-1) + (q.exp() * (q - p)).sum(-1));  // (B, T)
  const auto tokens = tgt_out.ne(0);
  EXPECT_NEAR(loss.parts.at("kl").item<double>(), kl.masked_select(tokens).mean().item<double>(), 1e-6);
  EXPECT_GT(std::abs(kl.mean().item<double>() - kl.masked_select(tokens).mean().item<double>()), 1e-4);
  EXPECT_NEAR(loss.total.item<double>(),
              loss.parts.at("ce").item<double>() + 2.0 * kl.masked_select(tokens).mean().item<double>(), 1e-5);

  // The GRU with teacher forcing below 1 would feed each copy its own argmax: refused.
  json forcing = json::parse(tiny_config(pairs, R"(, "teacher_forcing_ratio": 0.5)"));
  forcing["train"]["r_drop_alpha"] = 1.0;
  testing::internal::CaptureStderr();
  try {
    make_translation_task(forcing.dump());
    ADD_FAILURE() << "r_drop_alpha with teacher_forcing_ratio 0.5 was accepted";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("train.r_drop_alpha"), std::string::npos) << msg;
    EXPECT_NE(msg.find("data.teacher_forcing_ratio"), std::string::npos) << msg;
  }
  testing::internal::GetCapturedStderr();
}

// data.batch_tokens: batches of about N tokens (pairs x the longest side, padding included).
TEST(TranslationData, TokenBatchesStayWithinTheirBudget) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  testing::internal::CaptureStderr();
  auto task = make_translation_task(tiny_config(pairs, R"(, "batch_tokens": 42)"));
  testing::internal::GetCapturedStderr();
  task->prepare_training("");
  const auto plan = task->epoch_plan(42, 0, 8);  // the pair count is ignored
  std::vector<int64_t> all;
  size_t sizes_differ = 0, under_full = 0;
  for (const auto& b : plan) {
    all.insert(all.end(), b.begin(), b.end());
    const Batch batch = task->make_train_batch(b, 1);
    const int64_t tokens = batch.size * std::max(batch["input_ids"].size(1), batch["labels"].size(1));
    EXPECT_TRUE(tokens <= 42 || batch.size == 1) << batch.size << " pairs, " << tokens << " tokens";
    under_full += tokens <= 42 - 9;  // pairs here cost 7 or 8 tokens
    sizes_differ += b.size() != plan[0].size();
  }
  EXPECT_GT(sizes_differ, 0u) << "short pairs should make fuller batches";
  EXPECT_LE(under_full, 1u) << "only the last batch of the (single) chunk may be short";
  std::sort(all.begin(), all.end());
  ASSERT_EQ(all.size(), size_t{kValidPairs - 8});
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], static_cast<int64_t>(i));
  EXPECT_EQ(task->epoch_plan(42, 0, 8), plan);
  EXPECT_NE(task->epoch_plan(42, 1, 8), plan);
  // The budget directly: costs 1..20, budget 30.
  std::vector<int64_t> costs;
  for (int64_t i = 0; i < 200; ++i) costs.push_back(1 + i % 20);
  for (const auto& b : data::token_batches(costs, costs, 30, 7, true, 3)) {
    int64_t widest = 0;
    for (int64_t i : b) widest = std::max(widest, costs[i]);
    EXPECT_LE(widest * static_cast<int64_t>(b.size()), 30);
  }
  EXPECT_THROW(data::token_batches(costs, costs, 0, 7, true), Error);
}

// The rows of a padded id tensor, padding (0) cut off the end.
std::vector<std::vector<int64_t>> unpadded_rows(const torch::Tensor& ids) {
  std::vector<std::vector<int64_t>> rows;
  for (int64_t r = 0; r < ids.size(0); ++r) {
    const auto row = ids[r].contiguous();
    std::vector<int64_t> v(row.data_ptr<int64_t>(), row.data_ptr<int64_t>() + row.numel());
    while (!v.empty() && v.back() == 0) v.pop_back();
    rows.push_back(std::move(v));
  }
  return rows;
}

// Subword regularization (data.sentencepiece_sampling_alpha): the same training pairs batched
// again and again are segmented anew, every segmentation decoding to the text of the best one
// and every id a piece of the vocabulary (not the OOV id); the same seed gives the same batch;
// alpha 0 always gives the best segmentation; validation batches never vary. With one
// SentencePiece side, only that side varies.
TEST(TranslationData, SubwordSamplingSegmentsTrainingBatchesAnew) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  const std::string joint = R"(, "source_tokenizer": "sentencepiece", "target_tokenizer": "sentencepiece",
                                 "joint_vocabulary": true, "sentencepiece_vocab_size": 80)";
  const auto make = [&](const std::string& extra) {
    testing::internal::CaptureStderr();
    auto task = make_translation_task(tiny_config(pairs, extra, "transformer"));
    testing::internal::GetCapturedStderr();
    task->prepare_training("");
    return task;
  };
  // Draws every batch of an epoch with 20 seeds; per example, the distinct source and target
  // rows seen, each checked against the best segmentation.
  const auto draw = [](const TranslationTask& task, std::vector<std::set<std::vector<int64_t>>>& sources,
                       std::vector<std::set<std::vector<int64_t>>>& targets) {
    const auto& text = task.text();
    ASSERT_EQ(task.num_train_examples(), static_cast<int64_t>(task.split().train.size()));  // index = pair
    sources.assign(task.split().train.size(), {});
    targets.assign(task.split().train.size(), {});
    for (uint64_t seed = 1; seed <= 20; ++seed)
      for (const auto& batch_of : task.epoch_plan(42, 0, 8)) {
        const Batch b = task.make_train_batch(batch_of, seed);
        const auto src = unpadded_rows(b["input_ids"]), tgt = unpadded_rows(b["labels"]);
        for (size_t k = 0; k < batch_of.size(); ++k) {
          const auto e = static_cast<size_t>(batch_of[k]);
          const auto& pair = task.split().train.at(e);
          EXPECT_EQ(text.source().decode(src[k]), text.source().decode(text.source_ids(pair.source))) << pair.source;
          EXPECT_EQ(text.detokenize(tgt[k]), text.detokenize(text.target_ids(pair.target))) << pair.target;
          for (const auto* row : {&src[k], &tgt[k]})
            for (int64_t id : *row) {
              EXPECT_TRUE(id > 0 && id < text.source_vocab().size()) << id;
              EXPECT_NE(id, text.source_vocab().oov_index()) << pair.source << " / " << pair.target;
            }
          EXPECT_EQ(tgt[k].front(), task.bos_id());
          EXPECT_EQ(tgt[k].back(), task.eos_id());
          EXPECT_EQ(src[k].back(), task.eos_id());  // a joint vocabulary: one <end>
          sources[e].insert(src[k]);
          targets[e].insert(tgt[k]);
        }
      }
  };
  const auto most = [](const std::vector<std::set<std::vector<int64_t>>>& seen) {
    size_t n = 0;
    for (const auto& s : seen) n = std::max(n, s.size());
    return n;
  };

  auto sampled = make(joint + R"(, "sentencepiece_sampling_alpha": 0.2)");
  std::vector<std::set<std::vector<int64_t>>> sources, targets;
  draw(*sampled, sources, targets);
  EXPECT_GE(most(sources), 2u) << "20 batches of the same pairs gave one source segmentation each";
  EXPECT_GE(most(targets), 2u) << "20 batches of the same pairs gave one target segmentation each";
  const auto plan = sampled->epoch_plan(42, 0, 8);
  const Batch a = sampled->make_train_batch(plan[1], 5), b = sampled->make_train_batch(plan[1], 5);
  EXPECT_TRUE(a["input_ids"].equal(b["input_ids"]));
  EXPECT_TRUE(a["labels"].equal(b["labels"]));
  // Every piece a sample can draw has an id.
  for (const auto& piece : sampled->text().source().sampleable_pieces())
    EXPECT_TRUE(sampled->text().source_vocab().contains(data::to_lower(piece))) << piece;
  // Validation batches are the best segmentation, whatever was drawn before.
  const auto valid_plan = sampled->eval_plan("valid", 100);
  ASSERT_EQ(valid_plan.size(), 1u);
  const Batch v1 = sampled->make_eval_batch("valid", valid_plan[0]);
  sampled->make_train_batch(plan[0], 9);
  const Batch v2 = sampled->make_eval_batch("valid", valid_plan[0]);
  EXPECT_TRUE(v1["input_ids"].equal(v2["input_ids"]));
  const auto valid_src = unpadded_rows(v1["input_ids"]), valid_tgt = unpadded_rows(v1["labels"]);
  for (size_t k = 0; k < valid_plan[0].size(); ++k) {
    const auto& pair = sampled->split().valid.at(static_cast<size_t>(valid_plan[0][k]));
    EXPECT_EQ(valid_src[k], sampled->text().source_ids(pair.source));
    EXPECT_EQ(valid_tgt[k], sampled->text().target_ids(pair.target));
  }

  // alpha 0: every batch is the best segmentation.
  auto plain = make(joint);
  draw(*plain, sources, targets);
  EXPECT_EQ(most(sources), 1u);
  EXPECT_EQ(most(targets), 1u);
  const auto first = plain->epoch_plan(42, 0, 8)[0];
  const auto rows = unpadded_rows(plain->make_train_batch(first, 3)["input_ids"]);
  for (size_t k = 0; k < first.size(); ++k)
    EXPECT_EQ(rows[k], plain->text().source_ids(plain->split().train.at(static_cast<size_t>(first[k])).source));

  // A character source and a SentencePiece target: only the target varies.
  auto one_side = make(R"(, "target_tokenizer": "sentencepiece", "sentencepiece_vocab_size": 40,
                           "sentencepiece_sampling_alpha": 0.2)");
  EXPECT_FALSE(one_side->text().samples_source());
  ASSERT_TRUE(one_side->text().samples_target());
  const auto batch_of = one_side->epoch_plan(42, 0, 8)[0];
  std::vector<std::set<std::vector<int64_t>>> src_seen(batch_of.size()), tgt_seen(batch_of.size());
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    const Batch batch = one_side->make_train_batch(batch_of, seed);
    const auto src = unpadded_rows(batch["input_ids"]), tgt = unpadded_rows(batch["labels"]);
    for (size_t k = 0; k < batch_of.size(); ++k) {
      src_seen[k].insert(src[k]);
      tgt_seen[k].insert(tgt[k]);
    }
  }
  EXPECT_EQ(most(src_seen), 1u);
  EXPECT_GE(most(tgt_seen), 2u);
}

// The sampling keys' errors name the key and the fix.
TEST(TranslationData, SubwordSamplingKeysAreChecked) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt";
  test::write_file(pairs, pair_file_text());
  const std::string spm = R"(, "source_tokenizer": "sentencepiece", "target_tokenizer": "sentencepiece")";
  const auto expect_error = [&](const std::string& extra, const std::vector<std::string>& expect) {
    SCOPED_TRACE(extra);
    testing::internal::CaptureStderr();
    try {
      make_translation_task(tiny_config(pairs, extra));
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      for (const auto& part : expect) EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
    testing::internal::GetCapturedStderr();
  };
  expect_error(R"(, "sentencepiece_sampling_alpha": 0.1)",
               {"data.sentencepiece_sampling_alpha=0.1", "data.source_tokenizer is char", "to sentencepiece"});
  expect_error(spm + R"(, "sentencepiece_sampling_alpha": -0.1)", {"data.sentencepiece_sampling_alpha must be"});
  expect_error(spm + R"(, "sentencepiece_model_type": "bpe", "sentencepiece_sampling_alpha": 1)",
               {"data.sentencepiece_sampling_alpha=1", "below 1"});
  expect_error(spm + R"(, "sentencepiece_model_type": "bpe", "sentencepiece_sampling_alpha": 0.1,
                        "sentencepiece_sampling_nbest": 8)",
               {"data.sentencepiece_sampling_nbest=8", "leave it at -1"});
  expect_error(spm + R"(, "sentencepiece_sampling_alpha": 0.1, "sentencepiece_sampling_nbest": 1)",
               {"data.sentencepiece_sampling_nbest=1", "-1"});
  expect_error(spm + R"(, "sentencepiece_sampling_alpha": 0.1, "sentencepiece_sampling_nbest": 1000)",
               {"data.sentencepiece_sampling_nbest must be"});
  expect_error(spm + R"(, "sentencepiece_sampling_nbest": 64)",
               {"data.sentencepiece_sampling_nbest=64", "data.sentencepiece_sampling_alpha"});
  expect_error(spm + R"(, "sentencepiece_sampling_alpha": 0.1, "source_num_words": 30)",
               {"data.source_num_words=30", "data.source_num_words=0"});
}

TEST(TranslationData, EmptyOrMissingPairFileIsAClearError) {
  test::TempDir dir;
  test::write_file(dir / "empty.txt", "");
  auto expect_error = [](const std::string& config, const std::string& expect) {
    try {
      make_translation_task(config);
      ADD_FAILURE() << "no error; expected: " << expect;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(expect), std::string::npos) << e.what();
    }
  };
  expect_error(tiny_config(dir / "empty.txt"), "is empty");
  expect_error(tiny_config(dir / "nope.txt"), "nope.txt");
  expect_error(tiny_config(""), "data.path is not set");
  // Too few pairs for the held-out splits names the keys to change.
  test::write_file(dir / "few.txt", "One cat.\t一只猫。\nTwo cats.\t两只猫。\n");
  expect_error(tiny_config(dir / "few.txt"), "data.test_size");
}

TEST(Heatmap, EscapesAndChecksShapes) {
  EXPECT_EQ(xml_escape("<a & \"b\" 'c'>"), "&lt;a &amp; &quot;b&quot; &apos;c&apos;&gt;");
  EXPECT_EQ(xml_escape("猫\x01"), "猫\xEF\xBF\xBD");
  EXPECT_EQ(numbered_path("out/att.svg", 3), "out/att-3.svg");
  EXPECT_EQ(numbered_path("att", 2), "att-2");
  test::TempDir dir;
  EXPECT_THROW(write_attention_svg(dir / "x.svg", {"a", "b"}, {"c"}, torch::rand({2, 2})), Error);
  write_attention_svg(dir / "ok.svg", {"<start>", "猫", "<end>"}, {"cat", "<end>"},
                      torch::rand({2, 3}));
  const std::string svg = test::read_file(dir / "ok.svg");
  EXPECT_NE(svg.find("&lt;start&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">猫<"), std::string::npos);
  EXPECT_GT(std::count(svg.begin(), svg.end(), '\n'), 6);
}

// ---------------------------------------------------------------------------------------
// Command line: one tiny training run shared by the tests below.

class TranslationCli : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    pairs_ = *dir_ / "pairs.txt";
    test::write_file(pairs_, pair_file_text());
    config_ = *dir_ / "tiny.json";
    test::write_file(config_, tiny_config(pairs_));
    run_ = *dir_ / "run";
    train_ = run_zoo("train --config " + config_ + " --output-dir " + run_ + " --device cpu");
    checkpoint_ = run_ + "/checkpoint-30";
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(train_.exit_code, 0) << train_.output; }

  static std::string translate(const std::string& args, const std::string& input_file,
                               std::string* err) {
    const std::string out = *dir_ / "translate.out";
    auto r = run_zoo_to_file(
        "translate --checkpoint " + checkpoint_ + " --device cpu " + args + " < " + input_file,
        out);
    if (err) *err = r.output;
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    return test::read_file(out);
  }

  static test::TempDir* dir_;
  static std::string pairs_, config_, run_, checkpoint_;
  static test::RunResult train_;
};
test::TempDir* TranslationCli::dir_ = nullptr;
std::string TranslationCli::pairs_, TranslationCli::config_, TranslationCli::run_,
    TranslationCli::checkpoint_;
test::RunResult TranslationCli::train_;

TEST_F(TranslationCli, TrainingReportsBleuWritesSplitVocabulariesAndLearns) {
  EXPECT_NE(train_.output.find("skipped 3 malformed lines"), std::string::npos) << train_.output;
  for (const char* f : {"train.tsv", "valid.tsv", "test.tsv", "config.json", "metrics.jsonl"})
    EXPECT_TRUE(fs::exists(fs::path(run_) / f)) << f;
  for (const char* f :
       {"source_vocab.json", "target_vocab.json", "model.safetensors", "config.json"})
    EXPECT_TRUE(fs::exists(fs::path(checkpoint_) / f)) << f;
  EXPECT_EQ(lines_of(test::read_file(run_ + "/test.tsv")).size(), 4u);

  const json config = json::parse(test::read_file(checkpoint_ + "/config.json"));
  const auto target = data::Vocab::load(checkpoint_ + "/target_vocab.json");
  EXPECT_EQ(config["model"]["target_vocab_size"].get<int64_t>(), target.size());
  EXPECT_EQ(config["model"]["eos_id"].get<int64_t>(), target.index("<end>"));

  std::vector<double> train_losses;
  int evals = 0;
  for (const auto& line : lines_of(test::read_file(run_ + "/metrics.jsonl"))) {
    const json j = json::parse(line);
    if (j["type"] == "train") train_losses.push_back(j["loss"].get<double>());
    if (j["type"] == "eval") {
      ++evals;
      for (const char* k : {"bleu", "loss", "perplexity", "examples"})
        EXPECT_TRUE(j.contains(k)) << line;
    }
  }
  EXPECT_EQ(evals, 2);
  ASSERT_GE(train_losses.size(), 2u);
  EXPECT_LT(train_losses.back(), train_losses.front() - 0.5) << "the loss should fall in 30 steps";
}

TEST_F(TranslationCli, EvalPrintsBleuLossAndPerplexity) {
  for (const std::string extra : {"", " --set data.eval_beam_size=3"}) {
    auto r = run_zoo("eval --checkpoint " + checkpoint_ + " --split test --device cpu" + extra);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const json m = eval_json(r.output);
    ASSERT_TRUE(m.contains("bleu") && m.contains("loss") && m.contains("perplexity")) << r.output;
    EXPECT_NEAR(m["perplexity"].get<double>(), std::exp(m["loss"].get<double>()),
                1e-6 * m["perplexity"].get<double>());
    EXPECT_GE(m["bleu"].get<double>(), 0.0);
    EXPECT_LE(m["bleu"].get<double>(), 100.0);
    EXPECT_EQ(m["examples"].get<int64_t>(), 4);
    EXPECT_EQ(m["split"], "test");
  }
}

TEST_F(TranslationCli, EvalUsesTheRunsSplitWhenThePairFileIsGone) {
  auto r = run_zoo("eval --checkpoint " + checkpoint_ +
                   "/ --split valid --device cpu --set data.path=" + (*dir_ / "moved.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("using " + run_ + "/valid.tsv"), std::string::npos) << r.output;
  const json m = eval_json(r.output);
  EXPECT_EQ(m["examples"].get<int64_t>(), 4);
  // The same numbers as from the pair file itself.
  auto direct = run_zoo("eval --checkpoint " + checkpoint_ + " --split valid --device cpu");
  ASSERT_EQ(direct.exit_code, 0) << direct.output;
  EXPECT_DOUBLE_EQ(eval_json(direct.output)["loss"].get<double>(), m["loss"].get<double>());
}

// zoo eval / translate --ensemble: models trained apart on the same data decode as one, with
// the mean of their next-token distributions; members of another split or vocabulary are refused.
TEST_F(TranslationCli, EnsemblesDecodeWithTheMeanOfTheirMembers) {
  auto train_other = [&](const std::string& name, const std::string& set, int steps) {
    const std::string run = *dir_ / name;
    auto r = run_zoo("train --config " + config_ + " --output-dir " + run + " --device cpu --set train.eval_steps=0" +
                     " --set train.max_steps=" + std::to_string(steps) + set);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return run + "/checkpoint-" + std::to_string(steps);
  };
  const std::string other = train_other("seed7", " --set train.seed=7", 30);
  auto eval = [&](const std::string& args) {
    auto r = run_zoo("eval --checkpoint " + checkpoint_ + " --split test --device cpu --set data.eval_beam_size=3 " + args);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    return eval_json(r.output);
  };
  const json alone = eval(""), itself = eval("--ensemble " + checkpoint_), pair = eval("--ensemble " + other);
  auto other_alone = run_zoo("eval --checkpoint " + other + " --split test --device cpu");
  ASSERT_EQ(other_alone.exit_code, 0) << other_alone.output;
  const double loss_a = alone["loss"], loss_b = eval_json(other_alone.output)["loss"], loss_ab = pair["loss"];
  // A model with itself is the model.
  EXPECT_NEAR(itself["loss"].get<double>(), loss_a, 1e-5 * loss_a);
  EXPECT_EQ(itself["bleu"], alone["bleu"]);
  EXPECT_EQ(itself["ensemble"], 2);
  // Two models: the loss of the mean distribution, which is at most the mean of the losses
  // (the log is concave) and is neither member's.
  EXPECT_EQ(pair["ensemble"], 2);
  EXPECT_LE(loss_ab, (loss_a + loss_b) / 2 + 1e-6);
  EXPECT_GT(std::abs(loss_ab - loss_a), 1e-4);
  EXPECT_GT(std::abs(loss_ab - loss_b), 1e-4);

  // zoo translate: with itself, the model's translations; with the other, a translation per line.
  const std::string input = *dir_ / "ens_in.txt";
  test::write_file(input, "三只红猫。\n\n七只黑猫。\n");
  EXPECT_EQ(translate("--beam 3 --ensemble " + checkpoint_, input, nullptr), translate("--beam 3", input, nullptr));
  EXPECT_EQ(lines_of(translate("--beam 3 --ensemble " + other, input, nullptr)).size(), 3u);

  // Members of another split, or with another vocabulary, are refused, naming them.
  const std::string split = train_other("split7", " --set data.split_seed=7", 15);
  const std::string vocab = train_other("vocab", " --set data.target_num_words=12", 15);
  for (const auto& [bad, why] : {std::pair{split, "another split"}, std::pair{vocab, "tokenizers or vocabularies"}}) {
    auto r = run_zoo("eval --checkpoint " + checkpoint_ + " --split test --device cpu --ensemble " + bad);
    EXPECT_NE(r.exit_code, 0) << r.output;
    EXPECT_NE(r.output.find(bad + ": "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
  }
  auto r = run_zoo("translate --checkpoint " + checkpoint_ + " --device cpu --input " + input + " --ensemble " + vocab);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("tokenizers or vocabularies differ"), std::string::npos) << r.output;
}

// tools/train_ensemble.sh: members trained side by side with seeds S, S+1, each scored alone,
// then the ensemble; run again, the finished members are kept, not trained again.
TEST_F(TranslationCli, TrainEnsembleScriptTrainsMembersAndScoresTheirEnsemble) {
  const std::string out = *dir_ / "ens";
  const std::string script = "ZOO=" + std::string(ZOO_BINARY) + " bash " + std::string(ZOO_TESTS_DIR) +
                             "/../tools/train_ensemble.sh --config " + config_ + " --members 2 --seed 5 --jobs 2 --out " +
                             out + " --device cpu --eval-set data.eval_beam_size=2 -- --set train.eval_steps=0";
  auto r = test::run(script);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const char* seed : {"5", "6"}) {
    const json alone = json::parse(test::read_file(out + "/eval-" + seed + ".json"));
    EXPECT_EQ(alone["examples"], 4) << seed;
    EXPECT_FALSE(alone.contains("ensemble")) << seed;
    const json config = json::parse(test::read_file(out + "/member-" + seed + "/checkpoint-30/config.json"));
    EXPECT_EQ(config["train"]["seed"].get<int64_t>(), std::stoll(seed));
  }
  const json both = json::parse(test::read_file(out + "/eval.json"));
  EXPECT_EQ(both["ensemble"], 2);
  EXPECT_TRUE(both.contains("bleu") && both.contains("bleu_unseen_source")) << both.dump();
  r = test::run(script);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string log = test::read_file(out + "/member-5.log");
  EXPECT_NE(log.find("finished at checkpoint-30: kept"), std::string::npos) << log;
  EXPECT_EQ(json::parse(test::read_file(out + "/eval.json")), both);
}

// N steps + resume + M steps = N + M steps, with scheduled sampling drawn from batch seeds.
TEST_F(TranslationCli, ResumeIsExactWithTeacherForcingBelowOne) {
  const std::string full = *dir_ / "tf-full", resumed = *dir_ / "tf-resumed";
  const std::string set =
      " --device cpu --set data.teacher_forcing_ratio=0.5 --set train.eval_steps=0";
  auto r = run_zoo("train --config " + config_ + set + " --output-dir " + full);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::create_directories(resumed);
  fs::copy(full + "/checkpoint-15", resumed + "/checkpoint-15", fs::copy_options::recursive);
  r = run_zoo("train --config " + config_ + set + " --output-dir " + resumed + " --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto losses = [](const std::string& run) {
    std::map<int64_t, double> out;
    for (const auto& line : lines_of(test::read_file(run + "/metrics.jsonl"))) {
      const json j = json::parse(line);
      if (j["type"] == "train" && j["step"].get<int64_t>() > 15) out[j["step"]] = j["loss"];
    }
    return out;
  };
  const auto a = losses(full), b = losses(resumed);
  ASSERT_EQ(a.size(), 3u);
  ASSERT_EQ(b.size(), 3u);
  for (const auto& [step, loss] : a)
    EXPECT_NEAR(b.at(step), loss, 1e-6 * std::abs(loss)) << "step " << step;
}

TEST_F(TranslationCli, TranslatesEveryLineIncludingUnseenCharactersAndEmptyLines) {
  const std::string input = *dir_ / "in.txt";
  test::write_file(input, "三只红猫。\n\n五只鼠狗。\r\n七只黑猫。\n");
  for (const std::string args : {"", "--beam 3"}) {
    const auto lines = lines_of(translate(args, input, nullptr));
    ASSERT_EQ(lines.size(), 4u) << args;
    EXPECT_FALSE(lines[0].empty()) << args;
    EXPECT_TRUE(lines[1].empty()) << args;
    for (const auto& l : lines) {
      EXPECT_EQ(l.find("<start>"), std::string::npos) << l;
      EXPECT_EQ(l.find("<end>"), std::string::npos) << l;
    }
  }
  // --input FILE gives the same as stdin.
  const std::string out = *dir_ / "file.out";
  auto r = run_zoo_to_file(
      "translate --checkpoint " + checkpoint_ + " --device cpu --input " + input, out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_file(out), translate("--truncate", input, nullptr));
}

TEST_F(TranslationCli, ConstrainedOutputIsAListedSentence) {
  const std::string input = *dir_ / "in.txt", allowed = *dir_ / "allowed.txt";
  test::write_file(input, "三只红猫。\n九只白猫。\n");
  test::write_file(
      allowed, "Three red cats.\n\nPurple elephants dance.\nNine white cats.\nTen blue cats.\n");
  std::string err;
  for (const std::string beam : {"1", "3"}) {
    const auto lines =
        lines_of(translate("--beam " + beam + " --constrain " + allowed, input, &err));
    ASSERT_EQ(lines.size(), 2u);
    for (const auto& l : lines)
      EXPECT_TRUE(l == "three red cats ." || l == "nine white cats ." || l == "ten blue cats .")
          << l;
  }
  EXPECT_NE(err.find("allowed.txt:3: skipped: the word 'purple'"), std::string::npos) << err;

  test::write_file(allowed, "Purple elephants dance.\n123\n");
  auto r =
      run_zoo("translate --checkpoint " + checkpoint_ + " --constrain " + allowed + " < " + input);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("zoo: error: --constrain " + allowed + ": no usable sentence"),
            std::string::npos)
      << r.output;
}

TEST_F(TranslationCli, AttentionHeatMapsAreWellFormedSvg) {
  const std::string input = *dir_ / "in.txt";
  test::write_file(input, "三只红猫。\n\n八只绿鼠。\n");
  const std::string svg = *dir_ / "att.svg";
  translate("--attention-out " + svg, input, nullptr);
  EXPECT_TRUE(fs::exists(*dir_ / "att-1.svg"));
  EXPECT_FALSE(fs::exists(*dir_ / "att-2.svg"));  // the empty line has no map
  ASSERT_TRUE(fs::exists(*dir_ / "att-3.svg"));
  const std::string text = test::read_file(*dir_ / "att-3.svg");
  for (const char* c : {"八", "绿", "鼠", "&lt;start&gt;", "&lt;end&gt;"})
    EXPECT_NE(text.find(c), std::string::npos) << c;
  // An independent XML parser accepts it and finds one cell per (target, source) pair.
  const std::string script = *dir_ / "check_svg.py";
  test::write_file(script,
                   "import sys, xml.etree.ElementTree as ET\n"
                   "ns = '{http://www.w3.org/2000/svg}'\n"
                   "root = ET.parse(sys.argv[1]).getroot()\n"
                   "assert root.tag == ns + 'svg', root.tag\n"
                   "g = {e.get('class'): e for e in root.iter(ns + 'g')}\n"
                   "s = [t.text for t in g['source']]\n"
                   "t = [t.text for t in g['target']]\n"
                   "cells = list(g['cells'])\n"
                   "assert len(cells) == len(s) * len(t), (len(cells), s, t)\n"
                   "print(' '.join(s))\n");
  auto r = test::run(std::string(ZOO_PYTHON) + " " + script + " " + (*dir_ / "att-3.svg"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("<start> 八 只 绿 鼠 。 <end>"), std::string::npos) << r.output;

  // One input line: the file name as given.
  test::write_file(input, "一只蓝猫。\n");
  translate("--attention-out " + (*dir_ / "one.svg"), input, nullptr);
  EXPECT_TRUE(fs::exists(*dir_ / "one.svg"));
}

TEST_F(TranslationCli, ExportedModelTranslatesTheSame) {
  const std::string exported = *dir_ / "exported";
  auto r = run_zoo("export --checkpoint " + checkpoint_ + " --out " + exported);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json hf = json::parse(test::read_file(exported + "/config.json"));
  EXPECT_EQ(hf["model_type"], "seq2seq");
  EXPECT_TRUE(hf.contains("decoder_start_token_id"));
  EXPECT_TRUE(fs::exists(exported + "/target_vocab.json"));
  const std::string input = *dir_ / "in.txt", out = *dir_ / "exported.out";
  // The last source is longer than every training sentence (and than the model reads, with
  // --truncate): both read it the same way.
  std::string chinese;
  for (int i = 0; i < 60; ++i) chinese += i % 2 ? "红" : "猫";
  test::write_file(input, "三只红猫。\n四只黄猫。\n" + chinese + "\n");
  r = run_zoo_to_file("translate --checkpoint " + exported + " --device cpu --truncate < " + input, out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_file(out), translate("--truncate", input, nullptr));
}

TEST_F(TranslationCli, MismatchedOrMissingVocabularyIsAClearError) {
  const std::string copy = *dir_ / "broken";
  fs::copy(checkpoint_, copy, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  data::Vocab::fit({"<start> a b <end>"}, 0, "<unk>").save(copy + "/target_vocab.json");
  const std::string input = *dir_ / "in.txt";
  test::write_file(input, "三只红猫。\n");
  auto r = run_zoo("translate --checkpoint " + copy + " < " + input);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("zoo: error: " + copy + "/target_vocab.json: not the file this checkpoint was saved with"),
            std::string::npos)
      << r.output;
  // Without the fingerprints (a checkpoint of an older zoo), the sizes still disagree.
  json state = read_json_file(copy + "/trainer_state.json");
  state.erase("asset_fingerprints");
  write_json_file(copy + "/trainer_state.json", state);
  r = run_zoo("translate --checkpoint " + copy + " < " + input);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("zoo: error: " + copy + "/target_vocab.json: the vocabulary has 6 entries"),
            std::string::npos)
      << r.output;
  r = run_zoo("eval --checkpoint " + copy);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("does not belong to this checkpoint"), std::string::npos) << r.output;
  // The checkpoint's own vocabulary with two words trading ids (same size): the tokenizer's
  // fingerprint in config.json refuses it.
  fs::copy_file(checkpoint_ + "/target_vocab.json", copy + "/target_vocab.json", fs::copy_options::overwrite_existing);
  json vocab = read_json_file(copy + "/target_vocab.json");
  std::swap(vocab["word_index"][3][0], vocab["word_index"][4][0]);
  write_json_file(copy + "/target_vocab.json", vocab);
  for (const std::string& command : {"translate --checkpoint " + copy + " < " + input, "eval --checkpoint " + copy}) {
    r = run_zoo(command);
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.output.find("zoo: error: " + copy + "/target_vocab.json: this tokenizer (keras_word, "), std::string::npos)
        << command << ": " << r.output;
  }

  fs::remove(copy + "/source_vocab.json");
  r = run_zoo("translate --checkpoint " + copy + " < " + input);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(copy + "/source_vocab.json: missing"), std::string::npos) << r.output;
}

// Each side of a translation checkpoint is a tokenizer zoo tokenizer reads (--side): the ids
// the task trains on, and back the text BLEU compares.
TEST_F(TranslationCli, EachSideIsATokenizerTheCliReads) {
  auto task = load_task(checkpoint_, {}, torch::Device(torch::kCPU));
  const auto& text = dynamic_cast<TranslationTask&>(*task).text();
  auto r = run_zoo("tokenizer encode --tokenizer " + checkpoint_ + " --side target \"Three red cats.\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string expected;
  for (int64_t id : text.target_ids("Three red cats.")) expected += (expected.empty() ? "" : " ") + std::to_string(id);
  const std::string ids = test::lines_of(r.output).back();
  EXPECT_EQ(ids, expected);
  r = run_zoo("tokenizer decode --tokenizer " + checkpoint_ + " --side target " + ids);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::lines_of(r.output).back(), "three red cats .");
  r = run_zoo("tokenizer encode --tokenizer " + checkpoint_ + " --side source 三只红猫。");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expected.clear();
  for (int64_t id : text.source_ids("三只红猫。")) expected += (expected.empty() ? "" : " ") + std::to_string(id);
  EXPECT_EQ(test::lines_of(r.output).back(), expected);
}

TEST_F(TranslationCli, BadDataIsRejectedWithOneLine) {
  test::write_file(*dir_ / "empty.txt", "");
  auto r = run_zoo("train --config " + config_ + " --set data.path=" + (*dir_ / "empty.txt") +
                   " --output-dir " + (*dir_ / "run-empty"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("zoo: error: pair file '" + (*dir_ / "empty.txt") + "' is empty"),
            std::string::npos)
      << r.output;
  r = run_zoo("train --config " + config_ + " --set data.path= --output-dir " +
              (*dir_ / "run-nopath"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("data.path is not set"), std::string::npos) << r.output;
  r = run_zoo("train --config " + config_ + " --set data.strict=true --output-dir " +
              (*dir_ / "run-strict"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("zoo: error: " + pairs_ + ":5: no tab"), std::string::npos) << r.output;
  r = run_zoo("train --config " + config_ + " --set data.max_target_length=1 --output-dir " +
              (*dir_ / "run-short"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("leave no training pair"), std::string::npos) << r.output;
  // Invalid UTF-8 input to translate names the line.
  test::write_file(*dir_ / "bad.txt", "三只红猫。\n\xff\xfe\n");
  r = run_zoo("translate --checkpoint " + checkpoint_ + " --input " + (*dir_ / "bad.txt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("bad.txt:2: invalid UTF-8"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace zoo
