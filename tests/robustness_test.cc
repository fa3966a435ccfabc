// Untrusted files and faults (issue 36): a checkpoint is a file people download, so what its
// config names must never make zoo write outside the output it was given.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <functional>

#include <gtest/gtest.h>

#include <sys/resource.h>

#include <chrono>
#include <cstring>
#include <set>
#include <tuple>

#include "core/input_file.h"
#include "core/paths.h"
#include "data/image_file.h"
#include "fixtures.h"
#include "review_fixtures.h"
#include "translation_fixtures.h"
#include "distributed_util.h"
#include "test_util.h"
#include "data/pairs.h"
#include "models/model_size.h"
#include "models/registry.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "train/distributed.h"
#include "io/safetensors.h"

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

// ---------------------------------------------------------------------------------------
// Hostile checkpoints: each damage to a copy of the trained checkpoint, through `zoo eval`,
// gives one line naming the file (and key), exit 1, and writes nothing anywhere.

struct Damage {
  std::string what;
  std::function<void(const std::string& ckpt)> apply;
  std::string needle;  // in the message; "CKPT" stands for the checkpoint's path
};

json read_config(const std::string& ckpt) { return read_json_file(ckpt + "/config.json"); }
void edit_config(const std::string& ckpt, const std::function<void(json&)>& edit) {
  json c = read_config(ckpt);
  edit(c);
  write_json_file(ckpt + "/config.json", c);
}

std::vector<Damage> damages() {
  auto tensors = [](const std::function<void(std::map<std::string, torch::Tensor>&)>& change) {
    return [change](const std::string& ckpt) {
      auto file = safetensors::load(ckpt + "/model.safetensors");
      change(file.tensors);
      std::vector<std::pair<std::string, torch::Tensor>> list(file.tensors.begin(), file.tensors.end());
      safetensors::save(ckpt + "/model.safetensors", list, file.metadata);
    };
  };
  auto replace_with_link = [](const std::string& file, const std::string& target) {
    return [=](const std::string& ckpt) {
      fs::remove(ckpt + "/" + file);
      fs::create_symlink(target, ckpt + "/" + file);
    };
  };
  return {
      {"weights cut in half",
       [](const std::string& ckpt) {
         const auto size = fs::file_size(ckpt + "/model.safetensors");
         fs::resize_file(ckpt + "/model.safetensors", size / 2);
       },
       "CKPT/model.safetensors: "},
      {"header length of 2^60",
       [](const std::string& ckpt) {
         std::string bytes = test::read_file(ckpt + "/model.safetensors");
         const uint64_t huge = uint64_t{1} << 60;
         std::memcpy(bytes.data(), &huge, 8);
         test::write_file(ckpt + "/model.safetensors", bytes);
       },
       "CKPT/model.safetensors: "},
      {"weights are /dev/zero", replace_with_link("model.safetensors", "/dev/zero"), "not a regular file"},
      {"weights are a folder",
       [](const std::string& ckpt) {
         fs::remove(ckpt + "/model.safetensors");
         fs::create_directories(ckpt + "/model.safetensors");
       },
       "CKPT/model.safetensors"},
      {"a tensor missing", tensors([](auto& t) { t.erase("transformer.h.0.attn.c_attn.weight"); }),
       "transformer.h.0.attn.c_attn.weight"},
      {"a tensor of the wrong shape",
       tensors([](auto& t) { t["transformer.ln_f.weight"] = torch::ones({7}); }), "transformer.ln_f.weight"},
      {"config.json not JSON", [](const std::string& ckpt) { test::write_file(ckpt + "/config.json", "{\"model\": [1,\n"); },
       "CKPT/config.json:"},
      {"config.json is /dev/zero", replace_with_link("config.json", "/dev/zero"), "not a regular file"},
      {"config.json missing", [](const std::string& ckpt) { fs::remove(ckpt + "/config.json"); }, "no config.json"},
      {"config.json: a field of the wrong type",
       [](const std::string& ckpt) { edit_config(ckpt, [](json& c) { c["model"]["n_layer"] = "two"; }); },
       "model.n_layer"},
      {"config.json: an unknown model_type",
       [](const std::string& ckpt) { edit_config(ckpt, [](json& c) { c["model"]["model_type"] = "gpt3"; }); },
       "unknown model_type 'gpt3'"},
      {"config.json: 10^8 layers (memory budget)",
       [](const std::string& ckpt) { edit_config(ckpt, [](json& c) { c["model"]["n_layer"] = 100000000; }); },
       "model.n_layer=100000000"},
      {"config.json: a number out of range",
       [](const std::string& ckpt) {
         std::string text = test::read_file(ckpt + "/config.json");
         text.replace(text.find("\"n_layer\": 2"), 12, "\"n_layer\": 1e999");
         test::write_file(ckpt + "/config.json", text);
       },
       "(the value of \"n_layer\")"},
      {"tokenizer vocabulary shuffled",
       [](const std::string& ckpt) {
         json v = read_json_file(ckpt + "/char_vocab.json");
         std::string chars = v["chars"];
         std::swap(chars[1], chars[2]);
         v["chars"] = chars;
         write_json_file(ckpt + "/char_vocab.json", v);
       },
       "CKPT/char_vocab.json: not the file this checkpoint was saved with"},
      {"tokenizer vocabulary missing", [](const std::string& ckpt) { fs::remove(ckpt + "/char_vocab.json"); },
       "char_vocab.json"},
      {"NaN in a bias", tensors([](auto& t) { t.at("transformer.h.1.attn.c_proj.bias").view(-1)[0] = NAN; }),
       "transformer.h.1.attn.c_proj.bias"},
  };
}

