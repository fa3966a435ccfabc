// The language-modeling task end to end through the CLI (zoo train / eval / generate), its
// token streams (data/token_stream.h), and its bad inputs: empty and non-UTF-8 text, a
// prompt longer than the context, a tokenizer that is not the checkpoint's, and a corpus
// larger than the process's memory limit; and tools/bench/seed_spread.sh over such runs.
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include <gtest/gtest.h>

#include "data/token_stream.h"
#include "data/tokenizer.h"
#include "fixtures.h"
#include "test_util.h"
#include "io/config.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;

using test::corpus;
using test::tiny_config;

// Trains the tiny model once for the tests that need a checkpoint.
class TrainedLanguageModel : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    test::write_file(*dir_ / "text.txt", corpus());
    auto r = test::run_zoo("train --config " + tiny_config(*dir_, {*dir_ / "text.txt"}) + " --output-dir " +
                           (*dir_ / "run"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    checkpoint_ = new std::string(*dir_ / "run/checkpoint-30");
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete checkpoint_;
  }
  static test::TempDir* dir_;
  static std::string* checkpoint_;
};
test::TempDir* TrainedLanguageModel::dir_ = nullptr;
std::string* TrainedLanguageModel::checkpoint_ = nullptr;

TEST_F(TrainedLanguageModel, EvalReportsLossAndPerplexityOnTheValidationSplit) {
  auto r = test::run_zoo("eval --checkpoint " + *checkpoint_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json m = json::parse(r.output.substr(r.output.rfind('{')));
  EXPECT_EQ(m["split"], "valid");
  EXPECT_LT(m["loss"].get<double>(), std::log(20.0)) << "barely better than uniform: " << m.dump();
  EXPECT_NEAR(m["perplexity"].get<double>(), std::exp(m["loss"].get<double>()), 1e-6);
}

TEST_F(TrainedLanguageModel, GenerateContinuesThePromptReproduciblyBySeed) {
  const std::string args = "generate --checkpoint " + *checkpoint_ + " --prompt 'the ' --max-new-tokens 40 ";
  auto a = test::run_zoo(args + "--seed 3"), b = test::run_zoo(args + "--seed 3");
  auto c = test::run_zoo(args + "--seed 4"), greedy = test::run_zoo(args + "--greedy");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_EQ(a.output.rfind("the ", 0), 0u) << a.output;
  EXPECT_EQ(a.output, b.output);
  EXPECT_NE(a.output, c.output);
  ASSERT_EQ(greedy.exit_code, 0) << greedy.output;
  EXPECT_GT(greedy.output.size(), 30u);
  auto beam = test::run_zoo(args + "--beam 3");
  EXPECT_EQ(beam.exit_code, 0) << beam.output;
  auto stop = test::run_zoo(args + "--greedy --stop .");  // the text ends before the first "."
  ASSERT_EQ(stop.exit_code, 0) << stop.output;
  EXPECT_EQ(stop.output.find('.'), std::string::npos) << stop.output;
}

TEST_F(TrainedLanguageModel, APromptLongerThanTheContextKeepsItsEndWithAWarning) {
  std::string prompt;
  for (int i = 0; i < 10; ++i) prompt += "the cat sat. ";  // 130 characters, context 32
  auto r = test::run_zoo("generate --checkpoint " + *checkpoint_ + " --prompt '" + prompt +
                         "' --max-new-tokens 10 --greedy");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("keeping its last 32 tokens"), std::string::npos) << r.output;
}

TEST_F(TrainedLanguageModel, ATokenizerThatIsNotTheCheckpointsIsRefused) {
  const std::string copy = *dir_ / "foreign";
  fs::copy(*checkpoint_, copy, fs::copy_options::recursive);
  test::write_file(*dir_ / "other.txt", "completely different characters: XYZ 0123456789 QWERTY\n");
  data::TokenizerTrainOptions options;
  options.model_type = "char";
  data::train_tokenizer({*dir_ / "other.txt"}, options)->save(copy);  // over the checkpoint's own
  auto r = test::run_zoo("generate --checkpoint " + copy + " --prompt 'the' --max-new-tokens 5");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("char_vocab.json: not the file this checkpoint was saved with"), std::string::npos)
      << r.output;
  // Without the checkpoint's file fingerprints (an older zoo's), the tokenizer's own fingerprint.
  json state = read_json_file(copy + "/trainer_state.json");
  state.erase("asset_fingerprints");
  write_json_file(copy + "/trainer_state.json", state);
  r = test::run_zoo("generate --checkpoint " + copy + " --prompt 'the' --max-new-tokens 5");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("is not the one the model was trained with"), std::string::npos) << r.output;
}

