#pragma once
// Helpers shared by the tests: a fresh temporary directory per test, running the
// zoo binary and the Python reference scripts.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace zoo::test {

/// A directory removed at scope exit: /tmp/zoo-test-XXXXXX.
class TempDir {
 public:
  TempDir() {
    // $TMPDIR or /tmp, as std::filesystem::temp_directory_path() would say.
    const char* tmp = std::getenv("TMPDIR");
    std::string tmpl = std::string(tmp && *tmp ? tmp : "/tmp") + "/zoo-test-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

struct RunResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};

/// Runs a shell command, capturing stdout+stderr.
inline RunResult run(const std::string& command) {
  RunResult r;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (!pipe) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, pipe)) > 0) r.output.append(buf, n);
  const int status = pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

/// Runs `python3 tests/py/<script> args...` with Debian's python3 (+ torch).
inline RunResult run_python(const std::string& script, const std::string& args) {
  return run(std::string(ZOO_PYTHON) + " " + ZOO_TESTS_DIR + "/py/" + script + " " + args);
}

/// Runs the zoo binary built alongside the tests.
inline RunResult run_zoo(const std::string& args) { return run(std::string(ZOO_BINARY) + " " + args); }

/// The lines of `text`, without their line ends.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) lines.push_back(line);
  return lines;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void write_file(const std::string& path, const std::string& content) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
}

}  // namespace zoo::test