std::vector<std::string> listing(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::recursive_directory_iterator(dir)) names.push_back(e.path().string());
  std::sort(names.begin(), names.end());
  return names;
}

TEST_F(UntrustedCheckpoint, EveryDamageIsOneLineNamingTheFileAndNothingIsWritten) {
  ASSERT_EQ(read_config(*dir_ / "run/checkpoint-10")["model"]["n_layer"], 2) << "the damages assume 2 layers";
  for (const auto& d : damages()) {
    SCOPED_TRACE(d.what);
    test::TempDir t;
    const std::string ckpt = t / "ckpt";
    fs::copy(*dir_ / "run/checkpoint-10", ckpt, fs::copy_options::recursive);
    d.apply(ckpt);
    const auto before = listing(t.path());
    auto r = test::run("XDG_CACHE_HOME=" + (t / "cache") + " timeout 60 " + ZOO_BINARY + " eval --checkpoint " + ckpt);
    std::string needle = d.needle;
    if (needle.find("CKPT") != std::string::npos) needle.replace(needle.find("CKPT"), 4, ckpt);
    expect_one_line_error(r, needle, d.what);
    EXPECT_EQ(std::count(r.output.begin(), r.output.end(), '\n'), 1) << r.output;
    EXPECT_EQ(listing(t.path()), before) << "files were written";
  }
}

// ---------------------------------------------------------------------------------------
// Broken configs: one line naming the file, line or key; exit 1; no output directory made.

