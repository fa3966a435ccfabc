// BERT pretraining through the command line (train/tasks/bert_pretraining.h): invented
// reviews in the IMDB archive's layout -> zoo train (MLM + NSP, both parts and accuracies
// logged) -> zoo eval from the checkpoint (the same held-out examples again) -> zoo export,
// which the plain-PyTorch BertForPreTraining loads strictly; bad reviews and a vocabulary
// that does not belong to the checkpoint.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "test_util.h"
#include "train_fixtures.h"
#include "train/device.h"
#include "train/task_registry.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

using json = nlohmann::json;

// 80 reviews of 3-6 sentences over a small vocabulary, in aclImdb/train/{pos,neg}, plus an
// empty review and one with invalid UTF-8.
std::string write_reviews(const test::TempDir& dir) {
  const std::string root = dir / "aclImdb";
  const std::vector<std::string> words = {"the", "film", "was", "good", "bad", "plot", "actor", "great", "boring", "scene"};
  for (const char* label : {"pos", "neg"}) fs::create_directories(root + "/train/" + label);
  for (int r = 0; r < 80; ++r) {
    std::string text;
    for (int s = 0; s < 3 + r % 4; ++s) {
      if (s) text += ". ";
      for (int w = 0; w < 4 + (r + s) % 5; ++w) text += (w ? " " : "") + words[(r * 3 + s * 7 + w) % 10];  // a word predicts the next
    }
    test::write_file(root + "/train/" + (r % 2 ? "pos/" : "neg/") + std::to_string(r) + "_7.txt", text + ".");
  }
  test::write_file(root + "/train/pos/900_8.txt", "   ");
  test::write_file(root + "/train/neg/901_2.txt", "bad \xFF bytes. here too.");
  return root;
}

std::string config(const std::string& root) {
  return R"({"task": "bert_pretraining",
    "model": {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4,
              "intermediate_size": 64, "max_position_embeddings": 64, "hidden_dropout_prob": 0.0,
              "attention_probs_dropout_prob": 0.0},
    "data": {"path": ")" + root + R"(", "folders": ["train/pos", "train/neg"], "validation_fraction": 0.1},
    "train": {"max_steps": 160, "per_device_train_batch_size": 32, "per_device_eval_batch_size": 32,
              "optim": "adamw", "learning_rate": 0.001, "lr_scheduler_type": "constant", "logging_steps": 40,
              "eval_steps": 80, "save_steps": 160, "report_to_tensorboard": false}})";
}

