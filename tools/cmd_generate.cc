// zoo generate --checkpoint DIR (--prompt TEXT | --prompt-file FILE | --prompts FILE)
//              [--max-new-tokens N] [--temperature T] [--top-k K] [--top-p P]
//              [--repetition-penalty R] [--beam N] [--greedy] [--seed S] [--stop STR]...
//              [--batch-size B] [--no-cache] [--device D]
// Continues the prompt with a language model and streams the text to stdout as the tokens
// are produced (sampling and greedy; beam search prints its best hypothesis at the end).
// --prompts FILE: one prompt per line, continued in batches of B (left-padded, so greedy and
// beam search give what each prompt gives alone); one JSON line per prompt, in order.
#include <filesystem>
#include <set>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iostream>
#include <limits>
#include <sstream>

#include <algorithm>
#include <numeric>

#include "data/text.h"
#include "models/sampling.h"
#include "predict/text_generator.h"
#include "tools/commands.h"
#include "io/checkpoint.h"
#include "train/device.h"

namespace zoo::cli {

namespace {

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
  auto number = [&](const char* key, const char* option, auto& member) {
    if (!g.contains(key) || g[key].is_null() || a.given.count(option)) return;
    if (!g[key].is_number()) throw Error(cat(path, ": ", key, " is not a number"));
    member = g[key].get<std::decay_t<decltype(member)>>();
    taken.push_back(cat(key, "=", g[key].dump()));
  };
  number("temperature", "--temperature", a.temperature);
  number("top_k", "--top-k", a.top_k);
  number("top_p", "--top-p", a.top_p);
  number("repetition_penalty", "--repetition-penalty", a.repetition_penalty);
  number("max_new_tokens", "--max-new-tokens", a.max_new_tokens);
  number("num_beams", "--beam", a.beam);
  if (g.contains("do_sample") && g["do_sample"].is_boolean() && !g["do_sample"].get<bool>() && a.beam == 1 &&
      !a.given.count("--greedy") && !a.given.count("--temperature") && !a.given.count("--top-k") &&
      !a.given.count("--top-p")) {
    a.greedy = true;
    taken.push_back("do_sample=false");
  }
  if (!taken.empty()) std::cerr << "zoo: from " << path << ": " << join(taken) << std::endl;
}

// The UTF-8 text of the file `option` names (a byte-order mark dropped).
std::string read_utf8_file(const std::string& option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(option, " ", path, ": cannot open (", std::strerror(errno), ")"));
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  if (text.rfind("\xEF\xBB\xBF", 0) == 0) text.erase(0, 3);  // byte-order mark
  const size_t bad = data::find_invalid_utf8(text);
  if (bad != std::string::npos)
    throw Error(cat(option, " ", path, ": invalid UTF-8 at byte ", bad, "; save it as UTF-8"));
  return text;
}

std::string read_prompt(const GenerateArgs& a) {
  return a.prompt_file.empty() ? a.prompt : read_utf8_file("--prompt-file", a.prompt_file);
}

// --prompts FILE: its lines (a final newline ends the last one; "\r\n" as "\n").
std::vector<std::string> read_prompt_lines(const std::string& path) {
  const std::string text = read_utf8_file("--prompts", path);
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(line);
  }
  if (lines.empty()) throw Error(cat("--prompts ", path, ": no prompts (one per line)"));
  return lines;
}

// The prompt's ids, at most the model's context (keeping the end, with a warning); an empty
// prompt starts from the end-of-text token where the tokenizer has one (GPT-2's convention).
std::vector<int64_t> prompt_ids(const TextGenerator& g, const std::string& text) {
  std::vector<int64_t> ids = g.encode(text);
  if (ids.empty()) {
    if (g.eos_id() < 0)
      throw Error("the prompt is empty and this model's tokenizer has no end-of-text token to start from; "
                  "give --prompt TEXT");
    ids.push_back(g.eos_id());
  }
  const auto context = static_cast<size_t>(g.context_size());
  if (ids.size() > context) {
    std::cerr << "zoo: warning: the prompt has " << ids.size() << " tokens but the model's context is " << context
              << "; keeping its last " << context << " tokens" << std::endl;
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(context));
  }
  return ids;
}