TEST(BrokenConfigs, AreOneLineNamingTheKey) {
  test::TempDir t;
  test::write_file(t / "text.txt", corpus());
  test::tiny_config(t, {t / "text.txt"}, 2);
  const std::string good = test::read_file(t / "config.json");
  struct Case {
    std::string what, text, set, needle;
  };
  json with_long_value = json::parse(good);
  with_long_value["model"]["activation_function"] = std::string(5 << 20, 'x');
  const std::string long_value_config = with_long_value.dump();
  const std::vector<Case> cases = {
      {"not JSON", "{\"task\": \"language_modeling\",\n  \"model\": }", "", "c.json:2:"},
      {"not an object", "[1, 2]", "", "must be a JSON object"},
      {"an unknown key", good, "train.learning_rat=0.1", "did you mean 'learning_rate'"},
      {"a wrong type", good, "train.max_steps=ten", "train.max_steps"},
      {"out of range", good, "train.learning_rate=-1", "train.learning_rate"},
      {"a number overflow in the file",
       "{\"task\": \"language_modeling\", \"train\": {\"learning_rate\": 1e999}}", "",
       "c.json:1:58: JSON number 1e999 is out of range (the value of \"learning_rate\")"},
      {"a number overflow in --set", good, "train.learning_rate=1e999", "--set train.learning_rate: the number 1e999"},
      {"a 5 MB value", long_value_config, "", "model.activation_function"},
      {"an unknown task", good, "task=language_modelling", "language_modeling"},
      {"an unknown section", good, "trian.max_steps=3", "did you mean 'train'"},
      {"block_size beyond n_positions", good, "data.block_size=100000", "data.block_size"},
      {"zero steps", good, "train.max_steps=0", "nothing to train"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    test::write_file(t / "c.json", c.text);
    const std::string out = t / "out";
    auto r = test::run_zoo("train --config " + (t / "c.json") + " --output-dir " + out +
                           (c.set.empty() ? "" : " --set '" + c.set + "'") +
                           (c.what == "zero steps" ? " --set train.num_train_epochs=0" : ""));
    expect_one_line_error(r, c.needle, c.what);
    EXPECT_LT(r.output.size(), 2000u) << "a long value is cut";
    EXPECT_FALSE(fs::exists(out + "/checkpoint-2")) << c.what;
    fs::remove_all(out);
  }
  for (const std::string& config : {std::string("/dev/zero"), t.path().string()}) {
    auto r = test::run_zoo("train --config " + config);
    expect_one_line_error(r, config, "config " + config);
  }
}

// ---------------------------------------------------------------------------------------
// The memory budget: a config that cannot fit is refused from its figures before anything is
// allocated (this test's children stay under 1 GB), naming the keys and the way past it.

double children_peak_rss_mib() {
  rusage usage{};
  getrusage(RUSAGE_CHILDREN, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

TEST(MemoryBudget, AConfigThatCannotFitIsRefusedBeforeAllocation) {
  test::TempDir t;
  test::write_file(t / "text.txt", corpus());
  test::tiny_config(t, {t / "text.txt"}, 2);
  for (const std::string& set : {std::string("model.n_layer=100000000"),
                                 std::string("train.per_device_train_batch_size=100000000"),
                                 std::string("model.n_embd=1000000")}) {
    auto r = test::run("timeout 60 " + std::string(ZOO_BINARY) + " train --config " + (t / "config.json") +
                       " --output-dir " + (t / "out") + " --set " + set);
    expect_one_line_error(r, set.substr(set.find('.') + 1), set);
    EXPECT_NE(r.output.find("train.check_memory=false"), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(" is available on cpu"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(t / "out/config.json")) << set;
  }
  EXPECT_LT(children_peak_rss_mib(), 1024) << "the refusals came after allocating";
  // Past the budget, LibTorch's allocator refusal is named by the model's keys too.
  auto r = test::run("timeout 60 " + std::string(ZOO_BINARY) + " train --config " + (t / "config.json") +
                     " --output-dir " + (t / "out") + " --set model.n_embd=1000000 --set train.check_memory=false");
  expect_one_line_error(r, "model.n_embd=1000000", "the allocator's refusal");
  EXPECT_NE(r.output.find("does not fit in memory"), std::string::npos) << r.output;
}

// The parameter count behind the budget, from the config alone, is the built model's for every
// family (within 1%: heads the estimate does not know exactly).
TEST(MemoryBudget, ParameterCountsFromTheConfigMatchTheBuiltModels) {
  const std::vector<json> sections = {
      {{"preset", "gpt2"}},
      {{"preset", "gpt-shakespeare-char"}, {"vocab_size", 65}},
      {{"preset", "bert-small-imdb"}, {"vocab_size", 30522}},
      {{"preset", "vit-base-patch16-224"}},
      {{"preset", "vit-tiny"}},
      {{"preset", "transformer-small"}, {"source_vocab_size", 3000}, {"target_vocab_size", 5000}, {"bos_id", 1}, {"eos_id", 2}},
      {{"preset", "seq2seq-bahdanau-doc000"}, {"source_vocab_size", 3000}, {"target_vocab_size", 5000}, {"bos_id", 1}, {"eos_id", 2}},
  };
  for (const auto& s : sections) {
    const json section = models::resolve_model_config(s);
    auto model = models::build_model(section);
    std::set<const void*> seen;
    int64_t built = 0;
    for (const auto& p : model->parameters())
      if (seen.insert(p.data_ptr()).second) built += p.numel();
    const int64_t estimated = models::model_size(section).parameters;
    EXPECT_NEAR(static_cast<double>(estimated) / static_cast<double>(built), 1.0, 0.01)
        << s.dump() << ": estimated " << estimated << ", built " << built;
  }
}

// ---------------------------------------------------------------------------------------
// Faults while training: SIGTERM writes a checkpoint that resumes (and exits 143, not 0, so that
// the unfinished run is not taken for a finished one); kill -9 never leaves a half
// checkpoint (the newest complete one loads and resumes).

TEST(Faults, SigtermCheckpointsAndKillNineLeavesTheNewestCompleteCheckpoint) {
  test::TempDir t;
  test::write_file(t / "text.txt", corpus());
  test::tiny_config(t, {t / "text.txt"}, 100000);
  json c = read_json_file(t / "config.json");
  c["train"]["save_steps"] = 7;
  c["train"]["logging_steps"] = 1;
  write_json_file(t / "config.json", c);
  for (const std::string& signal : {std::string("TERM"), std::string("KILL")}) {
    SCOPED_TRACE(signal);
    const std::string out = t / ("run-" + signal);
    const std::string script = std::string(ZOO_BINARY) + " train --config " + (t / "config.json") + " --output-dir " +
                               out + " > " + (t / (signal + ".log")) + " 2>&1 & p=$!; for i in $(seq 600); do " +
                               "[ -d " + out + "/checkpoint-21 ] && break; sleep 0.05; done; kill -" + signal +
                               " $p; wait $p; echo rc=$?";
    auto r = test::run("bash -c '" + script + "'");
    const std::string log = test::read_file(t / (signal + ".log"));
    if (signal == "TERM") {
      EXPECT_NE(r.output.find("rc=143"), std::string::npos) << r.output << log;  // 128 + SIGTERM
      EXPECT_NE(log.find("interrupted at step"), std::string::npos) << log;
    } else {
      EXPECT_NE(r.output.find("rc=137"), std::string::npos) << r.output << log;
    }
    const std::string newest = latest_checkpoint(out);
    ASSERT_FALSE(newest.empty()) << log;
    auto e = test::run_zoo("eval --checkpoint " + newest);
    EXPECT_EQ(e.exit_code, 0) << newest << ": " << e.output;
    const int64_t step = std::stoll(fs::path(newest).filename().string().substr(11));
    auto resumed = test::run_zoo("train --config " + (t / "config.json") + " --output-dir " + out +
                                 " --resume --set train.max_steps=" + std::to_string(step + 2));
    EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
    EXPECT_TRUE(fs::exists(out + "/checkpoint-" + std::to_string(step + 2))) << resumed.output;
  }
}

// ---------------------------------------------------------------------------------------
// Data faults.

// A Tatoeba line with a tab more shifted its columns silently: strict mode refuses it naming
// the line; the default skips it, counted and named.
TEST(DataFaults, APairLineWithAnExtraTabIsNamed) {
  test::TempDir t;
  const std::string path = t / "cmn.txt";
  test::write_file(path, "Hi.\t你好。\tCC-BY 2.0\nRun!\tnote\t跑！\tCC-BY 2.0\nGo.\t走。\n");  // line 2: "note" would be its Chinese
  data::PairReadReport report;
  try {
    data::read_pair_file(path, /*strict=*/true, report);
    FAIL() << "strict mode read a line of 4 columns";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ":2: 4 tab-separated columns"), std::string::npos) << e.what();
  }
  const auto pairs = data::read_pair_file(path, /*strict=*/false, report);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[1].target, "Go.");
  EXPECT_EQ(report.malformed, 1);
  ASSERT_EQ(report.messages.size(), 1u);
  EXPECT_NE(report.messages[0].find(path + ":2:"), std::string::npos) << report.messages[0];
}

// ---------------------------------------------------------------------------------------
// Data parallel faults, said within seconds instead of a silent wait for train.ddp_timeout.

int port(int offset) { return test::port(4000, offset); }  // below the ephemeral range (32768-60999)

// Starts one zoo per (RANK, WORLD_SIZE) at once; returns each one's output, in order.
std::vector<std::string> start_ranks(const test::TempDir& t, const std::vector<std::pair<int, int>>& ranks, int port_offset,
                                     const std::string& extra = "") {
  std::string script;
  for (size_t i = 0; i < ranks.size(); ++i)
    script += cat("OMP_NUM_THREADS=1 RANK=", ranks[i].first, " WORLD_SIZE=", ranks[i].second,
                  " MASTER_ADDR=127.0.0.1 MASTER_PORT=", port(port_offset), " timeout 60 ", ZOO_BINARY,
                  " train --device cpu --config ", t / "config.json", " --output-dir ", t / cat("out", port_offset),
                  " --set train.ddp_timeout=8 ", extra, " > ", t / cat("rank", i, ".log"), " 2>&1 & ",
                  i == 0 ? "sleep 0.5; " : "");
  test::run("bash -c '" + script + "wait'");
  std::vector<std::string> logs;
  for (size_t i = 0; i < ranks.size(); ++i) logs.push_back(test::read_file(t / cat("rank", i, ".log")));
  return logs;
}

TEST(DataParallelFaults, MismatchedWorldSizesAndRanksAreNamedWithinSeconds) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";
  test::TempDir t;
  test::write_file(t / "text.txt", corpus());
  test::tiny_config(t, {t / "text.txt"}, 4);
  {  // WORLD_SIZE=3, two processes: within seconds each says which rank it awaits
    const auto start = std::chrono::steady_clock::now();
    auto logs = start_ranks(t, {{0, 3}, {1, 3}}, 0);
    EXPECT_NE(logs[0].find("2 of WORLD_SIZE=3 processes have joined; waiting for rank 2 (5 s"), std::string::npos) << logs[0];
    EXPECT_NE(logs[0].find("zoo: error: rank 0 of 3: 2 of WORLD_SIZE=3 processes have joined; waiting for rank 2 for "
                           "train.ddp_timeout=8 s"),
              std::string::npos)
        << logs[0];
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 30);
  }
  {  // two WORLD_SIZEs
    auto logs = start_ranks(t, {{0, 2}, {1, 3}}, 1);
    // Whichever process reads the other's first names the mismatch; the other stops with it.
    const bool one = logs[1].find("rank 1 of 3: the process of rank 0 was started with WORLD_SIZE=2 and this one with "
                                  "WORLD_SIZE=3") != std::string::npos;
    const bool zero = logs[0].find("rank 0 of 2: the process of rank 1 was started with WORLD_SIZE=3 and this one with "
                                   "WORLD_SIZE=2") != std::string::npos;
    EXPECT_TRUE(one || zero) << logs[0] << logs[1];
    EXPECT_NE(logs[0].find("zoo: error: rank 0 of 2: "), std::string::npos) << logs[0];
    EXPECT_NE(logs[1].find("zoo: error: rank 1 of 3: "), std::string::npos) << logs[1];
  }
  {  // two processes with RANK=1
    auto logs = start_ranks(t, {{0, 3}, {1, 3}, {1, 3}}, 2);
    EXPECT_NE((logs[1] + logs[2]).find("two processes were started with RANK=1"), std::string::npos) << logs[1] << logs[2];
  }
  {  // two processes with RANK=0: the second cannot serve the rendezvous
    auto logs = start_ranks(t, {{0, 2}, {0, 2}}, 3);
    EXPECT_NE(logs[1].find("zoo: error: rank 0 of 2: MASTER_PORT=" + std::to_string(port(3)) + " is in use"),
              std::string::npos)
        << logs[1];
  }
}