TEST(BertPretraining, TrainsEvaluatesAndExportsFromTheCommandLine) {
  test::TempDir dir;
  const std::string root = write_reviews(dir), cfg = dir / "bert.json", run = dir / "run";
  test::write_file(cfg, config(root));
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + run + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("skipped 2 bad reviews"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("901_2.txt: invalid UTF-8 at byte 4"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("900_8.txt: empty text"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("(mlm "), std::string::npos) << "both parts on the console";

  std::vector<json> evals;
  double first_mlm = -1, last_mlm = -1;
  std::ifstream metrics(run + "/metrics.jsonl");
  for (std::string line; std::getline(metrics, line);) {
    const json j = json::parse(line);
    if (j["type"] == "eval") evals.push_back(j);
    if (j["type"] == "train") {
      ASSERT_TRUE(j.contains("loss_mlm") && j.contains("loss_nsp")) << line;
      if (first_mlm < 0) first_mlm = j["loss_mlm"];
      last_mlm = j["loss_mlm"];
    }
  }
  ASSERT_EQ(evals.size(), 2u);
  for (const char* k : {"loss_mlm", "loss_nsp", "mlm_accuracy", "nsp_accuracy"}) EXPECT_TRUE(evals[1].contains(k)) << k;
  EXPECT_GT(first_mlm, 0.0);
  EXPECT_GT(last_mlm, 0.0);
  // Against chance: an untrained model scores about log(V) and 1/V.
  int64_t vocab = 0;
  std::ifstream vocab_file(run + "/checkpoint-160/vocab.txt");
  for (std::string line; std::getline(vocab_file, line);) ++vocab;
  ASSERT_GT(vocab, 10);
  EXPECT_LT(evals[1]["loss_mlm"].get<double>(), std::log(static_cast<double>(vocab)) - 0.5) << "an untrained model scores log(V)";
  EXPECT_GT(evals[1]["mlm_accuracy"].get<double>(), 3.0 / static_cast<double>(vocab)) << "chance is 1/V";

  // zoo eval rebuilds the same held-out examples from the reviews: the same figures.
  const std::string checkpoint = run + "/checkpoint-160";
  r = test::run_zoo("eval --checkpoint " + checkpoint + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json again = json::parse(r.output.substr(r.output.rfind("{")));
  EXPECT_NEAR(again["loss"].get<double>(), evals[1]["loss"].get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(again["mlm_accuracy"].get<double>(), evals[1]["mlm_accuracy"].get<double>());

  // The export is a BertForPreTraining directory the plain-PyTorch BERT loads strictly.
  const std::string exported = dir / "exported";
  r = test::run_zoo("export --checkpoint " + checkpoint + " --out " + exported);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json hf = json::parse(test::read_file(exported + "/config.json"));
  EXPECT_EQ(hf["model_type"], "bert");
  EXPECT_EQ(hf["architectures"][0], "BertForPreTraining");
  EXPECT_TRUE(fs::exists(exported + "/vocab.txt"));
  test::write_file(dir / "in.py",
                   "import sys, torch\nsys.path.insert(0, sys.argv[2])\nimport st_io\n"
                   "ids = torch.tensor([[2, 5, 6, 7, 3, 2, 8, 9, 1, 1]])\n"
                   "st_io.save(sys.argv[1], {'input_ids': ids, 'token_type_ids': torch.zeros_like(ids), "
                   "'attention_mask': (ids != 1).long()})\n");
  r = test::run(std::string(ZOO_PYTHON) + " " + (dir / "in.py") + " " + (dir / "in.safetensors") + " " +
                ZOO_TESTS_DIR + "/py");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = test::run_python("hf_bert.py", "logits " + exported + " pretraining " + (dir / "in.safetensors") + " " +
                                         (dir / "out.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.output;

  // The checkpoint's vocabulary is a tokenizer (document 000's words) zoo tokenizer reads.
  r = test::run_zoo("tokenizer encode --tokenizer " + checkpoint + " \"The FILM, unheard\"");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream ids(test::lines_of(r.output).back());
  std::vector<int64_t> id;
  for (int64_t i; ids >> i;) id.push_back(i);
  ASSERT_EQ(id.size(), 4u) << r.output;  // the, film, ",", unheard
  EXPECT_GE(id[0], 5) << "the: a word of the reviews, after the five specials";
  EXPECT_GE(id[1], 5);
  EXPECT_EQ(id[3], 4) << "an unknown word is [UNK]";

  // A vocabulary from elsewhere is refused: by the asset's fingerprint in trainer_state.json,
  // and without that file by the tokenizer's fingerprint in the config.
  const std::string vocab_txt = test::read_file(checkpoint + "/vocab.txt");
  std::ofstream(checkpoint + "/vocab.txt", std::ios::app) << "extra\n";
  r = test::run_zoo("eval --checkpoint " + checkpoint + " --device cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("does not belong to this checkpoint"), std::string::npos) << r.output;
  auto lines = test::lines_of(vocab_txt);
  std::swap(lines[5], lines[6]);
  std::string shuffled;
  for (const auto& l : lines) shuffled += l + "\n";
  test::write_file(checkpoint + "/vocab.txt", shuffled);
  fs::remove(checkpoint + "/trainer_state.json");
  r = test::run_zoo("eval --checkpoint " + checkpoint + " --device cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find(checkpoint + "/vocab.txt: this tokenizer (basic_english, "), std::string::npos) << r.output;
}

TEST(BertPretraining, StrictModeStopsAtTheFirstBadReview) {
  test::TempDir dir;
  const std::string root = write_reviews(dir), cfg = dir / "bert.json";
  test::write_file(cfg, config(root));
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run") + " --set data.strict=true");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("zoo: error: " + root + "/train/pos/900_8.txt: empty text"), std::string::npos) << r.output;
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run2") + " --set data.path=" + (dir / "nowhere"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("nowhere"), std::string::npos) << r.output;
}

// data.layout segments (the paper's items, as wide as data.max_length) learns too, and in
// bf16 autocast where the CPU has it (the MLM head's LayerNorm once received bf16 input).
TEST(BertPretraining, SegmentsLayoutTrainsAlsoInBf16) {
  test::TempDir dir;
  const std::string root = write_reviews(dir), cfg = dir / "bert.json";
  test::write_file(cfg, config(root));
  const std::string precision = cpu_bf16_support().empty() ? "fp32" : "bf16";
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run") +
                         " --device cpu --set data.layout=segments --set data.max_length=12 --set train.precision=" + precision +
                         " --set data.validation_fraction=0.2 --set train.max_steps=300 --set train.eval_steps=300" +
                         " --set train.save_steps=300");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("12 tokens wide"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("on cpu, " + precision), std::string::npos) << r.output;
  std::ifstream state(dir / "run/checkpoint-300/trainer_state.json");
  const json m = json::parse(state)["eval_metrics"];
  const double vocab = 16;  // the specials, "." and the ten words
  EXPECT_LT(m["loss_mlm"].get<double>(), std::log(vocab) - 0.5) << m.dump();  // untrained: log(V)
  EXPECT_GT(m["mlm_accuracy"].get<double>(), 3.0 / vocab) << m.dump();      // chance: 1/V
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "wide") +
                    " --set data.layout=segments --set data.max_length=100");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("data.max_length 100) but model.max_position_embeddings is 64"), std::string::npos) << r.output;
}

// data.position_offset random: short items train rows of the position table beyond their
// width (with zero, rows past the width get no gradient and keep their start, which both
// runs share through the seed).
TEST(BertPretraining, RandomPositionOffsetsTrainTheWholePositionTable) {
  test::TempDir dir;
  const std::string root = write_reviews(dir), cfg = dir / "bert.json";
  test::write_file(cfg, config(root));
  std::map<std::string, torch::Tensor> table;
  for (const char* offset : {"zero", "random"}) {
    auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / offset) +
                           " --set data.layout=segments --set data.max_length=12 --set data.position_offset=" + offset +
                           " --set train.max_steps=40 --set train.eval_steps=40 --set train.save_steps=40");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    table[offset] = safetensors::load(dir / (std::string(offset) + "/checkpoint-40/model.safetensors"))
                        .tensors.at("bert.embeddings.position_embeddings.weight");
  }
  const auto moved = [&](int64_t from, int64_t to) {  // rows from .. to-1
    return (table["random"].slice(0, from, to) - table["zero"].slice(0, from, to)).abs().max().item<double>();
  };
  EXPECT_GT(moved(40, 64), 1e-3);  // Adam moves a trained row by about learning_rate (1e-3) a step
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "bad") +
                         " --set data.position_offset=shifted");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("data.position_offset"), std::string::npos) << r.output;
}

