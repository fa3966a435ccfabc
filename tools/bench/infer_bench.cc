// zoo_bench_infer: the zoo side of tools/bench/infer_bench.sh (issue 64): CPU inference rows on
// a checkpoint directory, fp32 or int8, on the inputs tools/bench/infer_bench.py writes, timed
// (warm-up runs, then --repeat timed ones; one JSON line with the median), and what the row
// computes written for the equality checks against the plain-PyTorch and ONNX Runtime sides.
//
//   zoo_bench_infer --row ROW --model DIR --inputs FILE [--int8] [--threads N] [--warmup W]
//                   [--repeat R] [--out FILE] [--profile TRACE.json]
//   zoo_bench_infer --row peak [--threads N]   the fp32 matrix-product peak zoo reaches
//                   ({"fp32_gflops": G}: bench_util.h's matmul_peak, LibTorch's or zoo's linear)
//
// The model is loaded as `zoo generate|classify|translate` load theirs (io/inference_model.h's
// load_inference_model: memory check, strict weights, --quantize int8 through
// models::quantize_model), and each row runs the code those commands run, on token ids (the
// tokenizers are left out: every side gets the same ids):
//   gpt-prefill   the GPT's forward over the prompt batch with fresh key/value caches, as
//                 GPT2Decoder's prefill; writes the logits at INPUTS' "positions"
//   gpt-gen       greedy generation of INPUTS' new_tokens after each of INPUTS' prompts (equal
//                 lengths), one batch, through GPT2Decoder with the key/value cache and
//                 models::sample_decode (do_sample false), as zoo::Generator; writes the tokens
//   bert          BertForSequenceClassification's logits of input_ids/attention_mask, as
//                 zoo classify (before its softmax)
//   mt-encoder    the Transformer's encoder over every batch src_0.. (writes the states)
//   mt-translate  models::generate, beam 4, max length 50, length penalty 1, over every batch,
//                 the batches side by side (run_side_by_side) as zoo translate runs them; writes the tokens, one row per sentence
//   mt-sources    no timing: the source sentences of the text file --inputs as ids (zoo
//                 translate's text side of the checkpoint), one line each, written to --out
// --profile: a Chrome trace of the timed runs (LibTorch's profiler), for
// `infer_bench.py profile-table`.
#include <chrono>
#include <fstream>
#include <iostream>
#include <limits>

#include <CLI/CLI.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/threads.h"
#include "io/inference_model.h"
#include "io/safetensors.h"
#include "models/bert.h"
#include "models/encoder_decoder.h"
#include "models/generation.h"
#include "models/gpt.h"
#include "models/sampling.h"
#include "models/transformer.h"
#include "data/text.h"
#include "predict/translator.h"
#include "tools/bench/bench_util.h"

namespace {

using zoo::bench::median;
using zoo::bench::seconds_since;
using Outputs = std::vector<std::pair<std::string, torch::Tensor>>;

const torch::Tensor& input(const zoo::safetensors::File& f, const std::string& name) {
  auto it = f.tensors.find(name);
  if (it == f.tensors.end()) throw zoo::Error(zoo::cat("inputs: no tensor '", name, "'"));
  return it->second;
}

std::vector<torch::Tensor> batches(const zoo::safetensors::File& f) {
  std::vector<torch::Tensor> out;
  for (int64_t i = 0; i < input(f, "batches").item<int64_t>(); ++i) out.push_back(input(f, zoo::cat("src_", i)));
  return out;
}

// Sentences' token rows (ragged) as one (N, longest) int64 tensor padded with -1.
torch::Tensor ragged(const std::vector<std::vector<int64_t>>& rows) {
  size_t n = 1;
  for (const auto& r : rows) n = std::max(n, r.size());
  auto out = torch::full({static_cast<int64_t>(rows.size()), static_cast<int64_t>(n)}, -1, torch::kLong);
  for (size_t i = 0; i < rows.size(); ++i)
    for (size_t j = 0; j < rows[i].size(); ++j) out[static_cast<int64_t>(i)][static_cast<int64_t>(j)] = rows[i][j];
  return out;
}

Outputs one(const std::string& name, const torch::Tensor& t) { return Outputs{std::make_pair(name, t)}; }

int64_t model_int(const zoo::json& section, const std::string& key) {
  if (!section.contains(key)) throw zoo::Error(zoo::cat("config.json: model.", key, " is missing"));
  return section.at(key).get<int64_t>();
}

}  // namespace