TEST_F(TrainedLanguageModel, ClassifySaysWhichTasksItNeeds) {
  // Texts on stdin, no files: the task decides between text and images, and neither fits.
  auto r = test::run(std::string(ZOO_BINARY) + " classify --checkpoint " + *checkpoint_ + " < /dev/null");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(*checkpoint_ + ": a model for 'language_modeling'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("; zoo classify needs one for 'text_classification' or 'image_classification'"),
            std::string::npos)
      << r.output;
}

TEST(LanguageModeling, EmptyAndNonUtf8TextAreErrorsNamingTheFile) {
  test::TempDir dir;
  test::write_file(dir / "ok.txt", corpus());
  test::write_file(dir / "empty.txt", "");
  std::string bad = corpus().substr(0, 1000);
  bad[777] = '\xff';
  test::write_file(dir / "latin1.txt", bad);
  auto empty = test::run_zoo("train --config " + tiny_config(dir, {dir / "ok.txt", dir / "empty.txt"}) +
                             " --output-dir " + (dir / "a"));
  EXPECT_NE(empty.exit_code, 0);
  EXPECT_NE(empty.output.find(dir / "empty.txt"), std::string::npos) << empty.output;
  EXPECT_NE(empty.output.find("empty"), std::string::npos) << empty.output;
  auto latin = test::run_zoo("train --config " + tiny_config(dir, {dir / "latin1.txt"}) + " --output-dir " +
                             (dir / "b"));
  EXPECT_NE(latin.exit_code, 0);
  EXPECT_NE(latin.output.find(dir / "latin1.txt"), std::string::npos) << latin.output;
  EXPECT_NE(latin.output.find("777"), std::string::npos) << latin.output;
}