// The recipe's pretraining on the invented reviews: MLM alone, new masks for every batch.
const std::string kMlmAlone = " --device cpu --set data.layout=segments --set data.max_length=12"
                              " --set data.next_sentence_prediction=false --set data.dynamic_masking=true";

// Issue 39's choices: MLM only (B always the text after A; no NSP loss, head or metrics) and
// dynamic masking (a new draw of the masked positions for every training batch, from its seed).
TEST(BertPretraining, MlmOnlyWithDynamicMaskingTrainsAndResumesExactly) {
  test::TempDir dir;
  const std::string root = write_reviews(dir), cfg = dir / "bert.json";
  test::write_file(cfg, config(root));
  const std::string options = kMlmAlone + " --set data.validation_fraction=0.2 --set train.logging_steps=1";
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run") + options +
                         " --set train.max_steps=300 --set train.eval_steps=300 --set train.save_steps=300");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream state(dir / "run/checkpoint-300/trainer_state.json");
  const json m = json::parse(state)["eval_metrics"];
  EXPECT_FALSE(m.contains("loss_nsp")) << m.dump();
  EXPECT_FALSE(m.contains("nsp_accuracy")) << m.dump();
  EXPECT_DOUBLE_EQ(m["loss"].get<double>(), m["loss_mlm"].get<double>()) << m.dump();
  EXPECT_GT(m["mlm_accuracy"].get<double>(), 3.0 / 16) << m.dump();  // chance: 1 in 16 tokens

  // 6 steps straight, and 3 + resume + 3: the same losses (the masks come from each batch's seed).
  auto losses = [](const std::string& metrics) {
    std::vector<double> out;
    std::istringstream in(test::read_file(metrics));
    for (std::string line; std::getline(in, line);) {
      const json j = json::parse(line);
      if (j.value("type", "") == "train") {
        EXPECT_FALSE(j.contains("loss_nsp")) << line;
        out.push_back(j.at("loss"));
      }
    }
    return out;
  };
  ASSERT_EQ(test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "straight") + options +
                          " --set train.max_steps=6 --set train.save_steps=3 --set train.eval_steps=6").exit_code, 0);
  ASSERT_EQ(test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "cut") + options +
                          " --set train.max_steps=3 --set train.save_steps=3 --set train.eval_steps=6").exit_code, 0);
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "cut") + options +
                    " --set train.max_steps=6 --set train.save_steps=3 --set train.eval_steps=6 --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto a = losses(dir / "straight/metrics.jsonl"), b = losses(dir / "cut/metrics.jsonl");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << "step " << i + 1;

  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "pairs") +
                    " --set data.next_sentence_prediction=false");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("data.next_sentence_prediction=false needs data.layout segments"), std::string::npos)
      << r.output;
}

