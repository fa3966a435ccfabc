#pragma once
// Test fixtures written at test time (no data files in the repository).
#include <cstdint>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "test_util.h"
#include "io/config.h"

namespace zoo::test {

inline void put_be32(std::ofstream& out, uint32_t v) {
  const unsigned char b[4] = {static_cast<unsigned char>(v >> 24), static_cast<unsigned char>(v >> 16),
                              static_cast<unsigned char>(v >> 8), static_cast<unsigned char>(v)};
  out.write(reinterpret_cast<const char*>(b), 4);
}

/// Writes an MNIST-layout folder (raw IDX, not gzipped) of `size`x`size` grey images with
/// `classes` classes; class c lights up a different horizontal band, plus noise, so a
/// small model can learn it in a few steps.
inline void write_tiny_mnist(const std::string& dir, int64_t n_train, int64_t n_test, int64_t size = 8,
                             int64_t classes = 4, uint32_t seed = 7) {
  std::mt19937 rng(seed);
  auto write_split = [&](const std::string& prefix, int64_t n) {
    std::ofstream img(dir + "/" + prefix + "-images-idx3-ubyte", std::ios::binary);
    std::ofstream lab(dir + "/" + prefix + "-labels-idx1-ubyte", std::ios::binary);
    put_be32(img, 0x803), put_be32(img, n), put_be32(img, size), put_be32(img, size);
    put_be32(lab, 0x801), put_be32(lab, n);
    for (int64_t i = 0; i < n; ++i) {
      const int c = static_cast<int>(rng() % classes);
      lab.put(static_cast<char>(c));
      for (int64_t y = 0; y < size; ++y)
        for (int64_t x = 0; x < size; ++x) {
          const bool band = y * classes / size == c;
          const int v = (band ? 180 : 20) + static_cast<int>(rng() % 60);
          img.put(static_cast<char>(v));
        }
    }
  };
  write_split("train", n_train);
  write_split("t10k", n_test);
}

/// A config for a tiny ViT on write_tiny_mnist data.
inline std::string tiny_vit_config(const std::string& data_dir, const std::string& extra_train = "") {
  return R"({
  "model": {"model_type": "vit", "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
            "intermediate_size": 32, "image_size": 8, "patch_size": 4, "num_channels": 1, "num_labels": 4,
            "hidden_dropout_prob": 0.1, "labels": ["a", "b", "c", "d"]},
  "data": {"dataset": "mnist", "path": ")" + data_dir + R"(", "validation_size": 32, "random_crop_padding": 1,
           "horizontal_flip_prob": 0.5},
  "train": {"max_steps": 8, "per_device_train_batch_size": 16, "learning_rate": 0.01, "logging_steps": 1,
            "save_steps": 4, "save_total_limit": 0, "lr_scheduler_type": "cosine", "warmup_steps": 2,
            "report_to_tensorboard": true)" + extra_train + R"(}
})";
}

// About 20 KB of text with structure a tiny model picks up in a few steps.
inline std::string corpus() {
  std::string text;
  const char* lines[] = {"the cat sat on the mat.\n", "a dog ran in the park!\n", "we sing, you dance.\n"};
  for (int i = 0; i < 300; ++i) text += lines[i % 3];
  return text;
}

// A config for a tiny GPT on `files` with a 32-token context, written to dir/config.json;
// returns its path.
inline std::string tiny_config(const test::TempDir& dir, const std::vector<std::string>& files, int steps = 30) {
  json config = {{"task", "language_modeling"},
                 {"model", {{"preset", "gpt-nano-char"}, {"n_positions", 32}, {"n_layer", 2}, {"n_embd", 32}}},
                 {"data", {{"files", files}, {"tokenizer", "char"}, {"max_eval_windows", 50}}},
                 {"train",
                  {{"max_steps", steps}, {"per_device_train_batch_size", 8}, {"learning_rate", 3e-3},
                   {"logging_steps", 10}, {"eval_steps", steps}, {"save_steps", steps},
                   {"report_to_tensorboard", false}}}};
  const std::string path = dir / "config.json";
  write_json_file(path, config);
  return path;
}

}  // namespace zoo::test