TEST(TokenStream, WritesAndReadsBackTheTokensOfSeveralFilesInPieces) {
  test::TempDir dir;
  test::write_file(dir / "a.txt", "héllo\nwörld\n");
  test::write_file(dir / "b.txt", "¡añb\n");
  // One id per byte, so the stream must hold exactly the bytes whatever the piece size.
  auto bytes = [](std::string_view s) {
    std::vector<int64_t> ids;
    for (unsigned char c : s) ids.push_back(c + 1000);  // above 255: two-byte ids
    return ids;
  };
  const int64_t n = data::write_token_stream({dir / "a.txt", dir / "b.txt"}, dir / "s.bin", bytes, 70000,
                                             json{{"k", 1}}, {}, /*chunk_bytes=*/3);
  const std::string all = "héllo\nwörld\n¡añb\n";
  ASSERT_EQ(n, static_cast<int64_t>(all.size()));
  data::TokenStream stream(dir / "s.bin", data::token_width(70000));
  EXPECT_EQ(data::token_width(70000), 4);
  ASSERT_EQ(stream.size(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(stream[i], static_cast<unsigned char>(all[i]) + 1000) << i;
  EXPECT_FALSE(data::current_stream_sidecar(dir / "s.bin", {dir / "a.txt", dir / "b.txt"}, json{{"k", 1}}).is_null());
  EXPECT_TRUE(data::current_stream_sidecar(dir / "s.bin", {dir / "a.txt", dir / "b.txt"}, json{{"k", 2}}).is_null());
  test::write_file(dir / "b.txt", "changed\n");
  EXPECT_TRUE(data::current_stream_sidecar(dir / "s.bin", {dir / "a.txt", dir / "b.txt"}, json{{"k", 1}}).is_null());
}

// The stream is memory-mapped: a 3 GiB stream (sparse: no disk) trains under a 1.5 GB limit
// on the process's data segment (RLIMIT_DATA: heap and private mappings), which reading it
// into memory would exceed.
TEST(LanguageModeling, TrainsOnAStreamLargerThanTheMemoryLimit) {
  test::TempDir dir;
  test::write_file(dir / "chars.txt", "abc def\n");
  data::TokenizerTrainOptions options;
  options.model_type = "char";
  fs::create_directories(dir / "tokenizer");
  data::train_tokenizer({dir / "chars.txt"}, options)->save(dir / "tokenizer");
  const int64_t bytes = int64_t{3} << 30;
  {
    const int fd = ::open((dir / "big.bin").c_str(), O_CREAT | O_WRONLY | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, bytes), 0);
    ::close(fd);
  }
  json config = {{"task", "language_modeling"},
                 {"model", {{"preset", "gpt-nano-char"}, {"n_positions", 256}, {"n_layer", 1}, {"n_embd", 32}}},
                 {"data",
                  {{"tokenizer", dir / "tokenizer"}, {"stream", dir / "big.bin"}, {"validation_fraction", 0.01},
                   {"max_eval_windows", 4}}},
                 {"train",
                  {{"max_steps", 3}, {"per_device_train_batch_size", 4}, {"logging_steps", 1},
                   {"report_to_tensorboard", false}}}};
  write_json_file(dir / "big.json", config);
  const std::string limit = std::to_string(int64_t{1500} << 20);
  auto r = test::run("prlimit --data=" + limit + " " + ZOO_BINARY + " train --config " + (dir / "big.json") +
                     " --output-dir " + (dir / "run"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("done: 3 steps"), std::string::npos) << r.output;
  // The limit is real: reading the stream into memory fails under it.
  auto cat = test::run("prlimit --data=" + limit + " " + ZOO_PYTHON + " -c \"open('" + (dir / "big.bin") +
                       "', 'rb').read()\"");
  EXPECT_NE(cat.exit_code, 0) << cat.output;
}

// tools/bench/seed_spread.sh: one final evaluation per seed, and their mean and spread.
TEST(SeedSpread, ReportsEverySeedsFinalLossWithTheirMeanAndSampleDeviation) {
  test::TempDir dir;
  test::write_file(dir / "text.txt", corpus());
  const std::string config = tiny_config(dir, {dir / "text.txt"}, 6);
  const std::string script = std::string(ZOO_TESTS_DIR) + "/../tools/bench/seed_spread.sh --build " +
                             fs::path(ZOO_BINARY).parent_path().string() + " --config " + config;
  auto r = test::run(script + " --seeds 3,1,2 --jobs 2 --out " + (dir / "spread"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json summary = json::parse(test::read_file(dir / "spread/summary.json"));
  ASSERT_EQ(summary.at("n"), 3) << summary.dump();
  std::vector<double> losses;
  for (const char* seed : {"3", "1", "2"}) {
    // Each figure is that seed's last evaluation, as its own run logged it.
    std::string last_eval;
    std::istringstream lines(test::read_file(dir / ("spread/seed-" + std::string(seed) + "/metrics.jsonl")));
    for (std::string line; std::getline(lines, line);)
      if (line.find("\"type\":\"eval\"") != std::string::npos) last_eval = line;
    ASSERT_FALSE(last_eval.empty()) << seed;
    losses.push_back(summary.at("seeds").at(seed).get<double>());
    EXPECT_NEAR(losses.back(), json::parse(last_eval).at("loss").get<double>(), 1e-6) << seed;
  }
  EXPECT_NE(losses[0], losses[1]);  // the seed reached the runs
  const double mean = (losses[0] + losses[1] + losses[2]) / 3;
  double ss = 0;
  for (double l : losses) ss += (l - mean) * (l - mean);
  EXPECT_NEAR(summary.at("mean").get<double>(), mean, 1e-6);
  EXPECT_NEAR(summary.at("sd").get<double>(), std::sqrt(ss / 2), 1e-6);
  // A seed run alone, on all the cores, gives the figure it gave beside another run.
  r = test::run(script + " --seeds 1 --out " + (dir / "alone"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // (1e-4: two threads may round differently from one; other seeds differ by far more.)
  EXPECT_NEAR(json::parse(test::read_file(dir / "alone/summary.json")).at("mean").get<double>(), losses[1], 1e-4);
  // A run that fails stops the script, naming the run's log and zoo's error.
  r = test::run(script + " --seeds 1 --out " + (dir / "bad") + " -- --set train.no_such_key=1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(dir / "bad/seed-1.log"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("no_such_key"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace zoo