// MLM alone without dropout on two cores: each batch is cut into one slice per core, each
// slice's loss a mean over its own masked tokens and weighted by their number, so the run
// logs the losses of the same run on one core. With dropout the batch is cut as well, each
// slice's masks from a seed stream of its own: two runs log the same losses.
TEST(BertPretraining, MlmAloneRunsAsOneSlicePerCoreWithTheWholeBatchsLosses) {
  test::TempDir dir;
  const std::string root = write_reviews(dir), cfg = dir / "bert.json";
  test::write_file(cfg, config(root));
  const std::string options = kMlmAlone + " --set train.logging_steps=1 --set train.max_steps=5 --set train.eval_steps=5"
                                          " --set train.save_steps=5 --set train.precision=fp32";
  auto train_on = [&](int threads, const std::string& out, const std::string& more = "") {
    return test::run(cat("OMP_NUM_THREADS=", threads, " ", ZOO_BINARY, " train --config ", cfg, " --output-dir ",
                         dir / out, options, more));
  };
  auto one = train_on(1, "one"), two = train_on(2, "two");
  ASSERT_EQ(one.exit_code, 0) << one.output;
  ASSERT_EQ(two.exit_code, 0) << two.output;
  EXPECT_EQ(one.output.find("slices"), std::string::npos) << one.output;
  EXPECT_NE(two.output.find("cut into 2 slices, one per core"), std::string::npos) << two.output;
  const auto a = test::train_losses(dir / "one"), b = test::train_losses(dir / "two");
  ASSERT_EQ(a.size(), 5u);
  ASSERT_EQ(b.size(), 5u);
  for (const auto& [step, loss] : a) EXPECT_NEAR(b.at(step), loss, 1e-5 * loss) << "step " << step;

  auto dropout = train_on(2, "dropout", " --set model.hidden_dropout_prob=0.1");
  auto again = train_on(2, "again", " --set model.hidden_dropout_prob=0.1");
  ASSERT_EQ(dropout.exit_code, 0) << dropout.output;
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_NE(dropout.output.find("cut into 2 slices, one per core"), std::string::npos) << dropout.output;
  const auto c = test::train_losses(dir / "dropout"), d = test::train_losses(dir / "again");
  ASSERT_EQ(c.size(), 5u);
  EXPECT_EQ(c, d);
  EXPECT_GT(std::abs(c.at(5) - b.at(5)), 1e-6);  // the masks did drop something
}

