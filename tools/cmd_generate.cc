// zoo generate --checkpoint DIR (--prompt TEXT | --prompt-file FILE | --prompts FILE)
//              [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P]
//              [--repetition-penalty R] [--beam N] [--greedy] [--seed S] [--stop STR]...
//              [--batch-size B] [--no-cache] [--device D] [--quantize int8]
// Continues the prompt with a language model and streams the text to stdout as the tokens
// are produced (sampling and greedy; beam search prints its best hypothesis at the end).
// --prompts FILE: one prompt per line, continued in batches of B (left-padded, so greedy and
// beam search give what each prompt gives alone); one JSON line per prompt, in order.
#include <filesystem>
#include <set>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <algorithm>
#include <numeric>

#include "core/input_file.h"
#include "data/text.h"
#include "tools/commands.h"
#include "io/checkpoint.h"
#include "train/device.h"
#include "zoo/zoo.h"

namespace zoo::cli {

namespace {

constexpr int64_t kMaxNewTokens = 1000000;  // zoo::GenerationOptions' limit

struct GenerateArgs {
  std::string checkpoint;
  std::string prompt;
  std::string prompt_file;
  std::string prompts;  // one prompt per line
  int64_t batch_size = 8;
  int64_t max_new_tokens = 200;
  double temperature = 1.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  int64_t min_tokens_to_keep = 1;
  double repetition_penalty = 1.0;
  int64_t beam = 1;
  bool greedy = false;
  int64_t seed = 0;
  std::vector<std::string> stop;
  bool no_cache = false;
  std::string device = "auto";
  std::string quantize;  // "" (fp32) or "int8"
  std::set<std::string> given;  // the options on the command line (they win over generation_config.json)
};

// Hugging Face's generation_config.json beside the weights gives the defaults of the options
// the command line leaves out (only the keys it holds: a file without do_sample keeps zoo's
// sampling).
void apply_generation_config(GenerateArgs& a) {
  const std::string path = (std::filesystem::path(model_dir(a.checkpoint)) / "generation_config.json").string();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return;
  const json g = read_json_file(path);
  if (!g.is_object()) throw Error(cat(path, ": not a JSON object"));
  std::vector<std::string> taken;
  // A value from the file meets the limits of the option it stands for, with the file named.
  auto number = [&](const char* key, const char* option, auto& member, double lo, double hi) {
    if (!g.contains(key) || g[key].is_null() || a.given.count(option)) return;
    if (!g[key].is_number()) throw Error(cat(path, ": ", key, " is not a number"));
    const double value = g[key].get<double>();
    if (!(value >= lo && value <= hi))
      throw Error(cat(path, ": ", key, " ", g[key].dump(), " is out of range: give ", lo == std::floor(lo) ? cat(static_cast<int64_t>(lo)) : cat(lo), " to ",
                      hi == std::floor(hi) ? cat(static_cast<int64_t>(hi)) : cat(hi), " (as ", option,
                      "), or leave it out"));
    member = g[key].get<std::decay_t<decltype(member)>>();
    taken.push_back(cat(key, "=", g[key].dump()));
  };
  number("temperature", "--temperature", a.temperature, 1e-6, 100);
  number("top_k", "--top-k", a.top_k, 0, 2147483647);
  number("top_p", "--top-p", a.top_p, 1e-9, 1);
  number("repetition_penalty", "--repetition-penalty", a.repetition_penalty, 1e-6, 100);
  number("max_new_tokens", "--max-new-tokens", a.max_new_tokens, 1, kMaxNewTokens);
  number("num_beams", "--beam", a.beam, 1, 64);
  if (g.contains("do_sample") && g["do_sample"].is_boolean() && !g["do_sample"].get<bool>() && a.beam == 1 &&
      !a.given.count("--greedy") && !a.given.count("--temperature") && !a.given.count("--top-k") &&
      !a.given.count("--top-p")) {
    a.greedy = true;
    taken.push_back("do_sample=false");
  }
  if (!taken.empty()) std::cerr << "zoo: from " << path << ": " << join(taken) << std::endl;
}

// The UTF-8 text of the file `option` names (a regular file, under the text cap; a byte-order
// mark dropped).
std::string read_utf8_file(const std::string& option, const std::string& path) {
  std::string text = read_text_input(path, option);
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // byte-order mark
  const size_t bad = data::find_invalid_utf8(text);
  if (bad != std::string::npos)
    throw Error(cat(option, " ", path, ": invalid UTF-8 at byte ", bad, "; save it as UTF-8"));
  return text;
}

std::string read_prompt(const GenerateArgs& a) {
  return a.prompt_file.empty() ? a.prompt : read_utf8_file("--prompt-file", a.prompt_file);
}

// --prompts FILE: its lines (core/input_file.h's rules), each valid UTF-8 and not blank.
std::vector<std::string> read_prompt_lines(const std::string& path) {
  const std::vector<std::string> lines = read_input_lines(path, "--prompts");
  for (size_t i = 0; i < lines.size(); ++i) {
    const std::string where = cat("--prompts ", path, ":", i + 1);
    data::check_utf8(lines[i], where + ": the line");
    if (data::python_strip(lines[i]).empty())
      throw Error(cat(where, ": a blank line; every line is a prompt: remove it"));
  }
  if (lines.empty()) throw Error(cat("--prompts ", path, ": no prompts (one per line)"));
  return lines;
}

int generate(const GenerateArgs& a, const std::string& text);
int generate_lines(const GenerateArgs& a);

int run_generate(const GenerateArgs& a) {
  if ((!a.prompt.empty()) + (!a.prompt_file.empty()) + (!a.prompts.empty()) > 1)
    throw Error("give one of --prompt TEXT, --prompt-file FILE and --prompts FILE");
  const std::string text = read_prompt(a);
  checked_checkpoint_dir(a.checkpoint);
  GenerateArgs with_defaults = a;
  apply_generation_config(with_defaults);
  return a.prompts.empty() ? generate(with_defaults, text) : generate_lines(with_defaults);
}

GenerationOptions options_of(const GenerateArgs& a) {
  GenerationOptions o;
  o.max_new_tokens = a.max_new_tokens;
  o.greedy = a.greedy;
  o.temperature = a.temperature;
  o.top_k = a.top_k;
  o.top_p = a.top_p;
  o.min_tokens_to_keep = a.min_tokens_to_keep;
  o.repetition_penalty = a.repetition_penalty;
  o.beam_size = a.beam;
  o.seed = a.seed;
  o.stop = a.stop;
  o.use_cache = !a.no_cache;
  o.batch_size = a.batch_size;
  return o;
}

// One prompt: the prompt, then the continuation as it is produced.
int generate(const GenerateArgs& a, const std::string& text) {
  const Generator generator(a.checkpoint, quantized_device(a.device, a.quantize), LoadOptions{a.quantize});
  std::cout << text << std::flush;
  generator.generate({text}, options_of(a), [](size_t, const std::string& piece) {
    std::cout << piece << std::flush;
    return true;
  });
  std::cout << std::endl;
  return 0;
}

// --prompts FILE: one JSON line per prompt, in order.
int generate_lines(const GenerateArgs& a) {
  const std::vector<std::string> lines = read_prompt_lines(a.prompts);
  const Generator generator(a.checkpoint, quantized_device(a.device, a.quantize), LoadOptions{a.quantize});
  const auto generations = generator.generate(lines, options_of(a));
  for (size_t i = 0; i < lines.size(); ++i)
    std::cout << json{{"prompt", lines[i]}, {"completion", generations[i].text}}.dump(-1, ' ', false,
                                                                                     json::error_handler_t::replace)
              << "\n";
  std::cout << std::flush;
  return 0;
}

}  // namespace

void setup_generate(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<GenerateArgs>();
  auto* cmd = app.add_subcommand("generate", "Continue a prompt with a language model, streaming the text");
  cmd->add_option("--checkpoint", a->checkpoint, "checkpoint or Hugging Face GPT-2 directory")->required();
  cmd->add_option("--prompt", a->prompt, "the text to continue");
  cmd->add_option("--prompt-file", a->prompt_file, "read the prompt from this UTF-8 file");
  cmd->add_option("--prompts", a->prompts,
                  "a UTF-8 file of prompts, one per line: each continued (in batches), one JSON line each");
  cmd->add_option("--batch-size", a->batch_size, "--prompts: prompts decoded at once")
      ->check(CLI::Range(int64_t{1}, int64_t{4096}))
      ->capture_default_str();
  cmd->add_option("--max-new-tokens", a->max_new_tokens, "most tokens generated")
      ->check(CLI::Range(int64_t{1}, kMaxNewTokens))
      ->capture_default_str();
  cmd->add_option("--temperature", a->temperature, "sampling: divide the logits by T")->capture_default_str();
  cmd->add_option("--top-k", a->top_k, "sampling: keep the K most likely tokens; 0 = all")->capture_default_str();
  cmd->add_option("--top-p", a->top_p, "sampling: keep the most likely tokens up to probability P (nucleus)")
      ->capture_default_str();
  cmd->add_option("--min-tokens-to-keep", a->min_tokens_to_keep, "top-k/top-p keep at least this many")
      ->capture_default_str();
  cmd->add_option("--repetition-penalty", a->repetition_penalty,
                  "penalise tokens already in the text (CTRL); 1 = off")
      ->capture_default_str();
  cmd->add_option("--beam", a->beam, "beam search with N beams (no sampling)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_flag("--greedy", a->greedy, "always take the most likely token (no sampling)");
  cmd->add_option("--seed", a->seed, "sampling seed")->capture_default_str();
  cmd->add_option("--stop", a->stop, "stop when the text contains this string (repeatable)");
  cmd->add_flag("--no-cache", a->no_cache, "recompute the whole context every step (for comparison)");
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  add_quantize_option(cmd, &a->quantize);
  cmd->callback([a, cmd, exit_code] {
    for (const auto* option : cmd->get_options())
      if (option->count() > 0) a->given.insert(option->get_name());
    *exit_code = run_generate(*a);
  });
}

}  // namespace zoo::cli
