// An export behaves as its checkpoint (issue 66): for every family, the Hugging Face directory
// that `zoo export` writes gives the checkpoint's outputs on inputs longer than the model was
// trained to read (a text past data.max_length, a prompt past the context, an image larger than
// the model's), with vocab.txt removed from the export so that tokenizer.json alone speaks for
// the WordPiece tokenizer. (Translation's long sources: translation_test.cc and
// transformer_cli_test.cc, beside their trained fixtures.)
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "fixtures.h"
#include "review_fixtures.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

using json = nlohmann::json;

// `zoo ARGS` with --checkpoint DIR: its standard output alone (warnings name the directory).
std::string stdout_of(const std::string& args, const std::string& dir) {
  auto r = test::run(std::string(ZOO_BINARY) + " " + args + " --checkpoint " + dir + " 2>/dev/null");
  EXPECT_EQ(r.exit_code, 0) << args << " on " << dir << ":\n" << r.output;
  return r.output;
}

std::string export_of(const std::string& checkpoint, const std::string& out) {
  auto r = test::run_zoo("export --checkpoint " + checkpoint + " --out " + out);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return out;
}

// A classifier trained to read 8 tokens of a 32-position model: the export must read 8 too.
TEST(ExportParity, TextClassifierReadsItsTrainingLengthWithTokenizerJsonAlone) {
  test::TempDir dir;
  const std::string root = test::write_reviews(dir), cfg = dir / "cls.json";
  test::write_file(cfg, test::classifier_config(root, dir / "vocab.txt"));
  for (const std::string truncation : {"head", "head_tail"}) {
    const std::string run = dir / ("run-" + truncation);
    auto r = test::run_zoo("train --config " + cfg + " --output-dir " + run +
                           " --set data.tokenizer=wordpiece --set data.max_length=8 --set data.truncation=" +
                           truncation + " --set train.max_steps=30 --set train.save_steps=30");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const std::string checkpoint = run + "/checkpoint-30", exported = export_of(checkpoint, dir / ("x-" + truncation));
    const json tokenizer = json::parse(test::read_file(exported + "/tokenizer_config.json"));
    EXPECT_EQ(tokenizer.value("model_max_length", 0), 8) << tokenizer.dump();
    fs::remove(exported + "/vocab.txt");
    // Every text is longer than 8 tokens; the words that decide come after the eighth.
    std::string texts;
    for (int i = 0; i < 5; ++i)
      texts += "the film and the plot and the actor was " + test::review(200 + i, i % 2) + "\n";
    test::write_file(dir / "long.txt", texts);
    const std::string args = "classify --top-k 2 < " + (dir / "long.txt");
    const std::string from_checkpoint = stdout_of(args, checkpoint);
    EXPECT_EQ(test::lines_of(from_checkpoint).size(), 5u) << from_checkpoint;
    EXPECT_EQ(stdout_of(args, exported), from_checkpoint) << truncation;
  }
}

// A GPT with a 32-token context, given a 130-character prompt: both keep its last 32 tokens.
TEST(ExportParity, LanguageModelKeepsTheSameContext) {
  test::TempDir dir;
  test::write_file(dir / "text.txt", test::corpus());
  const std::string cfg = test::tiny_config(dir, {dir / "text.txt"}, 20);
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string checkpoint = dir / "run/checkpoint-20", exported = export_of(checkpoint, dir / "x");
  EXPECT_EQ(json::parse(test::read_file(exported + "/tokenizer_config.json")).value("model_max_length", 0), 32);
  std::string prompt;
  for (int i = 0; i < 10; ++i) prompt += "a dog sat. ";
  const std::string args = "generate --greedy --max-new-tokens 12 --prompt '" + prompt + "'";
  const std::string from_checkpoint = stdout_of(args, checkpoint);
  EXPECT_GT(from_checkpoint.size(), prompt.size());
  EXPECT_EQ(stdout_of(args, exported), from_checkpoint);
}

// A ViT of 8 x 8 pixels shown a 16 x 16 image: both resize it the same way.
TEST(ExportParity, ImageClassifierResizesLargerImagesTheSame) {
  test::TempDir dir;
  fs::create_directories(dir / "mnist");
  test::write_tiny_mnist(dir / "mnist", 128, 32);
  test::write_file(dir / "vit.json", test::tiny_vit_config(dir / "mnist"));
  auto r = test::run_zoo("train --config " + (dir / "vit.json") + " --output-dir " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string checkpoint = dir / "run/checkpoint-8", exported = export_of(checkpoint, dir / "x");
  std::string pixels;
  for (int y = 0; y < 16; ++y)
    for (int x = 0; x < 16; ++x) pixels += static_cast<char>(y < 4 ? 200 : 30 + (x * y) % 50);
  test::write_file(dir / "big.pgm", "P5\n16 16\n255\n" + pixels);
  const std::string args = "classify --top-k 4 " + (dir / "big.pgm");
  const std::string from_checkpoint = stdout_of(args, checkpoint);
  EXPECT_NE(from_checkpoint.find("big.pgm"), std::string::npos) << from_checkpoint;
  EXPECT_EQ(stdout_of(args, exported), from_checkpoint);
}

}  // namespace
}  // namespace zoo