// A checkpoint of 2 processes resumed by 1 halved the global batch without a word.
TEST(DataParallelFaults, ResumingWithFewerProcessesWarnsOfTheGlobalBatch) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";
  test::TempDir t;
  test::write_file(t / "text.txt", corpus());
  test::tiny_config(t, {t / "text.txt"}, 2);
  auto logs = start_ranks(t, {{0, 2}, {1, 2}}, 4);
  const std::string out = t / "out4";
  ASSERT_TRUE(fs::exists(out + "/checkpoint-2")) << logs[0] << logs[1];
  auto r = test::run_zoo("train --device cpu --config " + (t / "config.json") + " --output-dir " + out +
                         " --resume --set train.max_steps=3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("was saved by 2 process(es) with a global batch of "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("this run has 1 with a global batch of "), std::string::npos) << r.output;
}

// ---- Issue 66 §5: files that stand for command-line options, prompt files -------------------

// generation_config.json's num_beams 10^9 reached the allocator (7.8 GB, then a raw error) and
// max_new_tokens 10^12 was taken; each value now meets its option's limits, naming the file.
TEST_F(UntrustedCheckpoint, GenerationConfigValuesMeetTheCommandLinesLimits) {
  test::TempDir t;
  fs::copy(*dir_ / "run/checkpoint-10", t / "ckpt", fs::copy_options::recursive);
  for (const auto& [key, value, option] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"num_beams", "1000000000", "--beam"},
           {"max_new_tokens", "1000000000000", "--max-new-tokens"},
           {"top_p", "2", "--top-p"},
           {"temperature", "-1", "--temperature"}}) {
    test::write_file(t / "ckpt/generation_config.json", "{\"" + key + "\": " + value + "}\n");
    const auto r = test::run("timeout 60 " + std::string(ZOO_BINARY) + " generate --checkpoint " + (t / "ckpt") +
                             " --prompt 'the '");
    expect_one_line_error(r, (t / "ckpt/generation_config.json") + ": " + key + " " + value + " is out of range", key);
    EXPECT_NE(r.output.find("(as " + option + ")"), std::string::npos) << r.output;
  }
  // The command line's own value wins over the file's.
  const auto r = test::run(std::string(ZOO_BINARY) + " generate --checkpoint " + (t / "ckpt") +
                           " --prompt 'the ' --temperature 0.5 --max-new-tokens 3");
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// A blank line of a --prompts file failed the whole run without naming the file or the line;
// --prompt-file /dev/zero grew without bound.
TEST_F(UntrustedCheckpoint, PromptFilesAreNamedByLineAndCapped) {
  test::TempDir t;
  test::write_file(t / "prompts.txt", "the cat\n\na dog\n");
  auto r = test::run_zoo("generate --checkpoint " + (*dir_ / "run/checkpoint-10") + " --prompts " + (t / "prompts.txt"));
  expect_one_line_error(r, "--prompts " + (t / "prompts.txt") + ":2: a blank line", "blank line");
  r = test::run("timeout 30 " + std::string(ZOO_BINARY) + " generate --checkpoint " + (*dir_ / "run/checkpoint-10") +
                " --prompt-file /dev/zero");
  expect_one_line_error(r, "/dev/zero: is not a regular file", "--prompt-file /dev/zero");
  r = test::run("timeout 30 " + std::string(ZOO_BINARY) + " generate --checkpoint " + (*dir_ / "run/checkpoint-10") +
                " --prompts /dev/zero");
  expect_one_line_error(r, "/dev/zero: is not a regular file", "--prompts /dev/zero");
}


