// Hugging Face directories as the Hub lays them out (issue 38): sharded weights
// (model.safetensors.index.json + shards) read and written, generation_config.json as the
// defaults of `zoo generate`, and a Hub cache folder (models--ORG--NAME/snapshots/HASH, files
// as links into blobs/) accepted wherever a model directory is.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "test_util.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "io/model_files.h"
#include "io/safetensors.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;

// A random Hugging Face GPT-2 (tests/py/hf_gpt2.py make) and its export by zoo in shards.
class HubDirs : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    auto made = test::run_python("hf_gpt2.py", "make " + (*dir_ / "hf") + " 5");
    ASSERT_EQ(made.exit_code, 0) << made.output;
  }
  static void TearDownTestSuite() { delete dir_; }
  static std::string hf() { return *dir_ / "hf"; }
  static test::TempDir* dir_;
};
test::TempDir* HubDirs::dir_ = nullptr;

// The text only (stderr's notes dropped).
std::string generated(const std::string& dir, const std::string& options = "--max-new-tokens 6") {
  auto r = test::run("{ " + std::string(ZOO_BINARY) + " generate --checkpoint " + dir + " --prompt ' the' --seed 3 " +
                     options + " 2>/dev/null; }");
  EXPECT_EQ(r.exit_code, 0) << dir << ": " << r.output;
  return r.output;
}

TEST_F(HubDirs, ShardedExportsWriteAndLoad) {
  test::TempDir t;
  const std::string sharded = t / "sharded";
  auto r = test::run_zoo("export --checkpoint " + hf() + " --out " + sharded + " --max-shard-size 20KB");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_FALSE(fs::exists(sharded + "/model.safetensors"));
  const json index = read_json_file(sharded + "/model.safetensors.index.json");
  std::set<std::string> shards;
  for (const auto& [name, file] : index["weight_map"].items()) shards.insert(file.get<std::string>());
  EXPECT_GE(shards.size(), 3u) << index.dump();
  char first[64];
  std::snprintf(first, sizeof first, "model-00001-of-%05zu.safetensors", shards.size());
  EXPECT_TRUE(shards.count(first)) << index.dump();
  // A shard holds at most the limit, unless one tensor alone exceeds it (GPT-2's wte here).
  std::map<std::string, int> tensors_in;
  for (const auto& [name, file] : index["weight_map"].items()) ++tensors_in[file.get<std::string>()];
  for (const auto& s : shards) {
    if (tensors_in[s] > 1) {
      EXPECT_LE(fs::file_size(sharded + "/" + s), 20000u + 4096u) << s;
    }
  }
  // The shards hold the same tensors as the one file (and Python reads them: the index's names).
  const auto one = safetensors::load(hf() + "/model.safetensors").tensors;
  const auto all = load_weights(sharded).tensors;
  ASSERT_EQ(all.size(), one.size());
  for (const auto& [name, tensor] : one) EXPECT_TRUE(torch::equal(tensor, all.at(name))) << name;
  EXPECT_EQ(index["metadata"]["total_size"].get<uint64_t>() > 0, true);
  // As save_pretrained, the export carries generation_config.json (the model's special ids).
  const json generation = read_json_file(sharded + "/generation_config.json");
  EXPECT_EQ(generation.value("_from_model_config", false), true) << generation.dump();
  const json model = read_json_file(hf() + "/config.json");
  if (model.contains("eos_token_id") && !model["eos_token_id"].is_null()) {
    EXPECT_EQ(generation["eos_token_id"], model["eos_token_id"]) << generation.dump();
  }
  // zoo reads its own shards like any other directory: the same text.
  EXPECT_EQ(generated(sharded), generated(hf()));
}

TEST_F(HubDirs, AHostileIndexIsNamed) {
  test::TempDir t;
  const std::string sharded = t / "sharded";
  ASSERT_EQ(test::run_zoo("export --checkpoint " + hf() + " --out " + sharded + " --max-shard-size 20KB").exit_code, 0);
  json index = read_json_file(sharded + "/model.safetensors.index.json");
  const std::string first = index["weight_map"].begin().key();
  for (const auto& [bad, needle] : std::vector<std::pair<std::string, std::string>>{
           {"../../etc/passwd", "is not a file name in"}, {"missing.safetensors", "missing.safetensors"},
           {(--index["weight_map"].end()).value().get<std::string>(), "is not in its shard"}}) {
    json broken = index;
    broken["weight_map"][first] = bad;
    write_json_file(sharded + "/model.safetensors.index.json", broken);
    auto r = test::run_zoo("generate --checkpoint " + sharded + " --prompt ' the' --max-new-tokens 2");
    EXPECT_EQ(r.exit_code, 1) << bad << ": " << r.output;
    EXPECT_NE(r.output.find(needle), std::string::npos) << bad << ": " << r.output;
  }
}