// model.pretraining_head electra (issue 39): the generator's MLM loss and the discriminator's
// replaced-or-not loss, logged apart; the discriminator beats "nothing was replaced"; zoo eval
// draws the same replacements again; the export names the way to a Hugging Face model.
TEST(BertPretraining, ElectraLearnsWhichTokensWereReplaced) {
  test::TempDir dir;
  const std::string root = write_reviews(dir), cfg = dir / "bert.json";
  test::write_file(cfg, config(root));
  const std::string options = " --device cpu --set data.layout=segments --set data.max_length=12"
                              " --set data.validation_fraction=0.2 --set model.pretraining_head=electra"
                              " --set model.generator_hidden_size=16";
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "nsp") + options);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("set data.next_sentence_prediction false"), std::string::npos) << r.output;

  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run") + options +
                    " --set data.next_sentence_prediction=false --set data.dynamic_masking=true"
                    " --set train.max_steps=300 --set train.eval_steps=300 --set train.save_steps=300");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("(mlm "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", rtd "), std::string::npos) << r.output;
  const std::string checkpoint = dir / "run/checkpoint-300";
  std::ifstream state(checkpoint + "/trainer_state.json");
  const json m = json::parse(state)["eval_metrics"];
  for (const char* k : {"loss_mlm", "loss_rtd", "mlm_accuracy", "rtd_accuracy", "replaced"})
    EXPECT_TRUE(m.contains(k)) << k << " in " << m.dump();
  EXPECT_FALSE(m.contains("loss_nsp")) << m.dump();
  const double replaced = m["replaced"].get<double>();
  EXPECT_GT(replaced, 0.01) << m.dump();
  // Below the loss of the best constant answer (the replaced share itself, whose loss is its
  // entropy); an untrained discriminator scores about log 2.
  const double entropy = -replaced * std::log(replaced) - (1 - replaced) * std::log(1 - replaced);
  EXPECT_LT(m["loss_rtd"].get<double>(), entropy - 0.01) << m.dump();
  EXPECT_GE(m["rtd_accuracy"].get<double>(), 1.0 - replaced) << m.dump();
  EXPECT_GT(m["mlm_accuracy"].get<double>(), 3.0 / 16) << m.dump();  // the generator; chance: 1 in 16

  r = test::run_zoo("eval --checkpoint " + checkpoint + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json again = json::parse(r.output.substr(r.output.rfind("{")));
  EXPECT_NEAR(again["loss"].get<double>(), m["loss"].get<double>(), 1e-6);
  EXPECT_DOUBLE_EQ(again["replaced"].get<double>(), replaced);

  r = test::run_zoo("export --checkpoint " + checkpoint + " --out " + (dir / "exported"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("fine-tune it (zoo finetune --from CHECKPOINT) and export that"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "exported")) << "a refused export writes nothing";

  // The samples come from the batch seeds: 4 steps straight, and 2 + resume + 2, the same losses.
  const std::string steps = options + " --set data.next_sentence_prediction=false --set train.logging_steps=1"
                                      " --set train.save_steps=2 --set train.eval_steps=4";
  ASSERT_EQ(test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "straight") + steps +
                          " --set train.max_steps=4").exit_code, 0);
  ASSERT_EQ(test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "cut") + steps +
                          " --set train.max_steps=2").exit_code, 0);
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "cut") + steps + " --set train.max_steps=4 --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto losses = [](const std::string& metrics) {
    std::vector<double> out;
    std::istringstream in(test::read_file(metrics));
    for (std::string line; std::getline(in, line);)
      if (const json j = json::parse(line); j.value("type", "") == "train") out.push_back(j.at("loss_rtd"));
    return out;
  };
  const auto a = losses(dir / "straight/metrics.jsonl"), b = losses(dir / "cut/metrics.jsonl");
  ASSERT_EQ(a.size(), 4u);
  ASSERT_EQ(b.size(), 4u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-6) << "step " << i + 1;
}

// The dynamic draw: the same batch seed gives the same masks, another seed others; round(15%)
// of each row's word tokens, their labels the original words, [CLS]/[SEP]/padding never.
TEST(BertPretraining, DynamicMasksComeFromTheBatchSeed) {
  test::TempDir dir;
  const std::string root = write_reviews(dir);
  json c = json::parse(config(root));
  c["data"]["layout"] = "segments";
  c["data"]["max_length"] = 12;
  c["data"]["dynamic_masking"] = true;
  auto task = make_task(resolve_config(c, "test"));
  task->prepare_training("");
  std::vector<int64_t> items(64);
  for (int64_t i = 0; i < 64; ++i) items[i] = i;
  const Batch a = task->make_train_batch(items, 5), again = task->make_train_batch(items, 5),
              other = task->make_train_batch(items, 6);
  EXPECT_TRUE(torch::equal(a["input_ids"], again["input_ids"]));
  EXPECT_TRUE(torch::equal(a["labels"], again["labels"]));
  EXPECT_FALSE(torch::equal(a["labels"].ne(-100), other["labels"].ne(-100))) << "another seed, other positions";
  const auto selected = a["labels"].ne(-100);
  const auto original = torch::where(selected, a["labels"], a["input_ids"]);
  const auto words = original.gt(4);  // not [CLS] 0, [PAD] 1, [MASK] 2, [SEP] 3, [UNK] 4
  EXPECT_EQ(selected.logical_and(words.logical_not()).sum().item<int64_t>(), 0) << "only words are selected";
  for (int64_t r = 0; r < 64; ++r) {  // round(15% of the row's words) each: 1 of the 7-9 words here
    const double n = words[r].sum().item<double>();
    EXPECT_EQ(selected[r].sum().item<int64_t>(), static_cast<int64_t>(std::nearbyint(0.15 * n))) << "row " << r;
  }
  // Where not selected the input is the original word; where selected, mostly [MASK].
  EXPECT_TRUE(torch::equal(a["input_ids"].masked_select(selected.logical_not()), original.masked_select(selected.logical_not())));
  EXPECT_GT(a["input_ids"].masked_select(selected).eq(2).to(torch::kDouble).mean().item<double>(), 0.6);
}

}  // namespace
}  // namespace zoo