// ---- Issue 66 §5: run state, resume, data-parallel and LoRA --------------------------------

// A trained tiny GPT (10 steps) and a LoRA run on it (10 steps), shared by the RunState tests.
class RunStateRuns : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    test::write_file(*dir_ / "text.txt", corpus());
    test::tiny_config(*dir_, {*dir_ / "text.txt"}, 10);
    auto r = test::run_zoo("train --config " + config() + " --output-dir " + (*dir_ / "run"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = test::run_zoo("train --config " + config() + " --output-dir " + (*dir_ / "lora") + " --init-from " +
                      (*dir_ / "run/checkpoint-10") + " --set 'train.lora={\"r\": 2, \"alpha\": 4}'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string config() { return *dir_ / "config.json"; }
  // A copy of the output directory `name` in `t`, elsewhere than where it was trained.
  static std::string copy_run(const test::TempDir& t, const std::string& name) {
    fs::copy(*dir_ / name, t / name, fs::copy_options::recursive);
    return t / name;
  }
  static test::TempDir* dir_;
};
test::TempDir* RunStateRuns::dir_ = nullptr;

// A failed --resume (a width the run's weights do not have) rewrote the run's config.json.
TEST_F(RunStateRuns, AFailedResumeLeavesTheRunsConfigAsItWas) {
  test::TempDir t;
  const std::string run = copy_run(t, "run");
  const std::string before = test::read_file(run + "/config.json");
  const auto r = test::run_zoo("train --config " + config() + " --output-dir " + run +
                               " --resume --set model.n_embd=64 --set train.max_steps=12");
  expect_one_line_error(r, "transformer.wte.weight", "a resume with another model.n_embd");
  EXPECT_EQ(test::read_file(run + "/config.json"), before) << "the failed command changed the run's record";
}

// trainer_state.json is an input: global_step -5 resumed "at step -5" with a negative learning
// rate, and a best_model_checkpoint outside the run was printed as the best.
TEST_F(RunStateRuns, TrainerStateValuesAreRangeChecked) {
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{{"global_step", -5},
                                                                           {"batch_in_epoch", "ten"},
                                                                           {"best_metric", "low"},
                                                                           {"best_model_checkpoint", "/etc/passwd"},
                                                                           {"best_model_checkpoint", "checkpoint-99"}}) {
    SCOPED_TRACE(key + " " + value.dump());
    test::TempDir t;
    const std::string run = copy_run(t, "run"), state = run + "/checkpoint-10/trainer_state.json";
    json st = read_json_file(state);
    st[key] = value;
    write_json_file(state, st);
    const auto r = test::run_zoo("train --config " + config() + " --output-dir " + run + " --resume --set train.max_steps=12");
    expect_one_line_error(r, state + ": " + key + " " + value.dump() + " is not ", key);
    EXPECT_NE(r.output.find("put back the trainer_state.json this checkpoint was saved with"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(run + "/checkpoint-12"));
  }
  // A moved run keeps its best checkpoint, inside the directory it was moved to.
  test::TempDir t;
  const std::string run = copy_run(t, "run"), state = run + "/checkpoint-10/trainer_state.json";
  json st = read_json_file(state);
  st["best_metric"] = -1.0;  // no loss beats it: checkpoint-10 stays the best
  write_json_file(state, st);
  const auto r = test::run_zoo("train --config " + config() + " --output-dir " + run + " --resume --set train.max_steps=12");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("; best (loss=-1) " + run + "/checkpoint-10"), std::string::npos) << r.output;
}

// data.validation_size=0 (ViT) and data.validation_fraction=0 (GPT) failed after training, at
// the first evaluation; now before the first step, naming the key.
TEST(RunState, NoValidationSplitIsRefusedBeforeTheFirstStep) {
  test::TempDir t;
  test::write_file(t / "text.txt", corpus());
  test::tiny_config(t, {t / "text.txt"}, 4);
  fs::create_directories(t / "mnist");
  test::write_tiny_mnist(t / "mnist", 64, 16);
  test::write_file(t / "vit.json", test::tiny_vit_config(t / "mnist"));
  for (const auto& [config, key] : std::vector<std::pair<std::string, std::string>>{
           {t / "config.json", "validation_fraction"}, {t / "vit.json", "validation_size"}}) {
    const std::string out = t / key;
    const auto r = test::run_zoo("train --config " + config + " --output-dir " + out + " --set data." + key + "=0");
    expect_one_line_error(r, "config: data." + key + "=0", key);
    EXPECT_NE(r.output.find("holds out no validation examples; training evaluates on them"), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(out + "/metrics.jsonl")) << key << ": refused after training had started";
  }
}

// Two processes started with RANK=0: the second stopped at once (its MASTER_PORT taken), the
// first waited for rank 1 for the whole train.ddp_timeout. Now the second stops the first too.
TEST(RunState, TwoProcessesWithRankZeroBothStopAtOnce) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";
  test::TempDir t;
  test::write_file(t / "text.txt", corpus());
  test::tiny_config(t, {t / "text.txt"}, 4);
  const auto logs = start_ranks(t, {{0, 2}, {0, 2}}, 5);
  const std::string both = logs[0] + logs[1];
  // Whichever started its rendezvous first is the one stopped through it.
  EXPECT_NE(both.find("zoo: error: rank 0 of 2: MASTER_PORT=" + std::to_string(port(5)) +
                      " is in use by the rendezvous of another process started with RANK=0; give each process its own RANK"),
            std::string::npos)
      << both;
  EXPECT_NE(both.find("zoo: error: rank 0 of 2: stopped: another process failed to join: rank 0 of 2: MASTER_PORT="),
            std::string::npos)
      << both;
  EXPECT_EQ(both.find("waiting for rank 1 for train.ddp_timeout"), std::string::npos) << both;
}