TEST_F(HubDirs, GenerationConfigGivesTheDefaultsTheCommandLineLeavesOut) {
  test::TempDir t;
  fs::copy(hf(), t / "m", fs::copy_options::recursive);
  const std::string greedy = generated(t / "m", "--greedy --max-new-tokens 4");
  const std::string sampled = generated(t / "m");
  write_json_file(t / "m/generation_config.json", json{{"do_sample", false}, {"max_new_tokens", 4}, {"bos_token_id", 0}});
  auto r = test::run_zoo("generate --checkpoint " + (t / "m") + " --prompt ' the' --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("generation_config.json: max_new_tokens=4, do_sample=false"), std::string::npos) << r.output;
  EXPECT_EQ(generated(t / "m", ""), greedy);
  // The command line wins: a temperature asks for sampling again, --max-new-tokens for its length.
  EXPECT_EQ(generated(t / "m", "--temperature 1 --max-new-tokens 6"), sampled);
}

TEST_F(HubDirs, AHubCacheFolderIsAModelDirectory) {
  test::TempDir t;
  const std::string repo = t / "hub/models--zoo--tiny-gpt2";
  const std::string hash = "0123456789abcdef0123456789abcdef01234567";
  fs::create_directories(repo + "/blobs");
  fs::create_directories(repo + "/refs");
  fs::create_directories(repo + "/snapshots/" + hash);
  test::write_file(repo + "/refs/main", hash);
  int i = 0;
  for (const auto& e : fs::directory_iterator(hf())) {  // files as links into blobs/, as huggingface_hub stores them
    const std::string blob = "blob" + std::to_string(i++);
    fs::copy_file(e.path(), repo + "/blobs/" + blob);
    fs::create_symlink("../../blobs/" + blob, repo + "/snapshots/" + hash + "/" + e.path().filename().string());
  }
  EXPECT_EQ(generated(repo), generated(hf()));
  EXPECT_EQ(generated(repo + "/snapshots/" + hash), generated(hf()));
  test::write_file(repo + "/refs/main", "not-a-hash");
  auto r = test::run_zoo("generate --checkpoint " + repo + " --prompt ' the'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("refs/main: not a commit hash"), std::string::npos) << r.output;
}

// `--checkpoint RUN` where RUN is `zoo train`'s output directory: its newest checkpoint, so that
// a run sized by the clock (train.max_time) needs no step number in the commands after it.
TEST_F(HubDirs, ARunDirectoryIsItsNewestCheckpoint) {
  test::TempDir t;
  const std::string run = t / "run";
  for (const char* step : {"checkpoint-3", "checkpoint-12"}) {
    fs::create_directories(run + "/" + step);
    for (const auto& e : fs::directory_iterator(hf()))
      fs::copy_file(e.path(), run + "/" + step + "/" + e.path().filename().string());
    test::write_file(run + "/" + step + "/trainer_state.json", "{}");
  }
  fs::copy_file(hf() + "/config.json", run + "/config.json");  // zoo train writes the run's config there too
  fs::create_directories(run + "/checkpoint-20");  // being written: no trainer_state.json yet
  fs::create_directories(run + "/checkpoint-7x");  // not a checkpoint name
  EXPECT_EQ(model_dir(run), run + "/checkpoint-12");
  EXPECT_EQ(model_dir(run + "/checkpoint-3"), run + "/checkpoint-3");
  EXPECT_EQ(model_dir(t / "elsewhere"), t / "elsewhere");
  EXPECT_EQ(generated(run), generated(hf()));
  fs::remove(run + "/checkpoint-12/trainer_state.json");
  EXPECT_EQ(model_dir(run), run + "/checkpoint-3");
}

}  // namespace
}  // namespace zoo
