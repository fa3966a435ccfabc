#pragma once
// Invented movie reviews for text classification tests: two classes told apart by one word in
// three, the IMDB archive's folder layout, a vocab.txt, and a tiny BERT classifier's config.
#include <filesystem>
#include <string>
#include <vector>

#include "test_util.h"

namespace zoo::test {

inline const std::vector<std::string> kGood = {"great", "superb", "loved", "wonderful"};
inline const std::vector<std::string> kBad = {"awful", "boring", "hated", "terrible"};
inline const std::vector<std::string> kNeutral = {"the", "film", "plot", "actor", "was", "and"};

inline std::string review(int i, bool positive) {
  std::string text;
  for (int w = 0; w < 8; ++w) {
    const auto& pool = w % 3 == 1 ? (positive ? kGood : kBad) : kNeutral;
    text += (w ? " " : "") + pool[(i / 2 * 5 + w * 3) % pool.size()];  // the same neutral words in both classes
  }
  return text + ".";
}

// root/{train,test}/{neg,pos}/<i>_<rating>.txt and vocab.txt.
inline std::string write_reviews(const TempDir& dir) {
  const std::string root = dir / "imdb";
  for (const char* split : {"train", "test"})
    for (const char* label : {"neg", "pos"}) std::filesystem::create_directories(root + "/" + split + "/" + label);
  for (int i = 0; i < 120; ++i) {
    const bool pos = i % 2;
    const std::string split = i < 80 ? "train" : "test";
    write_file(root + "/" + split + (pos ? "/pos/" : "/neg/") + std::to_string(i) + (pos ? "_9" : "_2") + ".txt",
                 review(i, pos));
  }
  std::string vocab = "[CLS]\n[PAD]\n[MASK]\n[SEP]\n[UNK]\n.\n";
  for (const auto* pool : {&kGood, &kBad, &kNeutral})
    for (const auto& w : *pool) vocab += w + "\n";
  write_file(dir / "vocab.txt", vocab);
  return root;
}

inline std::string classifier_config(const std::string& root, const std::string& vocab) {
  return R"({"task": "text_classification",
    "model": {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 4,
              "intermediate_size": 64, "max_position_embeddings": 32, "hidden_dropout_prob": 0.0},
    "data": {"path": ")" + root + R"(", "vocab": ")" + vocab + R"(", "max_length": 16, "valid_size": 10},
    "train": {"max_steps": 60, "per_device_train_batch_size": 16, "optim": "adamw", "learning_rate": 0.003,
              "lr_scheduler_type": "constant", "logging_steps": 20, "eval_steps": 60, "save_steps": 60,
              "report_to_tensorboard": false}})";
}

}  // namespace zoo::test