// A shuffled vocab.txt was taken by --init-from once trainer_state.json was removed, though the
// checkpoint's config.json still records the tokenizer's fingerprint.
TEST(RunState, InitFromChecksTheConfigsTokenizerFingerprintWithoutTrainerState) {
  test::TempDir dir;
  const std::string root = test::write_reviews(dir), cfg = dir / "cls.json";
  test::write_file(cfg, test::classifier_config(root, dir / "vocab.txt"));
  auto r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "run") +
                         " --set train.max_steps=2 --set train.save_steps=2 --set train.eval_steps=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string ckpt = dir / "run/checkpoint-2";
  auto lines = test::lines_of(test::read_file(ckpt + "/vocab.txt"));
  std::swap(lines[6], lines[7]);  // two words trade ids; the size stays
  std::string shuffled;
  for (const auto& l : lines) shuffled += l + "\n";
  test::write_file(ckpt + "/vocab.txt", shuffled);
  fs::remove(ckpt + "/trainer_state.json");
  // data.vocab empty: the fine-tuning reads the checkpoint's vocab.txt.
  r = test::run_zoo("train --config " + cfg + " --output-dir " + (dir / "ft") + " --init-from " + ckpt +
                    " --set data.vocab= --set train.max_steps=2");
  expect_one_line_error(r, ckpt + "/vocab.txt: this tokenizer (basic_english, ", "--init-from");
  EXPECT_FALSE(fs::exists(dir / "ft/checkpoint-2"));
}

