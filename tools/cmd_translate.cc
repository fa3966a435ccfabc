// zoo translate --checkpoint DIR [--input FILE] [--beam N] [--max-length L]
//               [--length-penalty A] [--constrain FILE] [--attention-out FILE.svg]
//               [--batch-size B] [--device D] [--quantize int8] [--ensemble DIR]...
// Reads Chinese sentences (one per line; stdin without --input) and prints one English
// translation per line, in order; an empty input line gives an empty output line.
#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>

#include "core/input_file.h"
#include "data/text.h"
#include "tools/commands.h"
#include "train/device.h"
#include "train/heatmap.h"
#include "zoo/zoo.h"

namespace zoo::cli {

namespace {

struct TranslateArgs {
  std::string checkpoint;
  std::string input;  // "" or "-": stdin
  int64_t beam = 1;
  int64_t max_length = 50;
  double length_penalty = 1.0;
  std::string constrain;
  std::string attention_out;
  bool truncate = false;
  int64_t attention_head = -1;
  int64_t batch_size = 64;
  std::string device = "auto";
  std::string quantize;  // "" (fp32) or "int8"
  std::vector<std::string> ensemble;  // more checkpoints decoded with the first as one model
};

// Every line must be valid UTF-8; checked before any model work.
void check_lines(const std::vector<std::string>& lines, const std::string& name) {
  for (size_t i = 0; i < lines.size(); ++i) {
    const size_t bad = data::find_invalid_utf8(lines[i]);
    if (bad != std::string::npos)
      throw Error(cat(name, ":", i + 1, ": invalid UTF-8 at byte ", bad + 1, " of the line"));
  }
}

// The attention rows as write_attention_svg takes them: (target tokens, source tokens).
torch::Tensor attention_rows(const std::vector<std::vector<float>>& rows) {
  const auto cols = static_cast<int64_t>(rows.empty() ? 0 : rows.front().size());
  torch::Tensor t = torch::empty({static_cast<int64_t>(rows.size()), cols});
  for (size_t r = 0; r < rows.size(); ++r)
    std::copy(rows[r].begin(), rows[r].end(), t[static_cast<int64_t>(r)].data_ptr<float>());
  return t;
}

int run_translate(const TranslateArgs& a) {
  // Input first: bad files fail before the model is loaded.
  std::vector<std::string> lines;
  std::string input_name = "stdin";
  if (a.input.empty() || a.input == "-") {
    lines = read_input_lines(std::cin, input_name);
  } else {
    input_name = a.input;
    lines = read_input_lines(a.input, "--input");
  }
  check_lines(lines, input_name);
  std::vector<std::string> dirs = {a.checkpoint};
  dirs.insert(dirs.end(), a.ensemble.begin(), a.ensemble.end());
  for (const auto& dir : dirs) checked_checkpoint_dir(dir);
  Translator translator(dirs, quantized_device(a.device, a.quantize), LoadOptions{a.quantize});
  TranslationOptions options;
  options.beam_size = a.beam;
  options.max_length = a.max_length;
  options.length_penalty = a.length_penalty;
  options.truncate = a.truncate;
  options.batch_size = a.batch_size;
  options.return_attention = !a.attention_out.empty();
  if (!a.constrain.empty()) {
    options.constrain_to = read_input_lines(a.constrain, "--constrain");
    check_lines(options.constrain_to, a.constrain);
    options.constrain_file = a.constrain;
  }
  translator.select_attention_head(a.attention_head);
  const auto translations = translator.translate(lines, options);
  for (const auto& t : translations) std::cout << t.text << "\n";
  std::cout.flush();

  if (!a.attention_out.empty()) {
    int64_t written = 0;
    for (size_t i = 0; i < translations.size(); ++i) {
      const Translation& t = translations[i];
      if (t.attention.empty()) continue;  // empty input line
      const std::string path = lines.size() == 1
                                   ? a.attention_out
                                   : numbered_path(a.attention_out, static_cast<int64_t>(i) + 1);
      write_attention_svg(path, t.source_tokens, t.target_tokens, attention_rows(t.attention));
      ++written;
    }
    std::cerr << "zoo: wrote " << written << " attention heat map" << (written == 1 ? "" : "s")
              << (lines.size() == 1
                      ? cat(" to ", a.attention_out)
                      : cat(" (", numbered_path(a.attention_out, 1), ", ...; N = input line)"))
              << std::endl;
  }
  return 0;
}

}  // namespace

void setup_translate(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<TranslateArgs>();
  auto* cmd = app.add_subcommand(
      "translate",
      "Translate Chinese sentences (one per line, stdin or --input) with a translation checkpoint");
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint directory")->required();
  cmd->add_option("--input", a->input, "file of source sentences, one per line (default: stdin)");
  cmd->add_option("--beam", a->beam, "beam size; 1 = greedy")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_option("--max-length", a->max_length,
                  "most words generated per sentence, <end> included")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmd->add_option("--length-penalty", a->length_penalty,
                  "beam ranking: log-probability / length^A (0 = raw log-probability)")
      ->check(CLI::Range(-10.0, 10.0))
      ->capture_default_str();
  cmd->add_option("--constrain", a->constrain,
                  "only output sentences listed in this file (one English sentence per line)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--attention-head", a->attention_head,
                  "with --attention-out: draw this head of the last decoder layer's cross-attention "
                  "(Transformer); -1 = the mean of the heads")
      ->capture_default_str();
  cmd->add_flag("--truncate", a->truncate,
                "cut sources longer than the model reads (its position table) instead of stopping");
  cmd->add_option(
      "--attention-out", a->attention_out,
      "write attention heat maps (SVG); with several input lines FILE-N.svg for line N");
  cmd->add_option("--batch-size", a->batch_size, "sentences decoded together")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  cmd->add_option("--ensemble", a->ensemble,
                  "another translation checkpoint trained on the same data (repeatable): the members' next-token "
                  "distributions averaged at every step");
  add_quantize_option(cmd, &a->quantize);
  cmd->callback([a, exit_code] { *exit_code = run_translate(*a); });
}

}  // namespace zoo::cli
