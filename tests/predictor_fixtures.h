#pragma once
// Tiny checkpoints of every family, trained by the zoo program in a test's folder (seconds
// each), for the suites that load them as a user would: the library, zoo serve, int8.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

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

}  // namespace zoo::test