// LoRA: adapter_config.json's r 10^12 was reported as a negative overflowed number, lora_alpha
// 10^308 was blamed on the learning rate, a modules_to_save naming no module trained on (exit
// 0), and resuming a LoRA run without train.lora spoke of "parameter groups".
TEST_F(RunStateRuns, LoraFilesAndResumesAreNamed) {
  for (const auto& [key, value, needle] : std::vector<std::tuple<std::string, json, std::string>>{
           {"r", 1000000000000, "train.lora.r (1000000000000) exceeds the rank of"},
           {"lora_alpha", 1e308, "lora_alpha 1e+308 is not accepted (train.lora.alpha must be"},
           {"modules_to_save", json::array({"nonexistent"}), "train.lora.modules_to_save names 'nonexistent', which is no module"}}) {
    SCOPED_TRACE(key);
    test::TempDir t;
    const std::string adapter = t / "adapter";
    fs::copy(*dir_ / "lora/checkpoint-10", adapter, fs::copy_options::recursive);
    json c = read_json_file(adapter + "/adapter_config.json");
    c[key] = value;
    write_json_file(adapter + "/adapter_config.json", c);
    const auto r = test::run_zoo("train --config " + config() + " --output-dir " + (t / "out") + " --init-from " + adapter);
    expect_one_line_error(r, adapter + "/adapter_config.json: ", key);
    EXPECT_NE(r.output.find(needle), std::string::npos) << r.output;
    EXPECT_FALSE(fs::exists(t / "out/checkpoint-10"));
  }
  test::TempDir t;
  const std::string run = copy_run(t, "lora");
  auto r = test::run_zoo("train --config " + config() + " --output-dir " + run + " --resume --set train.max_steps=12");
  expect_one_line_error(r, run + "/checkpoint-10 was trained with train.lora (it holds adapter_config.json): resume with "
                           "--set 'train.lora={", "a LoRA run resumed without train.lora");
  // The command it gives resumes.
  const std::string given = r.output.substr(r.output.find("--set 'train.lora="));
  r = test::run_zoo("train --config " + config() + " --output-dir " + run + " --resume --set train.max_steps=12 " +
                    given.substr(0, given.find('\n')));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

// ---- Issue 66 §5: input streams, generation_config.json, non-finite outputs ------------------

// A tiny GPT (10 steps), GRU translation model (4 steps) and BERT text classifier (2 steps),
// shared by the Inputs tests.
class InputsCheckpoints : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    test::write_file(*dir_ / "text.txt", corpus());
    test::tiny_config(*dir_, {*dir_ / "text.txt"}, 10);
    auto r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (*dir_ / "gpt"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    test::write_file(*dir_ / "pairs.txt", test::pair_file_text());
    test::write_file(*dir_ / "s2s.json", test::tiny_config(*dir_ / "pairs.txt"));
    r = test::run_zoo("train --config " + (*dir_ / "s2s.json") + " --output-dir " + (*dir_ / "s2s") +
                      " --set train.max_steps=4 --set train.eval_steps=4 --set train.save_steps=4");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    test::write_file(*dir_ / "cls.json", test::classifier_config(test::write_reviews(*dir_), *dir_ / "vocab.txt"));
    r = test::run_zoo("train --config " + (*dir_ / "cls.json") + " --output-dir " + (*dir_ / "cls") +
                      " --set train.max_steps=2 --set train.eval_steps=2 --set train.save_steps=2");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string gpt() { return *dir_ / "gpt/checkpoint-10"; }
  static std::string s2s() { return *dir_ / "s2s/checkpoint-4"; }
  static std::string cls() { return *dir_ / "cls/checkpoint-2"; }
  static test::TempDir* dir_;
};
test::TempDir* InputsCheckpoints::dir_ = nullptr;

// `zoo ARGS` under a 4 GB address-space limit, killed after 60 s; `pipe` ("yes | ") feeds it.
test::RunResult run_zoo_limited(const std::string& args, const std::string& pipe = "") {
  return test::run(pipe + "(ulimit -v 4000000; timeout 60 " + std::string(ZOO_BINARY) + " " + args + ")");
}

// Standard input had no cap: `< /dev/zero` grew without bound and, under a memory limit,
// exited 0 with no output and no error; --input /dev/zero was "read error". Every stream is
// read line by line under the text cap, naming the stream and the line.
TEST_F(InputsCheckpoints, StdinAndInputFilesAreCappedNamingTheStreamAndLine) {
  test::TempDir t;
  ASSERT_EQ(test::run_zoo("tokenizer train --input " + (*dir_ / "text.txt") + " --model-type char --out " + (t / "tok"))
                .exit_code,
            0);
  for (const std::string& command : {"classify --checkpoint " + cls(), "translate --checkpoint " + s2s(),
                                     "tokenizer encode --tokenizer " + (t / "tok")}) {
    const auto r = run_zoo_limited(command + " < /dev/zero");  // the default cap, 64 MiB
    expect_one_line_error(r, "stdin line 1: longer than 67108864 bytes", command);
    EXPECT_NE(r.output.find("ZOO_MAX_TEXT_MIB"), std::string::npos) << r.output;
  }
  // Many short lines: the whole stream is capped where it is held in memory.
  auto r = run_zoo_limited("translate --checkpoint " + s2s(), "export ZOO_MAX_TEXT_MIB=1; yes 一只红猫 | ");
  expect_one_line_error(r, "the input passes 1048576 bytes (the text cap)", "yes | translate");
  EXPECT_NE(r.output.find("stdin line "), std::string::npos) << r.output;
  for (const std::string option : {"--input", "--constrain"}) {
    r = run_zoo_limited("translate --checkpoint " + s2s() + " " + option + " /dev/zero < /dev/null");
    expect_one_line_error(r, option + " /dev/zero: is not a regular file", option);
  }
  // Ordinary input still reads: CRLF line ends, a blank line keeping its place.
  r = test::run("printf '一只红猫\\r\\n\\n两只蓝猫\\n' | " + std::string(ZOO_BINARY) + " translate --checkpoint " + s2s());
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::lines_of(r.output).size(), 3u) << r.output;
}

