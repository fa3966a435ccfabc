// Text classification with BERT (train/tasks/text_classification.h) through the command line:
// invented reviews in the IMDB archive's layout and as a CSV, a vocab.txt, zoo train -> zoo
// eval on the test folder; fine-tuning from a bert_pretraining checkpoint (train.init_from);
// and the errors for a missing vocabulary, an unknown label and a missing CSV column.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "review_fixtures.h"
#include "test_util.h"
#include "train_fixtures.h"
#include "train/tasks/text_classification.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

using json = nlohmann::json;

using test::kBad;
using test::kGood;
using test::kNeutral;
using test::review;

std::string write_data(const test::TempDir& dir) { return test::write_reviews(dir); }
std::string config(const std::string& root, const std::string& vocab) { return test::classifier_config(root, vocab); }

TEST(TextClassification, LearnsSentimentFromFoldersAndEvaluatesTheTestSplit) {
  test::TempDir dir;
  const std::string root = write_data(dir), cfg = dir / "cls.json", run = dir / "run";
  test::write_file(cfg, config(root, dir / "vocab.txt"));
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + run + " --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(run + "/checkpoint-60/vocab.txt"));
  r = test::run_zoo("eval --checkpoint " + run + "/checkpoint-60 --split test --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json m = json::parse(r.output.substr(r.output.rfind("{")));
  EXPECT_EQ(m["examples"].get<int64_t>(), 40);
  EXPECT_GE(m["accuracy"].get<double>(), 0.9) << r.output;

  // The export names the classes as Hugging Face does.
  r = test::run_zoo("export --checkpoint " + run + "/checkpoint-60 --out " + (dir / "exported"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::ifstream exported(dir / "exported/config.json");
  const json hf = json::parse(exported);
  EXPECT_EQ(hf["architectures"][0], "BertForSequenceClassification");
  EXPECT_EQ(hf["id2label"], (json{{"0", "neg"}, {"1", "pos"}})) << hf.dump();
  EXPECT_EQ(hf["label2id"], (json{{"neg", 0}, {"pos", 1}})) << hf.dump();

  // zoo classify: one text per stdin line (blank lines keep their place), or a file each.
  test::write_file(dir / "in.txt", review(1001, true) + "\n\n" + review(1002, false) + "\n");
  r = test::run(std::string(ZOO_BINARY) + " classify --checkpoint " + run + "/checkpoint-60 < " + (dir / "in.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("line 1\tpos\t"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("line 2\n"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("line 3\tneg\t"), std::string::npos) << r.output;
  test::write_file(dir / "one.txt", review(1004, false));
  r = test::run_zoo("classify --checkpoint " + run + "/checkpoint-60 --top-k 2 " + (dir / "one.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find((dir / "one.txt") + "\tneg\t"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\tpos\t"), std::string::npos) << "the second label with --top-k 2";
  test::write_file(dir / "bad.txt", "fine\nbad \xFF here\n");
  r = test::run(std::string(ZOO_BINARY) + " classify --checkpoint " + run + "/checkpoint-60 < " + (dir / "bad.txt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("line 2: invalid UTF-8 at byte 4"), std::string::npos) << r.output;

  // The same data as a CSV (labels positive/negative).
  std::string csv = "review,sentiment\n";
  for (int i = 0; i < 80; ++i) csv += "\"" + review(i, i % 2) + "\"," + (i % 2 ? "positive" : "negative") + "\n";
  test::write_file(dir / "train.csv", csv);
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run-csv") + " --set data.path=" +
                    (dir / "train.csv") + " --set 'data.labels=[\"negative\",\"positive\"]' --set train.max_steps=20" +
                    " --set train.eval_steps=20 --set train.save_steps=20");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// data.truncation: head keeps a long text's beginning; head_tail its first quarter and its end.
// Fine-tuning builds the architecture of the checkpoint it starts from, not the config's (as
// from_pretrained does): a 2-layer checkpoint fine-tuned with this 1-layer config trains 2
// layers, and --resume keeps them with the checkpoint gone. A --set that makes the model
// shallower than its checkpoint is refused, unless the key map sends the extra layer away.
TEST(TextClassification, FineTuningBuildsTheCheckpointsArchitecture) {
  test::TempDir dir;
  const std::string root = write_data(dir), cfg = dir / "cls.json", deep = dir / "deep/checkpoint-2";
  test::write_file(cfg, config(root, dir / "vocab.txt"));
  const std::string steps = " --set train.max_steps=2 --set train.eval_steps=2 --set train.save_steps=2";
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "deep") + steps +
                         " --set model.num_hidden_layers=2 --set model.intermediate_size=48");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto layers_of = [](const std::string& checkpoint) {
    return json::parse(test::read_file(checkpoint + "/config.json"))["model"]["num_hidden_layers"].get<int>();
  };

  r = test::run_zoo("finetune --from " + deep + " --config " + cfg + " --output-dir " + (dir / "ft") + steps);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("zoo: the model takes its architecture from " + deep + "/config.json: num_hidden_layers 2 "
                          "(the config: 1), intermediate_size 48 (the config: 64)"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("(unexpected)"), std::string::npos) << "every tensor of the checkpoint is used: " << r.output;
  EXPECT_EQ(layers_of(dir / "ft/checkpoint-2"), 2);
  fs::rename(dir / "deep", dir / "gone");
  r = test::run_zoo("train --config " + cfg + " --init-from " + deep + " --output-dir " + (dir / "ft") + " --resume" +
                    " --set train.max_steps=4 --set train.eval_steps=2 --set train.save_steps=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(layers_of(dir / "ft/checkpoint-4"), 2);
  fs::rename(dir / "gone", dir / "deep");

  r = test::run_zoo("finetune --from " + deep + " --config " + cfg + " --output-dir " + (dir / "shallow") + steps +
                    " --set model.num_hidden_layers=1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("belong to layers the model does not have (e.g. 'bert.encoder.layer.1."), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("train.init_from_key_map, e.g. \"bert.encoder.layer.1.=unused.bert.encoder.layer.1.\""),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(dir / "shallow/checkpoint-2"));
  r = test::run_zoo("finetune --from " + deep + " --config " + cfg + " --output-dir " + (dir / "shallow") + steps +
                    " --set model.num_hidden_layers=1 --set 'train.init_from_key_map=[\"bert.encoder.layer.1.=unused.\"]'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(layers_of(dir / "shallow/checkpoint-2"), 1);
}

TEST(TextClassification, TruncationKeepsTheHeadOrTheHeadAndTail) {
  test::TempDir dir;
  const std::string root = write_data(dir);
  json cfg = json::parse(config(root, dir / "vocab.txt"));
  cfg["data"]["max_length"] = 10;  // room for 8 words
  const TaskContext context;
  std::string text;
  for (int w = 0; w < 12; ++w) text += (w ? " " : "") + kNeutral[w % 6];  // 12 words
  auto id = [&](const std::string& w) { return static_cast<int64_t>(6 + kGood.size() + kBad.size() +
                (std::find(kNeutral.begin(), kNeutral.end(), w) - kNeutral.begin())); };
  std::vector<int64_t> words;
  for (int w = 0; w < 12; ++w) words.push_back(id(kNeutral[w % 6]));
  const auto head = TextClassificationTask(cfg, context).encode(text);
  std::vector<int64_t> expected{0};  // [CLS]
  expected.insert(expected.end(), words.begin(), words.begin() + 8);
  expected.push_back(3);  // [SEP]
  EXPECT_EQ(head, expected);
  cfg["data"]["truncation"] = "head_tail";
  const auto both = TextClassificationTask(cfg, context).encode(text);
  expected = {0, words[0], words[1]};  // 8 / 4 = 2 from the head, 6 from the end
  expected.insert(expected.end(), words.end() - 6, words.end());
  expected.push_back(3);
  EXPECT_EQ(both, expected);
  EXPECT_EQ(TextClassificationTask(cfg, context).encode("the film"),
            (std::vector<int64_t>{0, id("the"), id("film"), 3}));  // short texts are whole
}

// Reviews of 1 to 19 words (a sentiment word, then neutral ones) in the archive's layout.
std::string write_varied_data(const test::TempDir& dir) {
  const std::string root = write_data(dir);
  for (const char* split : {"train", "test"})  // write_data's reviews out, the folders kept
    for (const char* label : {"neg", "pos"})
      for (const auto& f : fs::directory_iterator(root + "/" + split + "/" + label)) fs::remove(f.path());
  for (int i = 0; i < 120; ++i) {
    const bool pos = i % 2;
    std::string text = (pos ? kGood : kBad)[i % 4];
    for (int w = 0; w < (i * 7) % 19; ++w) text += " " + kNeutral[(i + w) % kNeutral.size()];
    test::write_file(root + (i < 80 ? "/train" : "/test") + (pos ? "/pos/" : "/neg/") + std::to_string(i) + ".txt",
                     text);
  }
  return root;
}

// data.group_by_length: every training text once an epoch, in batches of similar lengths (less
// padding than the plain permutation), another grouping each epoch, the same for the same seed.
TEST(TextClassification, GroupByLengthBatchesTextsOfSimilarLengths) {
  test::TempDir dir;
  json cfg = json::parse(config(write_varied_data(dir), dir / "vocab.txt"));
  cfg["data"]["max_length"] = 24;
  const TaskContext context;
  TextClassificationTask plain(cfg, context);
  cfg["data"]["group_by_length"] = true;
  TextClassificationTask grouped(cfg, context);
  plain.prepare_training("");
  grouped.prepare_training("");
  const int64_t n = grouped.num_train_examples();
  ASSERT_EQ(n, 70);  // 80 less the 10 held out
  // Tokens a plan pads its batches to: each batch is as wide as its longest text.
  auto padded = [&](TextClassificationTask& task, const std::vector<std::vector<int64_t>>& plan) {
    int64_t tokens = 0;
    for (const auto& batch : plan) tokens += task.make_train_batch(batch, 0)["input_ids"].numel();
    return tokens;
  };
  const auto plan = grouped.epoch_plan(42, 0, 8);
  std::vector<int64_t> seen;
  for (const auto& batch : plan) {
    EXPECT_LE(batch.size(), 8u);
    seen.insert(seen.end(), batch.begin(), batch.end());
  }
  std::sort(seen.begin(), seen.end());
  std::vector<int64_t> all(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) all[static_cast<size_t>(i)] = i;
  EXPECT_EQ(seen, all);
  EXPECT_EQ(grouped.epoch_plan(42, 0, 8), plan);
  EXPECT_NE(grouped.epoch_plan(42, 1, 8), plan);
  EXPECT_LT(padded(grouped, plan), padded(plain, plain.epoch_plan(42, 0, 8)) * 3 / 4);
}

// Evaluation batches texts in length order: the metrics do not depend on the batch size.
TEST(TextClassification, EvaluationIsTheSameForEveryBatchSize) {
  test::TempDir dir;
  json cfg = json::parse(config(write_varied_data(dir), dir / "vocab.txt"));
  cfg["data"]["max_length"] = 24;
  TextClassificationTask task(cfg, TaskContext{});
  const Metrics one = evaluate(task, "test", 1, torch::kCPU), seven = evaluate(task, "test", 7, torch::kCPU);
  EXPECT_EQ(one.at("examples"), 40);
  EXPECT_EQ(seven.at("examples"), 40);
  EXPECT_NEAR(seven.at("loss"), one.at("loss"), 1e-5);
  EXPECT_EQ(seven.at("accuracy"), one.at("accuracy"));
}

// train.r_drop_alpha: R-Drop's loss (zoo::r_drop_loss), input_ids and attention_mask twice over
// (alpha 100: the untrained classifier's two passes differ by a KL of about 2e-5).
TEST(TextClassification, RDropAddsTheKlOfTwoDropoutPasses) {
  test::TempDir dir;
  json cfg = json::parse(config(write_data(dir), dir / "vocab.txt"));
  cfg["model"]["hidden_dropout_prob"] = 0.3;
  torch::manual_seed(0);  // the initial weights
  TaskContext context;
  context.label_smoothing = 0.1;
  TextClassificationTask task(cfg, context);
  task.prepare_training("");
  test::expect_r_drop_loss(task, task.make_train_batch({0, 1, 2, 3, 4, 5, 6, 7}, 1), 100.0);
}

TEST(TextClassification, BadInputIsNamed) {
  test::TempDir dir;
  const std::string root = write_data(dir), cfg = dir / "cls.json";
  test::write_file(cfg, config(root, dir / "vocab.txt"));
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "a") + " --set data.vocab=");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("text classification needs a vocabulary"), std::string::npos) << r.output;
  test::write_file(dir / "novocab.txt", "[CLS]\n[SEP]\n[UNK]\nthe\n");
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "b") + " --set data.vocab=" + (dir / "novocab.txt"));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("novocab.txt: the vocabulary has no [PAD] token"), std::string::npos) << r.output;
  test::write_file(dir / "odd.csv", "review,sentiment\ngood film,positive\nbad film,meh\n");
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "c") + " --set data.path=" + (dir / "odd.csv") +
                    " --set 'data.labels=[\"negative\",\"positive\"]' --set data.valid_size=0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("odd.csv:3: label 'meh' is not one of data.labels (negative, positive)"), std::string::npos)
      << r.output;
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "d") + " --set data.path=" + (dir / "odd.csv") +
                    " --set data.text_column=text");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("no column 'text'"), std::string::npos) << r.output;
  // Texts longer than the model's positions would fail at the first long batch; every text here
  // is shorter, so only the check at start-up catches it.
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "e") + " --set data.max_length=33");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("data.max_length 33 is longer than the model's 32 positions"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "e/checkpoint-60"));
}

