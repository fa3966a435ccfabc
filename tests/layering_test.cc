// Includes run only downward: tools -> api -> train | predict -> io -> models | data -> core
// (include/zoo/, the public headers, sit beside api/).
// models/ and data/ are one floor but never include each other (a task in train/tasks/ or a
// predictor joins them); so are train/ and predict/ (inference never needs the trainer). The
// check reads every source file of the repository and fails naming the file, the line and
// the include that goes the wrong way.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "test_util.h"

namespace fs = std::filesystem;

namespace {

// Floor of each top-level folder; tests/ may include anything.
const std::map<std::string, int>& floors() {
  static const std::map<std::string, int> f{{"core", 0}, {"data", 1}, {"models", 1}, {"io", 2},
                                                    {"train", 3}, {"predict", 3}, {"api", 4},
                                                    {"serve", 5}, {"tools", 6}};
  return f;
}

// "models/vit.h" -> "models"; "" when the path has no folder.
std::string top_folder(const std::string& path) {
  const auto slash = path.find('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

// One line per include that breaks the layering, "file:line: message".
std::vector<std::string> layering_violations(const fs::path& root) {
  std::vector<std::string> problems;
  static const std::regex include_re(R"re(^\s*#\s*include\s*"([^"]+)")re");
  for (const auto& [folder, floor] : floors()) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      const auto ext = entry.path().extension().string();
      if (!entry.is_regular_file() || (ext != ".h" && ext != ".cc")) continue;
      const std::string file = fs::relative(entry.path(), root).generic_string();
      std::ifstream in(entry.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        std::smatch m;
        if (!std::regex_search(line, m, include_re)) continue;
        const std::string target = top_folder(m[1]);
        const auto it = floors().find(target);
        if (it == floors().end() || target == folder) continue;
        const bool upward = it->second > floor;
        const bool sideways = it->second == floor;  // models <-> data, train <-> predict
        if (!upward && !sideways) continue;
        problems.push_back(file + ":" + std::to_string(n) + ": includes \"" + m[1].str() + "\": " + folder +
                           "/ may include only floors below it (tools -> serve -> api -> train | predict -> io -> models | data -> core)" +
                           (sideways ? (floor == 1 ? "; models/ and data/ meet only above them (train/tasks/, predict/)"
                                                   : "; train/ and predict/ never include each other")
                                     : ""));
      }
    }
  }
  return problems;
}

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

}  // namespace

TEST(Layering, EveryIncludeRunsDownward) {
  const fs::path root = fs::path(ZOO_TESTS_DIR).parent_path();
  ASSERT_TRUE(fs::exists(root / "core")) << root;
  const auto problems = layering_violations(root);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_TRUE(problems.empty()) << all;
}

TEST(Layering, NamesTheFileLineAndIncludeOfAViolation) {
  zoo::test::TempDir dir;
  write(dir.path() / "core/error.h", "#pragma once\n");
  write(dir.path() / "models/ok.h", "#pragma once\n#include \"core/error.h\"\n#include <torch/torch.h>\n");
  write(dir.path() / "models/up.h", "#pragma once\n\n#include \"io/config.h\"\n");
  write(dir.path() / "data/side.cc", "  #  include \"models/vit.h\"\n");
  write(dir.path() / "tools/top.cc", "#include \"train/trainer.h\"\n#include \"core/error.h\"\n");
  write(dir.path() / "predict/p.cc", "#include \"io/checkpoint.h\"\n#include \"train/trainer.h\"\n");
  write(dir.path() / "io/low.cc", "#include \"models/vit.h\"\n#include \"train/task.h\"\n");
  write(dir.path() / "predict/q.cc", "#include \"api/labels.h\"\n");
  write(dir.path() / "api/a.cc", "#include \"predict/p.h\"\n#include \"train/trainer.h\"\n");
  auto problems = layering_violations(dir.path());
  std::sort(problems.begin(), problems.end());
  ASSERT_EQ(problems.size(), 5u);
  EXPECT_EQ(problems[0].rfind("data/side.cc:1: includes \"models/vit.h\"", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("models/ and data/ meet only above them"), std::string::npos) << problems[0];
  EXPECT_EQ(problems[1].rfind("io/low.cc:2: includes \"train/task.h\"", 0), 0u) << problems[1];
  EXPECT_EQ(problems[2].rfind("models/up.h:3: includes \"io/config.h\"", 0), 0u) << problems[2];
  EXPECT_EQ(problems[3].rfind("predict/p.cc:2: includes \"train/trainer.h\"", 0), 0u) << problems[3];
  EXPECT_EQ(problems[4].rfind("predict/q.cc:1: includes \"api/labels.h\"", 0), 0u) << problems[4];
  EXPECT_NE(problems[3].find("train/ and predict/ never include each other"), std::string::npos) << problems[3];
}
