#pragma once
// Tiny checkpoints of every family, trained by the zoo program in a test's folder (seconds
// each), for the suites that load them as a user would: the library, zoo serve, int8.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "review_fixtures.h"
#include "test_util.h"
#include "translation_fixtures.h"

namespace zoo::test {

/// Trains the checkpoints named in `which` under `d`: "gpt" (gpt/checkpoint-20, 32 positions),
/// "vit" (vit/checkpoint-8), "mt" (a Transformer, mt/checkpoint-30), "gru" (gru/checkpoint-30),
/// "bert" (a WordPiece text classifier, bert/checkpoint-30). `extra` adds arguments to one's
/// zoo train. Returns "" or the failing command and its output.
inline std::string train_tiny_predictors(const TempDir& d, const std::vector<std::string>& which,
                                         const std::map<std::string, std::string>& extra = {}) {
  std::map<std::string, std::string> config;
  for (const auto& name : which) {
    if (name == "gpt") {
      write_file(d / "text.txt", corpus());
      config[name] = tiny_config(d, {d / "text.txt"}, 20);
    } else if (name == "vit") {
      std::filesystem::create_directories(d / "mnist");
      write_tiny_mnist(d / "mnist", 128, 32);
      write_file(config[name] = d / "vit.json", tiny_vit_config(d / "mnist"));
    } else if (name == "mt" || name == "gru") {
      write_file(d / "pairs.txt", pair_file_text());
      write_file(config[name] = d / (name + ".json"),
                 name == "mt" ? tiny_config(d / "pairs.txt", "", "transformer") : tiny_config(d / "pairs.txt"));
    } else if (name == "bert") {
      const std::string root = write_reviews(d);
      write_file(config[name] = d / "cls.json", classifier_config(root, d / "vocab.txt"));
    }
  }
  for (const auto& name : which) {
    std::string args = "train --config " + config.at(name) + " --output-dir " + (d / name);
    if (name == "bert") args += " --set data.tokenizer=wordpiece --set train.max_steps=30 --set train.save_steps=30";
    if (extra.count(name)) args += " " + extra.at(name);
    const auto r = run_zoo(args);
    if (r.exit_code != 0) return args + "\n" + r.output;
  }
  return "";
}

/// Where train_tiny_predictors puts `family`'s checkpoint under `d`.
inline std::string tiny_checkpoint(const TempDir& d, const std::string& family) {
  static const std::map<std::string, std::string> last_step = {
      {"gpt", "20"}, {"vit", "8"}, {"mt", "30"}, {"gru", "30"}, {"bert", "30"}};
  return d / (family + "/checkpoint-" + last_step.at(family));
}

/// A suite whose tests share tiny checkpoints trained once (CRTP: one folder per suite).
/// Suite::families() names them; Suite::extra() may add arguments to one's zoo train.
template <class Suite>
class TinyPredictorSuite : public ::testing::Test {
 public:
  static std::map<std::string, std::string> extra() { return {}; }

 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    ASSERT_EQ(train_tiny_predictors(*dir_, Suite::families(), Suite::extra()), "");
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string gpt() { return tiny_checkpoint(*dir_, "gpt"); }
  static std::string vit() { return tiny_checkpoint(*dir_, "vit"); }
  static std::string mt() { return tiny_checkpoint(*dir_, "mt"); }
  static std::string gru() { return tiny_checkpoint(*dir_, "gru"); }
  static std::string bert() { return tiny_checkpoint(*dir_, "bert"); }
  static inline TempDir* dir_ = nullptr;
};

}  // namespace zoo::test
