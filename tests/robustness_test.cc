// Untrusted files and faults (issue 36): a checkpoint is a file people download, so what its
// config names must never make zoo write outside the output it was given.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include "core/input_file.h"
#include "core/paths.h"
#include "data/image_file.h"
#include "fixtures.h"
#include "test_util.h"
#include "train/config.h"
#include "train/safetensors.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;

using test::corpus;

// A trained tiny GPT (10 steps), shared by the tests of this file.
class UntrustedCheckpoint : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    test::write_file(*dir_ / "text.txt", corpus());
    test::tiny_config(*dir_, {*dir_ / "text.txt"}, 10);  // dir/config.json: 10 steps, saved at the end
    auto r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (*dir_ / "run"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static test::TempDir* dir_;
};
test::TempDir* UntrustedCheckpoint::dir_ = nullptr;

// A checkpoint whose config.json names an unrelated file as data.stream, with data.files that
// did not build it, made `zoo eval` rebuild the "stream" over that file (and write a .json
// beside it). Now the file is left as it was, nothing is written beside it, and the stream is
// built in zoo's cache instead (XDG_CACHE_HOME), where eval reads it.
TEST_F(UntrustedCheckpoint, ItsConfigNamingAFileAsTheStreamDoesNotMakeEvalWriteIt) {
  test::TempDir t;
  const std::string victim = t / "precious.txt", cache = t / "cache";
  test::write_file(victim, "do not overwrite me\n");
  const auto before = fs::last_write_time(victim);
  fs::copy(*dir_ / "run/checkpoint-10", t / "ckpt", fs::copy_options::recursive);
  json config = read_json_file(t / "ckpt/config.json");
  config["data"]["stream"] = victim;
  test::write_file(t / "other.txt", corpus() + "the cat ran in the park.\n");
  config["data"]["files"] = {t / "other.txt"};
  write_json_file(t / "ckpt/config.json", config);

  auto r = test::run("XDG_CACHE_HOME=" + cache + " " + ZOO_BINARY + " eval --checkpoint " + (t / "ckpt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"loss\""), std::string::npos) << r.output;
  const std::string after = test::read_file(victim);
  EXPECT_TRUE(after == "do not overwrite me\n") << victim << " was overwritten (" << after.size() << " bytes now)";
  EXPECT_EQ(fs::last_write_time(victim), before);
  EXPECT_FALSE(fs::exists(victim + ".json"));
  EXPECT_TRUE(fs::exists(cache + "/zoo/token-streams")) << r.output;
  // Only the cache was written: the checkpoint and the folder around the victim are as they were.
  for (const auto& e : fs::directory_iterator(t.path()))
    EXPECT_TRUE(e.path().filename() == "precious.txt" || e.path().filename() == "ckpt" ||
                e.path().filename() == "other.txt" || e.path().filename() == "cache")
        << e.path();
  EXPECT_EQ(std::distance(fs::directory_iterator(t / "ckpt"), fs::directory_iterator()),
            std::distance(fs::directory_iterator(*dir_ / "run/checkpoint-10"), fs::directory_iterator()));
}

// A copy of the trained checkpoint in `to` whose model.safetensors has `change` applied.
void damaged_copy(const std::string& from, const std::string& to,
                  const std::function<void(std::map<std::string, torch::Tensor>&)>& change) {
  fs::copy(from, to, fs::copy_options::recursive);
  auto file = safetensors::load(to + "/model.safetensors");
  change(file.tensors);
  std::vector<std::pair<std::string, torch::Tensor>> tensors(file.tensors.begin(), file.tensors.end());
  safetensors::save(to + "/model.safetensors", tensors, file.metadata);
}

// One line, "zoo: error: ..." and exit code 1, naming what the test looks for.
void expect_one_line_error(const test::RunResult& r, const std::string& needle, const std::string& what) {
  EXPECT_EQ(r.exit_code, 1) << what << ": " << r.output;
  EXPECT_NE(r.output.find("zoo: error: "), std::string::npos) << what << ": " << r.output;
  EXPECT_NE(r.output.find(needle), std::string::npos) << what << ": " << r.output;
  EXPECT_EQ(r.output.find("terminate called"), std::string::npos) << what;
}

// NaN or infinite weights passed silently ("loss": null, exit 0; generation printed newlines;
// export wrote them; init_from blamed the learning rate). Every command that loads the weights
// now stops with one line naming the file and the tensor.
TEST_F(UntrustedCheckpoint, NonFiniteWeightsAreRefusedNamingTheTensor) {
  for (float bad : {NAN, INFINITY}) {
    test::TempDir t;
    damaged_copy(*dir_ / "run/checkpoint-10", t / "ckpt", [&](auto& tensors) {
      tensors.at("transformer.h.0.mlp.c_fc.weight").view(-1)[3] = bad;
    });
    const std::string ckpt = t / "ckpt";
    const std::string what = std::isnan(bad) ? "NaN" : "inf";
    expect_one_line_error(test::run_zoo("eval --checkpoint " + ckpt), "transformer.h.0.mlp.c_fc", "eval, " + what);
    expect_one_line_error(test::run_zoo("generate --checkpoint " + ckpt + " --prompt 'the ' --max-new-tokens 5 --greedy"),
                          "transformer.h.0.mlp.c_fc", "generate, " + what);
    expect_one_line_error(test::run_zoo("export --checkpoint " + ckpt + " --out " + (t / "exported")),
                          "transformer.h.0.mlp.c_fc", "export, " + what);
    EXPECT_FALSE(fs::exists(t / "exported/model.safetensors")) << what;
    expect_one_line_error(test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / "ft") +
                                        " --init-from " + ckpt),
                          "transformer.h.0.mlp.c_fc", "init-from, " + what);
  }
}