// Finite but huge weights (3e38) became NaN at run time: greedy decoding printed newlines with
// exit 0, sampling and beam search failed with raw messages, zoo eval printed "loss": null.
TEST_F(InputsCheckpoints, HugeFiniteWeightsAreAnErrorNamingTheCheckpoint) {
  test::TempDir t;
  const auto huge = [](const char* name) {
    return [name](std::map<std::string, torch::Tensor>& tensors) { tensors.at(name).fill_(3e38); };
  };
  damaged_copy(gpt(), t / "gpt", huge("transformer.h.0.mlp.c_fc.weight"));
  damaged_copy(s2s(), t / "s2s", huge("decoder.fc.weight"));
  const std::string scores = "the model's next-token scores are NaN or infinite at decoding step 1";
  for (const std::string how : {"--greedy", "--seed 1", "--beam 3"})
    expect_one_line_error(test::run_zoo("generate --checkpoint " + (t / "gpt") + " --prompt 'the ' " + how),
                          (t / "gpt") + ": " + scores, "generate " + how);
  expect_one_line_error(test::run_zoo("eval --checkpoint " + (t / "gpt")),
                        (t / "gpt") + ": the loss on the valid split is NaN", "eval, GPT");
  for (const std::string beam : {"1", "3"})
    expect_one_line_error(test::run("echo 一只红猫 | " + std::string(ZOO_BINARY) + " translate --checkpoint " +
                                    (t / "s2s") + " --beam " + beam),
                          (t / "s2s") + ": " + scores, "translate --beam " + beam);
  expect_one_line_error(test::run_zoo("eval --checkpoint " + (t / "s2s")), (t / "s2s") + ": ", "eval, GRU");
}

// The GRU encoder-decoder had no source length cap (100,000 characters: 2 minutes, 2 GB); it
// reads at most 1024 tokens now, as a Transformer reads its positions, and --truncate cuts.
TEST_F(InputsCheckpoints, TheGruEncoderDecoderReadsAtMost1024SourceTokens) {
  test::TempDir t;
  std::string fits, longer;
  for (int i = 0; i < 1022; ++i) fits += "红";  // + <start> and <end>: 1024
  for (int i = 0; i < 5000; ++i) longer += "红";
  test::write_file(t / "in.txt", fits + "\n" + longer + "\n");
  const std::string translate = "translate --checkpoint " + s2s() + " --input " + (t / "in.txt");
  expect_one_line_error(run_zoo_limited(translate),
                        "a source sentence of 5002 tokens (its <start>/<end> markers included) is longer than the 1024 "
                        "this model reads (zoo's cap for a model without a position table)",
                        "5000 characters");
  const auto r = run_zoo_limited(translate + " --truncate");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(test::lines_of(r.output).size(), 2u) << r.output;
}

}  // namespace
}  // namespace zoo