// Length of the longest prefix of `bytes` that ends on a UTF-8 character boundary.
size_t complete_utf8(const std::string& bytes) {
  size_t end = bytes.size(), back = 0;
  while (end > 0 && back < 4 && (static_cast<unsigned char>(bytes[end - 1]) & 0xC0) == 0x80) --end, ++back;
  if (end == 0) return bytes.size();
  const auto lead = static_cast<unsigned char>(bytes[end - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return back + 1 >= need ? bytes.size() : end - 1;
}

// Prints generated text as it grows, holding back what could still become a stop string or
// the rest of a UTF-8 character; stops at the first stop string (not printed).
class Streamer {
 public:
  Streamer(const TextGenerator& g, std::vector<std::string> stop) : g_(g), stop_(std::move(stop)) {
    for (const auto& s : stop_) hold_ = std::max(hold_, s.size());
  }
  /// Adds a token; false once a stop string has appeared.
  bool add(int64_t token) {
    if (token == g_.eos_id()) return true;
    ids_.push_back(token);
    const std::string text = g_.decode(ids_);
    size_t stop_at = std::string::npos;
    for (const auto& s : stop_)
      if (!s.empty()) stop_at = std::min(stop_at, text.find(s));
    if (stop_at != std::string::npos) {
      emit(text, stop_at);
      stopped_ = true;
      return false;
    }
    size_t safe = complete_utf8(text);
    if (hold_ > 1) safe = safe > hold_ - 1 ? complete_utf8(text.substr(0, safe - (hold_ - 1))) : 0;
    emit(text, safe);
    return true;
  }
  void finish() {
    if (!stopped_) emit(g_.decode(ids_), std::string::npos);
    std::cout << std::endl;
  }

 private:
  void emit(const std::string& text, size_t upto) {
    upto = std::min(upto, text.size());
    if (upto > printed_) {
      std::cout << text.substr(printed_, upto - printed_) << std::flush;
      printed_ = upto;
    }
  }
  const TextGenerator& g_;
  std::vector<std::string> stop_;
  std::vector<int64_t> ids_;
  size_t hold_ = 0, printed_ = 0;
  bool stopped_ = false;
};

int generate(const GenerateArgs& a, const std::string& text);
int generate_lines(const GenerateArgs& a);

int run_generate(const GenerateArgs& a) {
  if ((!a.prompt.empty()) + (!a.prompt_file.empty()) + (!a.prompts.empty()) > 1)
    throw Error("give one of --prompt TEXT, --prompt-file FILE and --prompts FILE");
  if (!a.prompts.empty() && a.repetition_penalty != 1.0)
    throw Error("--repetition-penalty is for one prompt at a time (--prompt or --prompt-file), not --prompts");
  const std::string text = read_prompt(a);
  checked_checkpoint_dir(a.checkpoint);
  GenerateArgs with_defaults = a;
  apply_generation_config(with_defaults);
  return a.prompts.empty() ? generate(with_defaults, text) : generate_lines(with_defaults);
}

// The checkpoint's language model on --device.
std::unique_ptr<TextGenerator> load_generator(const GenerateArgs& a) {
  return load_text_generator(a.checkpoint, resolve_device(a.device));
}

models::GenerationOptions generation_options(const GenerateArgs& a, const TextGenerator& g) {
  models::GenerationOptions options;
  options.eos_id = g.eos_id() >= 0 ? g.eos_id() : std::numeric_limits<int64_t>::max();
  options.max_new_tokens = a.max_new_tokens;
  options.num_beams = a.beam;
  return options;
}

models::SamplingOptions sampling_options(const GenerateArgs& a) {
  models::SamplingOptions sampling;
  sampling.do_sample = a.beam == 1 && !a.greedy;
  sampling.temperature = a.temperature;
  sampling.top_k = a.top_k;
  sampling.top_p = a.top_p;
  sampling.min_tokens_to_keep = a.min_tokens_to_keep;
  sampling.repetition_penalty = a.repetition_penalty;
  sampling.seed = static_cast<uint64_t>(a.seed);
  sampling.validate();
  return sampling;
}

int generate(const GenerateArgs& a, const std::string& text) {
  auto g = load_generator(a);
  torch::NoGradGuard no_grad;
  const std::vector<int64_t> prompt = prompt_ids(*g, text);
  auto decoding = g->start_decoding(prompt, !a.no_cache);
  models::GenerationOptions options = generation_options(a, *g);
  options.bos_id = decoding.first;
  const models::SamplingOptions sampling = sampling_options(a);
  std::cout << text << std::flush;
  Streamer streamer(*g, a.stop);
  if (a.beam > 1) {
    models::RepetitionPenalty penalty(a.repetition_penalty, prompt);
    const auto best = models::beam_search(*decoding.model, std::move(decoding.state), options,
                                          a.repetition_penalty != 1.0 ? &penalty : nullptr);
    for (int64_t token : best.at(0).at(0).tokens)
      if (!streamer.add(token)) break;
  } else {
    models::sample_decode(*decoding.model, std::move(decoding.state), options, sampling, prompt, nullptr,
                          [&](int64_t, int64_t token) { return streamer.add(token); });
  }
  streamer.finish();
  return 0;
}

// What `tokens` (the generated ids of one row) read as: up to eos, cut before the first stop
// string, without an incomplete UTF-8 character at the end.
std::string completion_text(const TextGenerator& g, std::vector<int64_t> tokens, const std::vector<std::string>& stop) {
  const auto eos = std::find(tokens.begin(), tokens.end(), g.eos_id());
  tokens.erase(eos, tokens.end());
  std::string text = g.decode(tokens);
  for (const auto& s : stop)
    if (!s.empty()) text = text.substr(0, text.find(s));
  return text.substr(0, complete_utf8(text));
}

// The generated tokens of each prompt of one batch, in order.
std::vector<std::vector<int64_t>> generate_batch(const GenerateArgs& a, TextGenerator& g,
                                                 const std::vector<std::vector<int64_t>>& prompts) {
  auto decoding = g.start_decoding(prompts, !a.no_cache);
  models::GenerationOptions options = generation_options(a, g);
  options.bos_id = decoding.first;
  std::vector<std::vector<int64_t>> out;
  if (a.beam > 1) {
    for (auto& best : models::beam_search(*decoding.model, std::move(decoding.state), options))
      out.push_back(best.at(0).tokens);
  } else {
    for (auto& h : models::sample_decode(*decoding.model, std::move(decoding.state), options, sampling_options(a)))
      out.push_back(h.tokens);
  }
  return out;
}

int generate_lines(const GenerateArgs& a) {
  const std::vector<std::string> lines = read_prompt_lines(a.prompts);
  auto g = load_generator(a);
  torch::NoGradGuard no_grad;
  std::vector<std::vector<int64_t>> ids;
  for (const auto& line : lines) ids.push_back(prompt_ids(*g, line));
  std::vector<size_t> order(ids.size());  // by length, so that a batch holds little padding
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return ids[x].size() < ids[y].size(); });
  std::vector<std::string> completions(ids.size());
  for (size_t begin = 0; begin < order.size(); begin += static_cast<size_t>(a.batch_size)) {
    const size_t end = std::min(order.size(), begin + static_cast<size_t>(a.batch_size));
    std::vector<std::vector<int64_t>> batch;
    for (size_t i = begin; i < end; ++i) batch.push_back(ids[order[i]]);
    const auto generated = generate_batch(a, *g, batch);
    for (size_t i = begin; i < end; ++i) completions[order[i]] = completion_text(*g, generated[i - begin], a.stop);
    std::cerr << "zoo: " << end << " of " << order.size() << " prompts" << std::endl;
  }
  for (size_t i = 0; i < lines.size(); ++i)
    std::cout << json{{"prompt", lines[i]}, {"completion", completions[i]}}.dump(-1, ' ', false,
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
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
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
  cmd->callback([a, cmd, exit_code] {
    for (const auto* option : cmd->get_options())
      if (option->count() > 0) a->given.insert(option->get_name());
    *exit_code = run_generate(*a);
  });
}

}  // namespace zoo::cli