// Issue 36's data faults and untrusted assets, for text classification: a label folder that
// exists but holds nothing trained on one class; data.valid_size=0 failed only after training;
// a checkpoint whose vocab.txt was shuffled (same size) classified without a word of warning.
TEST(TextClassification, EmptyLabelFolderNoValidationAndShuffledVocabularyAreRefused) {
  test::TempDir dir;
  const std::string root = write_data(dir), cfg = dir / "cls.json";
  test::write_file(cfg, config(root, dir / "vocab.txt"));
  const std::string run = dir / "run";
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + run + " --set train.max_steps=2 --set train.save_steps=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Hugging Face's tokenizer.json comes with a WordPiece run only (basic_english has no such form).
  EXPECT_FALSE(fs::exists(run + "/checkpoint-2/tokenizer.json"));
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "wp") +
                    " --set data.tokenizer=wordpiece --set train.max_steps=30 --set train.save_steps=30");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_TRUE(fs::exists(dir / "wp/checkpoint-30/tokenizer.json"));
  const auto j = json::parse(test::read_file(dir / "wp/checkpoint-30/tokenizer.json"));
  EXPECT_EQ(j["model"]["type"], "WordPiece");
  EXPECT_EQ(j["model"]["vocab"].size(), 5u + 1 + kGood.size() + kBad.size() + kNeutral.size());
  // Its export is a Hugging Face BertForSequenceClassification directory, which classifies as
  // the checkpoint does: with WordPiece, whose accent stripping makes "wöndérful" a known word
  // (basic_english would leave it unknown).
  r = test::run_zoo("export --checkpoint " + (dir / "wp/checkpoint-30") + " --out " + (dir / "wpx"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  test::write_file(dir / "accents.txt", "the film was wöndérful\nthe plot was TERRIBLE and bôring\n");
  const auto classify = [&](const std::string& from) {
    return test::run(std::string(ZOO_BINARY) + " classify --checkpoint " + from + " --top-k 2 < " + (dir / "accents.txt"));
  };
  const auto from_checkpoint = classify(dir / "wp/checkpoint-30"), from_export = classify(dir / "wpx");
  ASSERT_EQ(from_checkpoint.exit_code, 0) << from_checkpoint.output;
  const auto answers = test::lines_of(from_checkpoint.output);
  ASSERT_EQ(answers.size(), 2u) << from_checkpoint.output;
  EXPECT_NE(answers[0].substr(answers[0].find('\t')), answers[1].substr(answers[1].find('\t')))
      << "a model that reads its input";
  EXPECT_EQ(from_export.output, from_checkpoint.output);
  // A Hugging Face directory that has tokenizer.json alone (no vocab.txt) reads the same WordPiece.
  fs::copy(dir / "wpx", dir / "wpj", fs::copy_options::recursive);
  fs::remove(dir / "wpj/vocab.txt");
  const auto from_tokenizer_json = classify(dir / "wpj");
  EXPECT_EQ(from_tokenizer_json.output, from_checkpoint.output);
  // A text longer than the directory's 32 positions is cut to them (data.max_length's default,
  // 256, would be too long for this model).
  std::string long_text;
  for (int i = 0; i < 40; ++i) long_text += "the film was wonderful ";
  test::write_file(dir / "long.txt", long_text + "\n");
  r = test::run(std::string(ZOO_BINARY) + " classify --checkpoint " + (dir / "wpx") + " < " + (dir / "long.txt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;

  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "novalid") + " --set data.valid_size=0");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("zoo: error: data.valid_size=0 leaves no validation texts"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "novalid/metrics.jsonl")) << "refused before training";

  const std::string ckpt = run + "/checkpoint-2";
  // Every predictor opens a directory alike and names what it found and what it needs.
  for (const auto& [command, need] : std::vector<std::pair<std::string, std::string>>{
           {"translate", "zoo translate needs one for 'translation'"},
           {"generate", "zoo generate needs one for 'language_modeling'"}}) {
    r = test::run(std::string(ZOO_BINARY) + " " + command + " --checkpoint " + ckpt + " < /dev/null");
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.output.find(ckpt + ": a model for 'text_classification' (model_type 'bert'); " + need), std::string::npos)
        << command << ": " << r.output;
  }
  auto tokens = test::read_file(ckpt + "/vocab.txt");
  auto lines = test::lines_of(tokens);
  std::swap(lines[6], lines[7]);  // two words trade ids; the size stays
  std::string shuffled;
  for (const auto& l : lines) shuffled += l + "\n";
  test::write_file(ckpt + "/vocab.txt", shuffled);
  for (const std::string& command : {"eval --checkpoint " + ckpt, "classify --checkpoint " + ckpt,
                                     "export --checkpoint " + ckpt + " --out " + (dir / "x"),
                                     "train --config " + cfg + " --output-dir " + (dir / "ft") + " --init-from " + ckpt}) {
    r = test::run(std::string(ZOO_BINARY) + " " + command + " < /dev/null");
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.output;
    EXPECT_NE(r.output.find(ckpt + "/vocab.txt: not the file this checkpoint was saved with"), std::string::npos)
        << command << ": " << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "x/model.safetensors"));
  // Without trainer_state.json (a checkpoint shared as its model, config and vocabulary), the
  // tokenizer's own fingerprint in the config still refuses the shuffled vocabulary.
  fs::remove(ckpt + "/trainer_state.json");
  for (const std::string& command : {"eval --checkpoint " + ckpt, "classify --checkpoint " + ckpt}) {
    r = test::run(std::string(ZOO_BINARY) + " " + command + " < /dev/null");
    EXPECT_EQ(r.exit_code, 1) << command << ": " << r.output;
    EXPECT_NE(r.output.find(ckpt + "/vocab.txt: this tokenizer (basic_english, "), std::string::npos) << command << ": " << r.output;
  }

  for (const auto& e : fs::directory_iterator(root + "/train/neg")) fs::remove(e.path());
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "oneclass"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(root + "/train/neg: no .txt file in this label's folder"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace zoo
