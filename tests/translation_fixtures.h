#pragma once
// The invented Chinese-English pair file and the tiny configs shared by the translation
// tests (tests/translation_test.cc, tests/transformer_cli_test.cc), and helpers that run zoo.
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace zoo::test {

using json = nlohmann::json;

// Invented pairs in the Tatoeba/Anki layout (English<TAB>Chinese[<TAB>attribution]):
// 60 "N COLOUR cats." sentences and 8 "I like FRUIT." ones whose fruit characters occur
// nowhere else, plus 3 malformed lines and a blank one.
inline std::string pair_file_text() {
  const std::vector<std::pair<std::string, std::string>> numbers = {
      {"One", "一"}, {"Two", "两"},   {"Three", "三"}, {"Four", "四"}, {"Five", "五"},
      {"Six", "六"}, {"Seven", "七"}, {"Eight", "八"}, {"Nine", "九"}, {"Ten", "十"}};
  const std::vector<std::pair<std::string, std::string>> colours = {
      {"red", "红"},    {"blue", "蓝"},  {"green", "绿"},
      {"yellow", "黄"}, {"white", "白"}, {"black", "黑"}};
  const std::vector<std::pair<std::string, std::string>> fruit = {
      {"apples", "苹果"},  {"pears", "梨"},     {"peaches", "桃子"}, {"grapes", "葡萄"},
      {"bananas", "香蕉"}, {"oranges", "橙子"}, {"lemons", "柠檬"},  {"cherries", "樱桃"}};
  std::ostringstream out;
  int line = 0;
  for (const auto& [n_en, n_zh] : numbers) {
    for (const auto& [c_en, c_zh] : colours) {
      out << n_en << " " << c_en << " cats.\t" << n_zh << "只" << c_zh << "猫。";
      if (++line % 7 == 0) out << "\tattribution column of fixture line " << line;
      out << "\n";
      if (line == 4) out << "this line has no tab\n";           // line 5
      if (line == 9) out << "\n\t只有中文\n";                   // lines 11 (blank), 12
      if (line == 20) out << "English without Chinese.\t  \n";  // line 24
    }
  }
  for (const auto& [f_en, f_zh] : fruit) out << "I like " << f_en << ".\t我喜欢" << f_zh << "。\n";
  return out.str();
}

inline constexpr int kValidPairs = 68;

// A model section small enough to train in seconds, of a translation model type.
inline std::string tiny_model(const std::string& model_type) {
  if (model_type == "transformer")
    return R"({"model_type": "transformer", "d_model": 32, "encoder_layers": 2, "decoder_layers": 2,
               "encoder_attention_heads": 4, "decoder_attention_heads": 4, "encoder_ffn_dim": 64,
               "decoder_ffn_dim": 64, "dropout": 0.0, "max_position_embeddings": 32})";
  return R"({"model_type": "seq2seq", "embedding_dim": 16, "units": 32})";
}

inline std::string tiny_config(const std::string& data_path, const std::string& extra_data = "",
                               const std::string& model_type = "seq2seq") {
  return R"({
  "model": )" + tiny_model(model_type) + R"(,
  "data": {"path": ")" +
         data_path + R"(", "test_size": 4, "valid_size": 4, "eval_max_length": 12)" + extra_data +
         R"(},
  "train": {"max_steps": 30, "per_device_train_batch_size": 8, "per_device_eval_batch_size": 3,
            "optim": "adam", "learning_rate": 0.01, "lr_scheduler_type": "constant",
            "logging_steps": 5, "eval_steps": 15, "save_steps": 15, "save_total_limit": 0,
            "report_to_tensorboard": false}
})";
}

// Runs zoo with stdout redirected to `out_file`; the result's output holds stderr only.
inline test::RunResult run_zoo_to_file(const std::string& args, const std::string& out_file) {
  return test::run("{ " + std::string(ZOO_BINARY) + " " + args + " > " + out_file + "; }");
}

// The JSON line of `zoo eval` (stderr notes may precede it).
inline json eval_json(const std::string& output) {
  std::istringstream in(output);
  std::string line, last;
  while (std::getline(in, line))
    if (!line.empty() && line[0] == '{') last = line;
  return json::parse(last);
}

}  // namespace zoo::test
