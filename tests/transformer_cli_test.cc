// The Transformer through the command line as a user runs it, on the invented pair file of
// the translation tests: zoo train -> eval (BLEU also on the test sources never seen in
// training) -> translate (greedy, beam, heat maps; unseen characters, empty lines, sources
// longer than the position table) -> export in Marian's layout, and a vocabulary that does not
// belong to the checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "data/pairs.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/text.h"
#include "data/vocab.h"
#include "io/safetensors.h"
#include "train/task_registry.h"
#include "train/tasks/translation.h"
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
  EXPECT_NE(r.output.find("no MarianTokenizer files written"), std::string::npos) << r.output;
  // The last source is longer than the 32 positions the model reads: both cut it the same way.
  std::string chinese;
  for (int i = 0; i < 40; ++i) chinese += i % 2 ? "红" : "猫";
  const std::string input = "三只红猫。\n四只黄猫。\n" + chinese + "\n";
  std::string ours;
  ASSERT_EQ(translate("--beam 2 --truncate", input, &ours).exit_code, 0);
  EXPECT_EQ(lines_of(ours).size(), 3u) << ours;
  const std::string file = *dir_ / "in2.txt", out = *dir_ / "exported.out";
  test::write_file(file, input);
  r = run_zoo_to_file("translate --checkpoint " + exported + " --device cpu --beam 2 --truncate < " + file, out);
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

// SentencePiece subwords on both sides, one joint vocabulary and shared embeddings: the
// checkpoint holds source.spm / target.spm, the export is a Marian directory whose tokenizer
// files (vocab.json, tokenizer_config.json) give the ids zoo reads (checked by a
// re-implementation of MarianTokenizer over python3-sentencepiece), and the plain-PyTorch
// Marian computes zoo's logits from them. A SentencePiece model from elsewhere is refused.
TEST(TransformerSentencePiece, JointSubwordsExportAsAMarianTokenizer) {
  test::TempDir dir;
  const std::string pairs = dir / "pairs.txt", config = dir / "spm.json", run = dir / "run";
  test::write_file(pairs, test::pair_file_text());
  test::write_file(config, test::tiny_config(pairs,
                                             R"(, "source_tokenizer": "sentencepiece", "target_tokenizer": "sentencepiece",
                                                "joint_vocabulary": true, "sentencepiece_model_type": "bpe", "sentencepiece_vocab_size": 90)",
                                             "transformer"));
  auto r = run_zoo("train --config " + config + " --output-dir " + run +
                   " --device cpu --set model.share_encoder_decoder_embeddings=true --set train.max_steps=30");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string checkpoint = run + "/checkpoint-30";
  for (const char* f : {"source.spm", "target.spm", "vocab.json", "tokenizer_config.json"})
    EXPECT_TRUE(fs::exists(checkpoint + "/" + f)) << f;
  const std::string exported = dir / "exported";
  r = run_zoo("export --checkpoint " + checkpoint + " --out " + exported);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json hf = json::parse(test::read_file(exported + "/config.json"));
  EXPECT_EQ(hf["share_encoder_decoder_embeddings"], true);
  EXPECT_EQ(hf["vocab_size"], hf["decoder_vocab_size"]);

  // Zoo's source ids = MarianTokenizer's, sentence by sentence.
  const std::vector<std::string> sentences = {"三只红猫。", "我喜欢苹果。", "九只白猫。", "鼠"};
  std::string input;
  for (const auto& s : sentences) input += s + "\n";
  test::write_file(dir / "in.txt", input);
  auto py = test::run(std::string(ZOO_PYTHON) + " " + ZOO_TESTS_DIR + "/py/marian_tokenizer_ref.py " + exported +
                      " < " + (dir / "in.txt"));
  ASSERT_EQ(py.exit_code, 0) << py.output;
  const auto py_lines = lines_of(py.output);
  ASSERT_EQ(py_lines.size(), sentences.size()) << py.output;
  auto task = load_task(exported, {}, torch::Device(torch::kCPU));
  auto* translation = dynamic_cast<TranslationTask*>(task.get());
  ASSERT_NE(translation, nullptr);
  std::vector<std::vector<int64_t>> rows;
  for (size_t i = 0; i < sentences.size(); ++i) {
    const auto ids = translation->encode_source(sentences[i]);
    std::string ours;
    for (int64_t id : ids) ours += (ours.empty() ? "" : " ") + std::to_string(id);
    EXPECT_EQ(ours, py_lines[i]) << sentences[i];
    rows.push_back(ids);
  }
  // ... and the Python Marian gives zoo's logits on them.
  auto src = data::pad_sequences(rows);
  auto tgt = torch::full({src.size(0), 3}, translation->bos_id(), torch::kLong);
  safetensors::save(dir / "io.safetensors", {{"input_ids", src}, {"decoder_input_ids", tgt}});
  py = test::run_python("hf_marian.py",
                        "logits " + exported + " " + (dir / "io.safetensors") + " " + (dir / "logits.safetensors"));
  ASSERT_EQ(py.exit_code, 0) << py.output;
  auto expected = safetensors::load(dir / "logits.safetensors").tensors.at("logits");
  torch::NoGradGuard g;
  task->model()->eval();
  auto logits = translation->encoder_decoder().forward(src, tgt);
  EXPECT_LE((logits - expected).abs().max().item<double>(), 1e-4);

  // An older zoo recorded the SentencePiece models' fingerprints alone: its checkpoints load.
  json saved = read_json_file(checkpoint + "/config.json");
  for (const char* side : {"source", "target"})
    saved["data"][std::string(side) + "_tokenizer_fingerprint"] =
        data::SentencePieceTokenizer::load(checkpoint + "/" + side + ".spm")->fingerprint();
  write_json_file(checkpoint + "/config.json", saved);
  r = run_zoo("eval --checkpoint " + checkpoint + " --device cpu");
  EXPECT_EQ(r.exit_code, 0) << r.output;

  // A SentencePiece model that is not the checkpoint's own.
  fs::copy_file(checkpoint + "/source.spm", dir / "other.spm");
  r = run_zoo("tokenizer train --input " + pairs + " --model-type bpe --vocab-size 100 --out " + (dir / "tok"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::copy_file(dir / "tok/tokenizer.model", checkpoint + "/target.spm", fs::copy_options::overwrite_existing);
  r = run_zoo("eval --checkpoint " + checkpoint + " --device cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("target.spm: not the file this checkpoint was saved with"), std::string::npos) << r.output;
  // Without the checkpoint's file fingerprints (an older zoo's), the task's own check.
  json state = read_json_file(checkpoint + "/trainer_state.json");
  state.erase("asset_fingerprints");
  write_json_file(checkpoint + "/trainer_state.json", state);
  r = run_zoo("eval --checkpoint " + checkpoint + " --device cpu");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("target.spm with " + checkpoint + "/target_vocab.json: this tokenizer (keras_sentencepiece, "),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace zoo
