// The data-path rule (core/paths.h): which paths go to the data home, where the data home
// is, and what the error says when the data is not there; then the same rule through
// `zoo train`, so a task that opens data.path without it fails here.
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/paths.h"
#include "fixtures.h"
#include "test_util.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;

// Sets (or, with nullopt, unsets) an environment variable for the scope, then restores it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// The current folder for the scope.
class ScopedCwd {
 public:
  explicit ScopedCwd(const fs::path& dir) : old_(fs::current_path()) { fs::current_path(dir); }
  ~ScopedCwd() { fs::current_path(old_); }

 private:
  fs::path old_;
};

std::string error_of(const std::string& path, const std::string& key = "data.path") {
  try {
    existing_data_path(path, key);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(DataPaths, OnlyPlainRelativePathsGoToTheDataHome) {
  for (const char* p : {"cmn-eng/cmn.txt", "cmn.txt", "fashion-mnist", ".hidden/x", "...", "..x/y", "~user/x"})
    EXPECT_TRUE(in_data_home(p)) << p;
  for (const char* p : {"/usr/share/datasets/fashion-mnist", "/", "./cmn.txt", "../shared/data/cmn-eng/cmn.txt", ".",
                        "..", "~", "~/data/cmn.txt", ""})
    EXPECT_FALSE(in_data_home(p)) << p;
}

TEST(DataPaths, ResolvesAgainstZooDataDirAndLeavesExplicitPathsAlone) {
  ScopedEnv zoo("ZOO_DATA_DIR", "/srv/zoo-data");
  EXPECT_EQ(data_home(), "/srv/zoo-data");
  EXPECT_EQ(resolve_data_path("cmn-eng/cmn.txt"), "/srv/zoo-data/cmn-eng/cmn.txt");
  EXPECT_EQ(resolve_data_path("/usr/share/datasets/fashion-mnist"), "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(resolve_data_path("./cmn.txt"), "./cmn.txt");
  EXPECT_EQ(resolve_data_path("../data/cmn.txt"), "../data/cmn.txt");
  EXPECT_EQ(resolve_data_path(""), "");
  ScopedEnv home("HOME", "/home/someone");
  EXPECT_EQ(resolve_data_path("~/data/cmn.txt"), "/home/someone/data/cmn.txt");
}

TEST(DataPaths, DataHomeFallsBackToXdgThenHome) {
  ScopedEnv zoo("ZOO_DATA_DIR", std::nullopt);
  ScopedEnv home("HOME", "/home/someone");
  {
    ScopedEnv xdg("XDG_DATA_HOME", "/xdg");
    EXPECT_EQ(data_home(), "/xdg/zoo/data");
  }
  {
    ScopedEnv xdg("XDG_DATA_HOME", "relative/xdg");  // the XDG spec says to ignore it
    EXPECT_EQ(data_home(), "/home/someone/.local/share/zoo/data");
  }
  ScopedEnv xdg("XDG_DATA_HOME", std::nullopt);
  EXPECT_EQ(data_home(), "/home/someone/.local/share/zoo/data");
  EXPECT_EQ(resolve_data_path("cmn-eng/cmn.txt"), "/home/someone/.local/share/zoo/data/cmn-eng/cmn.txt");
  {
    ScopedEnv empty("ZOO_DATA_DIR", "");  // empty counts as unset, as in the shell's ${ZOO_DATA_DIR:-...}
    EXPECT_EQ(data_home(), "/home/someone/.local/share/zoo/data");
  }
  ScopedEnv no_home("HOME", std::nullopt);
  EXPECT_THROW(data_home(), Error);
  EXPECT_FALSE(data_path_exists("cmn-eng/cmn.txt"));  // no throw
  EXPECT_EQ(resolve_data_path("/abs/cmn.txt"), "/abs/cmn.txt");  // needs no data home
}

TEST(DataPaths, RelativeZooDataDirIsMadeAbsolute) {
  test::TempDir dir;
  ScopedCwd cwd(dir.path());
  ScopedEnv zoo("ZOO_DATA_DIR", "data");
  EXPECT_EQ(data_home(), (fs::current_path() / "data").string());
}

TEST(DataPaths, FindsExistingFilesInTheDataHome) {
  test::TempDir dir;
  fs::create_directories(dir.path() / "cmn-eng");
  test::write_file(dir / "cmn-eng/cmn.txt", "Hi.\t嗨。\n");
  ScopedEnv zoo("ZOO_DATA_DIR", dir.path().string());
  EXPECT_EQ(existing_data_path("cmn-eng/cmn.txt"), dir / "cmn-eng/cmn.txt");
  EXPECT_TRUE(data_path_exists("cmn-eng/cmn.txt"));
  EXPECT_TRUE(data_path_exists(dir / "cmn-eng/cmn.txt"));
  EXPECT_FALSE(data_path_exists("cmn-eng/other.txt"));
  EXPECT_FALSE(data_path_exists(""));
}

TEST(DataPaths, MissingDataHomeFileNamesResolvedPathWhereItLookedAndTheFix) {
  test::TempDir dir;
  const std::string home = dir / "home";
  {
    ScopedEnv zoo("ZOO_DATA_DIR", home);
    const std::string e = error_of("cmn-eng/cmn.txt");
    EXPECT_TRUE(contains(e, "data.path 'cmn-eng/cmn.txt': " + home + "/cmn-eng/cmn.txt does not exist")) << e;
    EXPECT_TRUE(contains(e, "looked up in the data home " + home + ", from ZOO_DATA_DIR")) << e;
    EXPECT_TRUE(contains(e, "tools/fetch_data.sh cmn-eng")) << e;
    EXPECT_TRUE(contains(e, "set ZOO_DATA_DIR")) << e;
    EXPECT_FALSE(contains(error_of("cmn.txt"), "fetch_data.sh cmn.txt")) << error_of("cmn.txt");
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_FALSE(contains(e, "current folder")) << e;
  }
  {
    ScopedEnv zoo("ZOO_DATA_DIR", std::nullopt);
    ScopedEnv xdg("XDG_DATA_HOME", std::nullopt);
    ScopedEnv user("HOME", dir / "user");
    const std::string e = error_of("cmn-eng/cmn.txt");
    EXPECT_TRUE(contains(e, dir / "user/.local/share/zoo/data/cmn-eng/cmn.txt does not exist")) << e;
    EXPECT_TRUE(contains(e, "$HOME/.local/share/zoo/data, as ZOO_DATA_DIR is not set")) << e;
  }
  {
    // A file of that name in the current folder: the message says how to use it.
    fs::create_directories(dir.path() / "cmn-eng");
    test::write_file(dir / "cmn-eng/cmn.txt", "Hi.\t嗨。\n");
    ScopedCwd cwd(dir.path());
    ScopedEnv zoo("ZOO_DATA_DIR", home);
    const std::string e = error_of("cmn-eng/cmn.txt");
    EXPECT_TRUE(contains(e, "write ./cmn-eng/cmn.txt to use that instead")) << e;
  }
}

TEST(DataPaths, MissingExplicitPathNamesItsAbsolutePath) {
  test::TempDir dir;
  ScopedCwd cwd(dir.path());
  const std::string e = error_of("./nope/cmn.txt");
  EXPECT_TRUE(contains(e, "data.path './nope/cmn.txt': " + (fs::current_path() / "nope/cmn.txt").string() +
                              " does not exist"))
      << e;
  EXPECT_TRUE(contains(e, "used as given")) << e;
  const std::string abs = error_of(dir / "absent");
  EXPECT_TRUE(contains(abs, dir / "absent does not exist")) << abs;
  const std::string key = error_of("/absent/x", "model.vocab");
  EXPECT_TRUE(contains(key, "model.vocab '/absent/x': /absent/x does not exist")) << key;
  EXPECT_TRUE(contains(key, "correct model.vocab")) << key;
}

// The tasks open data.path through the rule: a config naming data inside ZOO_DATA_DIR trains,
// and one naming a missing set fails with the resolved path.
TEST(DataPaths, ZooTrainReadsDataPathFromTheDataHome) {
  test::TempDir dir;
  const std::string home = dir / "data";
  fs::create_directories(fs::path(home) / "tiny-mnist");
  test::write_tiny_mnist(home + "/tiny-mnist", 64, 16);
  test::write_file(dir / "in_home.json", test::tiny_vit_config("tiny-mnist"));
  auto r = test::run("ZOO_DATA_DIR=" + home + " " + ZOO_BINARY + " train --config " + (dir / "in_home.json") +
                     " --output-dir " + (dir / "run") + " --device cpu --set train.max_steps=2");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "run/checkpoint-2")) << r.output;

  r = test::run("ZOO_DATA_DIR=" + home + " " + ZOO_BINARY + " train --config " + (dir / "in_home.json") +
                " --output-dir " + (dir / "run2") + " --device cpu --set data.path=fashion-mnist");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(contains(r.output, "zoo: error: data.path 'fashion-mnist': " + home + "/fashion-mnist does not exist"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "tools/fetch_data.sh fashion-mnist")) << r.output;
}

}  // namespace
}  // namespace zoo