// A tensor stored as I32 where the model holds F32 was cast silently; only floating-point widths
// convert now (a bf16 copy of the weights still loads).
TEST_F(UntrustedCheckpoint, AnIntegerTensorWhereTheModelHoldsFloatsIsRefused) {
  test::TempDir t;
  damaged_copy(*dir_ / "run/checkpoint-10", t / "int", [](auto& tensors) {
    auto& w = tensors.at("transformer.ln_f.weight");
    w = w.to(torch::kInt32);
  });
  expect_one_line_error(test::run_zoo("eval --checkpoint " + (t / "int")), "transformer.ln_f.weight", "I32");
  damaged_copy(*dir_ / "run/checkpoint-10", t / "bf16", [](auto& tensors) {
    for (auto& [name, tensor] : tensors) tensor = tensor.to(torch::kBFloat16);
  });
  auto r = test::run_zoo("eval --checkpoint " + (t / "bf16"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A write that fails during a checkpoint (a full disk: here RLIMIT_FSIZE, with SIGXFSZ ignored so
// that write() fails instead of the signal killing zoo) aborted with "terminate called after
// throwing an instance of c10::Error" when it hit optimizer.pt. Now: one line naming the file,
// exit 1, no temporary folder left, the previous checkpoint intact, and a resume from it that
// finishes the run.
TEST_F(UntrustedCheckpoint, AFailedCheckpointWriteStopsCleanlyAndKeepsThePreviousOne) {
  test::TempDir t;
  json config = read_json_file(*dir_ / "config.json");
  config["train"]["max_steps"] = 5;
  config["train"]["save_steps"] = 5;
  write_json_file(t / "five.json", config);
  config["train"]["max_steps"] = 10;
  write_json_file(t / "ten.json", config);
  const std::string run = t / "run";
  ASSERT_EQ(test::run_zoo("train --config " + (t / "five.json") + " --output-dir " + run).exit_code, 0);
  const auto weights = fs::file_size(run + "/checkpoint-5/model.safetensors");
  const auto optimizer = fs::file_size(run + "/checkpoint-5/optimizer.pt");
  ASSERT_GT(optimizer, weights + 4096) << "the limit must fall between the two files";
  const auto limit_kb = (weights + optimizer) / 2 / 1024;
  auto r = test::run("bash -c \"trap '' XFSZ; ulimit -f " + std::to_string(limit_kb) + "; " + ZOO_BINARY +
                     " train --config " + (t / "ten.json") + " --output-dir " + run + " --resume\"");
  expect_one_line_error(r, "optimizer.pt: cannot write", "disk full at the checkpoint");
  EXPECT_FALSE(fs::exists(run + "/checkpoint-10"));
  EXPECT_FALSE(fs::exists(run + "/.checkpoint-10.tmp"));
  EXPECT_EQ(fs::file_size(run + "/checkpoint-5/optimizer.pt"), optimizer);
  auto resumed = test::run_zoo("train --config " + (t / "ten.json") + " --output-dir " + run + " --resume");
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(fs::exists(run + "/checkpoint-10/optimizer.pt"));
}

// Unbounded reads: /dev/zero as a text or image input grew to 9 GB; a directory in data.files
// was "an empty file"; /dev/zero in data.files hung. Inputs must be regular files, read up to a
// cap named in the error.
TEST(UnboundedReads, DevicesFoldersAndOversizedFilesAreRefusedByName) {
  test::TempDir t;
  for (const std::string& what : {std::string("/dev/zero"), std::string("/dev/null")}) {
    try {
      read_input_file(what, "text", 1 << 20);
      FAIL() << what << " was read";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
  }
  try {
    check_input_file(t.path().string(), "data.files");
    FAIL() << "a directory passed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is a directory"), std::string::npos) << e.what();
  }
  {  // a sparse 100 MiB file: refused from its size, with the cap and the variable that raises it
    const std::string big = t / "big.txt";
    test::write_file(big, "x");
    fs::resize_file(big, 100 << 20);
    try {
      read_input_file(big, "text", 64 << 20, "set ZOO_MAX_TEXT_MIB to raise it");
      FAIL() << "100 MiB read under a 64 MiB cap";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("64 MiB"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("ZOO_MAX_TEXT_MIB"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(data::load_image("/dev/zero", 1, 0, 0), Error);
}

// A PNG whose header claims 12000 x 12000 grey pixels (a few dozen bytes here; stb_image itself
// refuses only images above 1 GiB) is refused from its header, naming the cap, before anything
// is decoded or allocated.
TEST(UnboundedReads, AnImageClaimingTooManyPixelsIsRefusedFromItsHeader) {
  test::TempDir t;
  auto be32 = [](uint32_t v) { return std::string{char(v >> 24), char(v >> 16), char(v >> 8), char(v)}; };
  const std::string ihdr = "IHDR" + be32(12000) + be32(12000) + std::string{8, 0, 0, 0, 0};
  const std::string png = std::string("\x89PNG\r\n\x1a\n", 8) + be32(13) + ihdr + be32(0) /* CRC, unchecked */;
  test::write_file(t / "huge.png", png);
  try {
    data::load_image(t / "huge.png", 1, 0, 0);
    FAIL() << "a 144-megapixel image was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("12000x12000 pixels, above the cap of 100 megapixels"), std::string::npos)
        << e.what();
  }
}

// A language model's data.files: /dev/zero and a folder stop zoo train at once, naming them.
TEST(UnboundedReads, DataFilesMustBeRegularFiles) {
  test::TempDir t;
  fs::create_directories(t / "folder");
  for (const std::string& bad : {std::string("/dev/zero"), t / "folder"}) {
    const json config = {{"task", "language_modeling"},
                         {"model", {{"preset", "gpt-nano-char"}, {"n_positions", 32}, {"n_layer", 1}, {"n_embd", 16}}},
                         {"data", {{"files", {bad}}, {"tokenizer", "char"}}},
                         {"train", {{"max_steps", 2}, {"report_to_tensorboard", false}}}};
    write_json_file(t / "c.json", config);
    auto r = test::run("timeout 60 " + std::string(ZOO_BINARY) + " train --config " + (t / "c.json") +
                       " --output-dir " + (t / "out"));
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.output;
    EXPECT_NE(r.output.find("data.files " + bad + ": "), std::string::npos) << r.output;
  }
}

// CLI11's parse and range errors exited 105 without "zoo: error:"; the README promises exit
// code 1 and the prefix for every error. --help and --version still exit 0.
TEST(CommandLine, ParseErrorsExitOneWithThePrefix) {
  for (const std::string& args : {std::string("train --config"), std::string("train --no-such-option 3"),
                                  std::string("generate --checkpoint x --max-new-tokens abc"), std::string("frobnicate")}) {
    auto r = test::run_zoo(args);
    EXPECT_EQ(r.exit_code, 1) << args << ": " << r.output;
    EXPECT_EQ(r.output.rfind("zoo: error: ", 0), 0u) << args << ": " << r.output;
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << args << ": " << r.output;
  }
  EXPECT_EQ(test::run_zoo("--help").exit_code, 0);
  EXPECT_EQ(test::run_zoo("train --help").exit_code, 0);
  EXPECT_EQ(test::run_zoo("--version").exit_code, 0);
}

// `zoo export --out` pointed at the checkpoint itself replaced its config.json with Hugging
// Face's (and the checkpoint no longer loaded): refused, nothing written.
TEST_F(UntrustedCheckpoint, ExportIntoTheCheckpointItselfIsRefused) {
  test::TempDir t;
  fs::copy(*dir_ / "run/checkpoint-10", t / "ckpt", fs::copy_options::recursive);
  const std::string config = test::read_file(t / "ckpt/config.json");
  for (const std::string& out : {t / "ckpt", t / "ckpt/", t.path().string()}) {
    expect_one_line_error(test::run_zoo("export --checkpoint " + (t / "ckpt") + " --out " + out), "give another directory",
                          "export into " + out);
    EXPECT_EQ(test::read_file(t / "ckpt/config.json"), config) << out;
  }
  auto r = test::run_zoo("eval --checkpoint " + (t / "ckpt"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// max_steps=0 with no epochs exited 0 with "last checkpoint " and nothing written.
TEST_F(UntrustedCheckpoint, ARunOfZeroStepsIsRefused) {
  test::TempDir t;
  auto r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / "out") +
                         " --set train.max_steps=0 --set train.num_train_epochs=0");
  expect_one_line_error(r, "nothing to train", "zero steps");
}

// path_inside: the rule behind it. A symbolic link inside the folder that points out of it is
// outside; ".." does not escape by spelling.
TEST(Paths, InsideFollowsLinksAndDotDot) {
  test::TempDir t;
  fs::create_directories(t / "out/sub");
  fs::create_symlink(t.path(), t / "out/escape");
  EXPECT_TRUE(path_inside(t / "out/sub/file", t / "out"));
  EXPECT_TRUE(path_inside(t / "out", t / "out"));
  EXPECT_TRUE(path_inside(t / "out/new/deeper/file", t / "out/"));
  EXPECT_FALSE(path_inside(t / "out/../file", t / "out"));
  EXPECT_FALSE(path_inside(t / "out/escape/file", t / "out"));
  EXPECT_FALSE(path_inside(t / "outside", t / "out"));
  EXPECT_FALSE(path_inside("/etc/passwd", t / "out"));
}

}  // namespace
}  // namespace zoo