int main(int argc, char** argv) {
  zoo::use_startup_environment(argv);  // as the zoo program: OMP_WAIT_POLICY, OPENBLAS_CORETYPE
  std::string row, dir, inputs_path, out_path, profile_path;
  bool int8 = false;
  int64_t threads = 2, warmup = 1, repeat = 3;
  CLI::App app{"zoo inference rows (tools/bench/infer_bench.sh)"};
  app.add_option("--row", row)->required()->check(
      CLI::IsMember({"gpt-prefill", "gpt-gen", "bert", "mt-encoder", "mt-translate", "mt-sources", "peak"}));
  app.add_option("--model", dir, "checkpoint directory (every row but peak)");
  app.add_option("--inputs", inputs_path, "safetensors of infer_bench.py inputs (every row but peak)");
  app.add_flag("--int8", int8, "--quantize int8");
  app.add_option("--threads", threads);
  app.add_option("--warmup", warmup);
  app.add_option("--repeat", repeat)->check(CLI::PositiveNumber);
  app.add_option("--out", out_path, "write what the row computes (safetensors)");
  app.add_option("--profile", profile_path, "Chrome trace of the timed runs");
  CLI11_PARSE(app, argc, argv);
  zoo::configure_cpu_threads(static_cast<int>(threads));
  if (row == "peak") {
    std::printf("{\"fp32_gflops\":%.1f}\n", zoo::bench::matmul_peak(1024, torch::kCPU, torch::kFloat) / 1e9);
    return 0;
  }
  if (dir.empty() || inputs_path.empty()) return std::fprintf(stderr, "zoo_bench_infer: --row %s needs --model and --inputs\n", row.c_str()), 2;
  try {
    const auto source = zoo::open_inference_source(dir);
    const zoo::json& section = source.config.at("model");
    if (row == "mt-sources") {  // as SentenceTranslator::translate encodes them
      auto text = zoo::load_translation_text(source.dir, source.config);
      text.find_special_ids(dir);
      std::ifstream in(inputs_path);
      std::ofstream out(out_path);
      if (!in || !out) throw zoo::Error(zoo::cat(inputs_path, " or ", out_path, ": cannot open"));
      std::string line;
      while (std::getline(in, line)) {
        const std::string sentence = zoo::data::python_strip(line);
        if (sentence.empty()) continue;
        for (int64_t id : text.encode_source(sentence, model_int(section, "max_position_embeddings"), nullptr))
          out << id << ' ';
        out << '\n';
      }
      return 0;
    }
    auto module = zoo::load_inference_model(source.dir, source.config, torch::kCPU, int8 ? "int8" : "");
    const auto in = zoo::safetensors::load(inputs_path);
    torch::NoGradGuard no_grad;
    std::function<Outputs()> run;
    if (row == "gpt-prefill" || row == "gpt-gen") {
      zoo::models::GPT2LMHeadModel model(std::dynamic_pointer_cast<zoo::models::GPT2LMHeadModelImpl>(module));
      if (model.is_empty()) throw zoo::Error(dir + ": not a GPT-2 language model");
      if (row == "gpt-prefill") {
        const auto ids = input(in, "input_ids"), positions = input(in, "positions");
        run = [model, ids, positions]() mutable {
          std::vector<zoo::models::KVCache> caches;  // as GPT2Decoder::prefill
          auto logits = model->forward(ids, &caches, torch::Tensor());
          return one("logits", logits.index_select(1, positions));
        };
      } else {
        const auto prompts_t = input(in, "prompts").contiguous();
        const int64_t new_tokens = input(in, "new_tokens").item<int64_t>();
        std::vector<std::vector<int64_t>> prompts;
        for (int64_t r = 0; r < prompts_t.size(0); ++r) {
          const int64_t* p = prompts_t[r].data_ptr<int64_t>();
          prompts.emplace_back(p, p + prompts_t.size(1));
        }
        run = [model, prompts, new_tokens]() {
          // zoo::Generator's greedy path (api/generator.cc): one row, or a batch of rows.
          auto decoder = std::make_shared<zoo::models::GPT2Decoder>(model, /*use_cache=*/true);
          auto state = prompts.size() == 1 ? decoder->start(prompts[0]) : decoder->start(prompts, 0);
          zoo::models::GenerationOptions g;
          g.bos_id = prompts.size() == 1 ? prompts[0].back() : 0;
          g.eos_id = std::numeric_limits<int64_t>::max();  // never produced: new_tokens tokens
          g.max_new_tokens = new_tokens;
          g.num_beams = 1;
          zoo::models::SamplingOptions s;
          s.do_sample = false;
          auto hyps = zoo::models::sample_decode(*decoder, std::move(state), g, s,
                                                 prompts.size() == 1 ? prompts[0] : std::vector<int64_t>{});
          std::vector<std::vector<int64_t>> tokens;
          for (const auto& h : hyps) tokens.push_back(h.tokens);
          return one("tokens", ragged(tokens));
        };
      }
    } else if (row == "bert") {
      zoo::models::BertForSequenceClassification model(
          std::dynamic_pointer_cast<zoo::models::BertForSequenceClassificationImpl>(module));
      if (model.is_empty()) throw zoo::Error(dir + ": not a BERT sequence classifier");
      const auto ids = input(in, "input_ids"), mask = input(in, "attention_mask");
      run = [model, ids, mask]() mutable { return one("logits", model->forward(ids, {}, mask)); };
    } else {
      auto model = std::dynamic_pointer_cast<zoo::models::TransformerImpl>(module);
      if (!model) throw zoo::Error(dir + ": not a zoo Transformer");
      const auto srcs = batches(in);
      if (row == "mt-encoder") {
        run = [model, srcs]() {
          std::vector<torch::Tensor> states;
          for (const auto& s : srcs) states.push_back(model->encode(s).reshape(-1));
          return one("logits", torch::cat(states));
        };
      } else {
        const auto g = zoo::models::search_options(*model, model_int(section, "bos_id"), model_int(section, "eos_id"),
                                                   /*num_beams=*/4, /*max_length=*/50, /*length_penalty=*/1.0);
        run = [model, srcs, g]() {  // the batches side by side, as SentenceTranslator::translate runs them
          std::vector<std::vector<std::vector<int64_t>>> found(srcs.size());
          zoo::run_side_by_side(srcs.size(), [&](size_t b) {
            for (const auto& best : zoo::models::generate(*model, srcs[b], g)) found[b].push_back(best.at(0).tokens);
          });
          std::vector<std::vector<int64_t>> tokens;
          for (auto& batch : found)
            for (auto& t : batch) tokens.push_back(std::move(t));
          return one("tokens", ragged(tokens));
        };
      }
    }
    std::vector<double> times;
    Outputs result;
    std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
    for (int64_t i = 0; i < warmup + repeat; ++i) {
      if (i == warmup && !profile_path.empty())
        profile = std::make_unique<torch::autograd::profiler::RecordProfile>(profile_path);
      const auto t0 = std::chrono::steady_clock::now();
      result = run();
      if (i >= warmup) times.push_back(seconds_since(t0));
    }
    profile.reset();
    if (!out_path.empty()) zoo::safetensors::save(out_path, result);
    std::cout << "{\"impl\":\"zoo\",\"row\":\"" << row << "\",\"int8\":" << (int8 ? "true" : "false")
              << ",\"threads\":" << torch::get_num_threads() << ",\"median_ms\":" << 1000 * median(times)
              << ",\"runs\":" << times.size() << "}" << std::endl;
  } catch (const zoo::Error& e) {
    std::cerr << "zoo_bench_infer: " << e.what() << std::endl;
    return 1;
  }
  return 0;
}
