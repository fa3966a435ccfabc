// The Transformer through the command line as a user runs it, on the invented pair file of
// the translation tests: zoo train -> eval (BLEU also on the test sources never seen in
// training) -> translate (greedy, beam, heat maps; unseen characters, empty lines, sources
// longer than the position table) -> export in Marian's layout, and a vocabulary that does not
// belong to the checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "data/pairs.h"
#include "data/text.h"
#include "data/vocab.h"
#include "test_util.h"
#include "translation_fixtures.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

using test::eval_json;
using test::json;
using test::lines_of;
using test::run_zoo;
using test::run_zoo_to_file;

class TransformerCli : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    pairs_ = *dir_ / "pairs.txt";
    test::write_file(pairs_, test::pair_file_text());
    config_ = *dir_ / "tiny.json";
    test::write_file(config_, test::tiny_config(pairs_, R"(, "test_size": 12)", "transformer"));
    run_ = *dir_ / "run";
    train_ = run_zoo("train --config " + config_ + " --output-dir " + run_ +
                     " --device cpu --set train.max_steps=60 --set train.eval_steps=30 --set train.save_steps=60"
                     " --set train.learning_rate=0.003");
    checkpoint_ = run_ + "/checkpoint-60";
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_EQ(train_.exit_code, 0) << train_.output; }

  static test::RunResult translate(const std::string& args, const std::string& input, std::string* out) {
    const std::string file = *dir_ / "in.txt", out_file = *dir_ / "out.txt";
    test::write_file(file, input);
    auto r = run_zoo_to_file("translate --checkpoint " + checkpoint_ + " --device cpu " + args + " < " + file, out_file);
    *out = test::read_file(out_file);
    return r;
  }

  static test::TempDir* dir_;
  static std::string pairs_, config_, run_, checkpoint_;
  static test::RunResult train_;
};
test::TempDir* TransformerCli::dir_ = nullptr;
std::string TransformerCli::pairs_, TransformerCli::config_, TransformerCli::run_, TransformerCli::checkpoint_;
test::RunResult TransformerCli::train_;

TEST_F(TransformerCli, TrainingLearnsAndSavesATransformer) {
  const json config = json::parse(test::read_file(checkpoint_ + "/config.json"));
  EXPECT_EQ(config["model"]["model_type"], "transformer");
  std::vector<double> losses;
  for (const auto& line : lines_of(test::read_file(run_ + "/metrics.jsonl"))) {
    const json j = json::parse(line);
    if (j["type"] == "train") losses.push_back(j["loss"].get<double>());
  }
  ASSERT_GE(losses.size(), 2u);
  EXPECT_LT(losses.back(), losses.front() - 1.0) << "the loss should fall in 60 steps";
}

// BLEU on the test pairs whose source never occurs in the training split, counted here from
// the run's own split files.
TEST_F(TransformerCli, EvalReportsBleuOnUnseenSourcesToo) {
  auto r = run_zoo("eval --checkpoint " + checkpoint_ + " --split test --device cpu --set data.eval_beam_size=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json m = eval_json(r.output);
  const auto split = data::read_split(run_);
  std::set<std::string> seen;
  for (const auto& p : split.train) seen.insert(data::preprocess_chinese(p.source));
  int64_t unseen = 0;
  for (const auto& p : split.test) unseen += seen.count(data::preprocess_chinese(p.source)) ? 0 : 1;
  EXPECT_EQ(m["examples"].get<int64_t>(), 12);
  EXPECT_EQ(m["examples_unseen_source"].get<int64_t>(), unseen);
  EXPECT_GE(m["bleu_unseen_source"].get<double>(), 0.0);
  EXPECT_LE(m["bleu_unseen_source"].get<double>(), 100.0);
}

TEST_F(TransformerCli, TranslatesUnseenCharactersAndEmptyLinesWithAndWithoutBeams) {
  for (const std::string args : {"", "--beam 3"}) {
    std::string out;
    auto r = translate(args, "三只红猫。\n\n五只鼠狗。\r\n七只黑猫。\n", &out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto lines = lines_of(out);
    ASSERT_EQ(lines.size(), 4u) << args;
    EXPECT_FALSE(lines[0].empty());
    EXPECT_TRUE(lines[1].empty());
    EXPECT_FALSE(lines[2].empty()) << "unseen characters become <unk>, not an error";
  }
}

TEST_F(TransformerCli, ASourceLongerThanThePositionTableIsAnErrorOrTruncated) {
  std::string chinese;
  for (int i = 0; i < 40; ++i) chinese += "红";
  std::string out;
  auto r = translate("", "一只蓝猫。\n" + chinese + "\n", &out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("longer than the 32 this model reads (model.max_position_embeddings)"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("--truncate"), std::string::npos) << r.output;
  r = translate("--truncate --beam 2", "一只蓝猫。\n" + chinese + "\n", &out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(lines_of(out).size(), 2u);
  // --max-length beyond the table is capped at the table: no crash.
  r = translate("--max-length 500", "一只蓝猫。\n", &out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST_F(TransformerCli, CrossAttentionHeatMapIsWritten) {
  std::string out;
  auto r = translate("--attention-out " + (*dir_ / "att.svg"), "八只绿猫。\n", &out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string svg = test::read_file(*dir_ / "att.svg");
  for (const char* c : {"八", "绿", "&lt;start&gt;", "<svg"}) EXPECT_NE(svg.find(c), std::string::npos) << c;
  // One head instead of the mean: another map; a head the model lacks is an error naming its heads.
  r = translate("--attention-out " + (*dir_ / "head1.svg") + " --attention-head 1", "八只绿猫。\n", &out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(test::read_file(*dir_ / "head1.svg"), svg);
  r = translate("--attention-out " + (*dir_ / "head9.svg") + " --attention-head 9", "八只绿猫。\n", &out);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("has 4 heads (0-3)"), std::string::npos) << r.output;
}

// The export is a MarianMTModel directory (config and tensor names; the logits are checked
// against a plain-PyTorch Marian in transformer_test.cc), and zoo translates from it as from
// the checkpoint.
TEST_F(TransformerCli, MarianExportTranslatesTheSame) {
  const std::string exported = *dir_ / "exported";
  auto r = run_zoo("export --checkpoint " + checkpoint_ + " --out " + exported);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json hf = json::parse(test::read_file(exported + "/config.json"));
  EXPECT_EQ(hf["model_type"], "marian");
  EXPECT_EQ(hf["architectures"][0], "MarianMTModel");
  const std::string input = "三只红猫。\n四只黄猫。\n";
  std::string ours;
  ASSERT_EQ(translate("--beam 2", input, &ours).exit_code, 0);
  const std::string file = *dir_ / "in2.txt", out = *dir_ / "exported.out";
  test::write_file(file, input);
  r = run_zoo_to_file("translate --checkpoint " + exported + " --device cpu --beam 2 < " + file, out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::read_file(out), ours);
}

TEST_F(TransformerCli, AVocabularyFromAnotherRunIsRefused) {
  const std::string copy = *dir_ / "broken";
  fs::copy(checkpoint_, copy, fs::copy_options::recursive | fs::copy_options::overwrite_existing);
  data::Vocab::fit({"<start> a b <end>"}, 0, "<unk>").save(copy + "/target_vocab.json");
  auto r = run_zoo("eval --checkpoint " + copy);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("does not belong to this checkpoint"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace zoo
