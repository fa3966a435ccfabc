// zoo_bench_gpt: the GPT benchmarks of tools/bench/gpt_bench.sh (and tools/check_gpu.sh).
//   --mode train: times training steps (forward, cross-entropy, backward, clipping to norm 1,
//     AdamW) on random token windows, as tools/bench/gpt_bench.py does for a nanoGPT-style
//     Python model; prints JSON with the median step, the model FLOPs per step (6 N + 12 L H T
//     per token, Kaplan et al. / PaLM appendix B), the machine's measured matrix-multiply peak
//     on the same device, threads and precision, and the model FLOPs utilisation (MFU) of the
//     median step. --device cuda and --precision bf16 (autocast, as train.precision=bf16; fp16:
//     autocast with loss scaling, as train.precision=fp16) for
//     the GPU figures, e.g. GPT-2 124M:
//       zoo_bench_gpt --device cuda --precision bf16 --layers 12 --heads 12 --embd 768
//         --block 1024 --vocab 50257 --batch 16
//   --mode generate: greedy decoding of --new tokens after a --prompt-long random prompt,
//     with the key/value cache and recomputing the prefix every step; prints both times, the
//     speed-up and whether the outputs are the same.
//   --mode load: a checkpoint of the model written to a temporary file, then the median time of
//     reading it (safetensors::load) and of the check that every tensor is finite
//     (io/checkpoint.h's check_finite, run on every load); and of the memory budget
//     (train/memory_budget.h) that zoo train checks before building the model.
//   zoo_bench_gpt --layers 4 --heads 4 --embd 128 --block 64 --vocab 65 --batch 12 --threads 2
//   ZOO_BENCH_PROFILE=FILE: a Chrome trace of the timed training steps, or of the cached
//   generation (chrome://tracing).
//   ZOO_BENCH_PHASES=1: also the median time of each phase (forward with the loss, backward,
//   clipping, AdamW), the device synchronised between them (GPU time per phase on CUDA).
//   ZOO_BENCH_KERNELS=FILE (LibTorch 2.x, CUDA): a Kineto trace with the GPU kernels of the
//   timed steps, for tools/bench/kernel_table.py.
//   --async-clip: clipping without reading the norm back to the host (zoo train reads it to
//   log it). --cuda-graph: the whole step (forward to AdamW, clipping without reading back)
//   captured once as a CUDA graph and replayed (LibTorch 2.x, CUDA). --unfused-loss: the output
//   layer's loss as before its fused form (models/kernels/cross_entropy.h), for before/after.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <iostream>
#include <optional>

#include <CLI/CLI.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/lora.h"
#include "models/registry.h"
#include "train/memory_budget.h"
#include "core/threads.h"
#include "models/generation.h"
#include "models/gpt.h"
#include "models/kernels/cross_entropy.h"
#include "tools/bench/bench_util.h"
#include "tools/bench/kernel_trace.h"
#include "io/checkpoint.h"
#include "train/cuda_graph.h"
#include "train/device.h"
#include "train/grad_scaler.h"
#include "train/memory.h"
#include "train/optimizers.h"
#include "train/precision.h"
#include "io/safetensors.h"
#include "train/slices.h"

namespace {

using zoo::bench::median;
using zoo::bench::seconds_since;
using zoo::bench::matmul_peak;
using zoo::bench::sync;

struct TrainSetup {
  int64_t batch, steps, warmup, shards;
  torch::Device device;
  std::string precision;  // fp32, bf16 or fp16
  bool async_clip, cuda_graph, recompute;
  int64_t lora;  // rank of LoRA adapters on c_attn (train.lora); 0 = full fine-tuning
  bool unfused_loss;  // the output layer's loss as before linear_cross_entropy_fused
  bool amp() const { return precision != "fp32"; }
};

int train_mode(const zoo::models::GPT2Options& o, const TrainSetup& s) {
  torch::manual_seed(0);
  zoo::models::GPT2LMHeadModel model(o);
  model->to(s.device);
  model->train();
  zoo::models::set_gradient_checkpointing(*model, s.recompute);
  if (s.lora > 0) {
    zoo::models::LoraOptions lora;
    lora.r = s.lora;
    lora.alpha = 2.0 * static_cast<double>(s.lora);
    lora.target_modules = {"c_attn"};
    zoo::models::add_lora(*model, lora, {});
  }
  std::vector<torch::Tensor> params;  // the trained ones: with LoRA, the adapters only
  for (const auto& p : model->parameters())
    if (p.requires_grad()) params.push_back(p);
  zoo::ThreadedAdamW opt(params, torch::optim::AdamWOptions(1e-3).weight_decay(0.1));
  const int64_t t = o.n_positions;
  auto ids = torch::randint(0, o.vocab_size, {s.batch, t + 1}, torch::kLong).to(s.device);
  auto x = ids.narrow(1, 0, t).contiguous(), y = ids.narrow(1, 1, t).contiguous();
  auto* body = model->named_children()["transformer"]->as<zoo::models::GPT2ModelImpl>();  // for --unfused-loss
  auto loss_of = [&](const zoo::Batch& b) {
    zoo::AutocastGuard autocast(s.amp(), s.device, zoo::autocast_dtype(s.precision));  // the forward pass, as zoo train
    if (!s.unfused_loss) return model->loss(b["input_ids"], b["labels"]);
    return zoo::models::linear_cross_entropy_unfused(body->forward(b["input_ids"]), body->wte->weight, b["labels"]);
  };
  // ZOO_BENCH_PHASES=1: the device is also synchronised between forward, backward, clipping
  // and AdamW, and each phase's median is printed (one slice: --shards 1).
  const bool phases = std::getenv("ZOO_BENCH_PHASES") != nullptr;
  if (phases && (s.shards != 1 || s.cuda_graph)) throw zoo::Error("ZOO_BENCH_PHASES needs --shards 1 and no --cuda-graph");
  std::vector<double> times, phase_times[4];
  auto lap = [&](std::chrono::steady_clock::time_point& t, int phase, bool timed) {
    sync(s.device);
    if (timed) phase_times[phase].push_back(seconds_since(t));
    t = std::chrono::steady_clock::now();
  };
  const zoo::Batch batch{{{"input_ids", x}, {"labels", y}}, s.batch, 0};
  std::optional<zoo::GradScaler> scaler;  // fp16: as zoo train (train/grad_scaler.h)
  if (s.precision == "fp16") scaler.emplace();
  int64_t skipped = 0;
  auto clip = [&] {
    if (s.async_clip || s.cuda_graph) zoo::clip_grad_norm_async(params, 1.0);
    else zoo::clip_grad_norm(params, 1.0);  // as zoo train
  };
  // As train.cuda_graphs (train/graphed_step.cc): a few real steps on the side stream, then the
  // captured one; the gradients unset before each so that backward allocates them.
  std::unique_ptr<zoo::CudaGraphStep> graph;
  if (s.cuda_graph)
    graph = std::make_unique<zoo::CudaGraphStep>(
        [&, runs = 0]() mutable {
          opt.zero_grad();
          loss_of(batch).backward();
          clip();
          opt.set_capturing(++runs > 3);
          opt.step();
          opt.set_capturing(false);
        },
        /*warmup=*/3);
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
  std::unique_ptr<zoo::bench::KernelTrace> kernels;
  for (int64_t i = 0; i < s.warmup + s.steps; ++i) {
    if (i == s.warmup && std::getenv("ZOO_BENCH_PROFILE"))
      profile = std::make_unique<torch::autograd::profiler::RecordProfile>(std::getenv("ZOO_BENCH_PROFILE"));
    if (i == s.warmup && std::getenv("ZOO_BENCH_KERNELS")) kernels = std::make_unique<zoo::bench::KernelTrace>();
    sync(s.device);
    const auto t0 = std::chrono::steady_clock::now();
    auto t = t0;
    const bool timed = i >= s.warmup;
    if (graph) {
      opt.before_replay();
      graph->replay();
    } else {
      opt.zero_grad();
      const double scale = scaler ? scaler->scale() : 1.0;
      if (phases) {
        auto loss = loss_of(batch);
        lap(t, 0, timed);
        (loss * scale).backward();
        lap(t, 1, timed);
      } else {
        zoo::forward_backward(loss_of, batch, scale, s.shards, params, {},
                              /*onednn=*/s.amp() && s.device.is_cpu());
      }
      const bool skip = scaler && scaler->unscale(params);
      if (!skip) clip();
      if (phases) lap(t, 2, timed);
      if (!skip) opt.step();
      if (scaler) scaler->update(skip);
      skipped += skip;
      if (phases) lap(t, 3, timed);
    }
    sync(s.device);
    if (timed) times.push_back(seconds_since(t0));
  }
  profile.reset();
  if (kernels) kernels->save(std::getenv("ZOO_BENCH_KERNELS"));
  std::string phase_json;
  if (phases) {
    const char* names[] = {"forward", "backward", "clip", "optimizer"};
    for (int k = 0; k < 4; ++k)
      phase_json += zoo::cat(k ? "," : ",\"phase_ms\":{", "\"", names[k], "\":", 1000 * median(phase_times[k]));
    phase_json += "}";
  }
  int64_t n = 0, trained = 0;  // parameters without the position table (Kaplan et al.'s N)
  for (const auto& p : model->named_parameters())
    if (p.key() != "transformer.wpe.weight" && !zoo::models::is_lora_name(p.key())) n += p.value().numel();
  for (const auto& p : params) trained += p.numel();
  const double tokens = static_cast<double>(s.batch * t);
  // 6N per token: forward 2N, backward 2N for the inputs' gradients and 2N for the weights'
  // (LoRA computes no gradient of the frozen weights: 4N).
  const double flops = tokens * ((s.lora > 0 ? 4.0 : 6.0) * n + 12.0 * o.n_layer * o.n_embd * t);
  const double step = median(times);
  const auto peaks = zoo::memory_peaks(s.device);  // before matmul_peak's large matrices
  const double peak = matmul_peak(s.device.is_cpu() ? 1024 : 8192, s.device,
                                  s.amp() ? zoo::autocast_dtype(s.precision) : torch::kFloat);
  std::cout << "{\"impl\":\"zoo (C++)\",\"device\":\"" << s.device.str() << "\",\"precision\":\""
            << s.precision << "\",\"cuda_graph\":" << (s.cuda_graph ? "true" : "false")
            << ",\"skipped_steps\":" << skipped << ",\"async_clip\":" << (s.async_clip || s.cuda_graph ? "true" : "false") << ",\"threads\":" << torch::get_num_threads() << ",\"shards\":" << s.shards
            << ",\"batch\":" << s.batch << ",\"median_step_ms\":" << 1000 * step
            << ",\"tokens_per_s\":" << tokens / step
            << ",\"model_gflop_per_step\":" << flops / 1e9 << ",\"matmul_peak_gflops\":" << peak / 1e9
            << ",\"mfu\":" << flops / step / peak << ",\"gradient_checkpointing\":" << (s.recompute ? "true" : "false")
            << ",\"peak_rss_mib\":" << peaks.rss_mib << ",\"cuda_peak_allocated_mib\":" << peaks.cuda_allocated_mib
            << ",\"lora_r\":" << s.lora
            << ",\"trained_parameters\":" << trained << ",\"adamw_state_mib\":" << 8.0 * trained / (1 << 20) << phase_json
            << "}" << std::endl;
  return 0;
}

int load_mode(const zoo::models::GPT2Options& o) {
  torch::manual_seed(0);
  zoo::models::GPT2LMHeadModel model(o);
  const std::string path = zoo::cat(std::filesystem::temp_directory_path().string(), "/zoo-bench-load-", getpid(),
                                     ".safetensors");
  zoo::save_model(*model, path, zoo::json{{"model", {{"model_type", "gpt2"}}}});
  std::vector<double> load_s, check_s;
  for (int i = 0; i < 5; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    const auto file = zoo::safetensors::load(path);
    load_s.push_back(seconds_since(t0));
    t0 = std::chrono::steady_clock::now();
    zoo::check_finite(path, file.tensors);
    check_s.push_back(seconds_since(t0));
  }
  std::filesystem::remove(path);
  // The memory budget zoo train checks before building: estimate from the config + what is available.
  const zoo::json config = {{"task", "language_modeling"},
                            {"model", zoo::models::resolve_model_config(zoo::json{{"model_type", "gpt2"}})},
                            {"data", {{"block_size", o.n_positions}}},
                            {"train", zoo::json::object()}};
  std::vector<double> budget_s;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    zoo::check_memory_budget(zoo::estimate_training_memory(config), torch::kCPU, "bench");
    budget_s.push_back(seconds_since(t0));
  }
  int64_t n = 0;
  for (const auto& p : model->parameters()) n += p.numel();
  std::cout << "{\"impl\":\"zoo (C++)\",\"threads\":" << torch::get_num_threads() << ",\"parameters\":" << n
            << ",\"load_ms\":" << 1000 * median(load_s) << ",\"finite_check_ms\":" << 1000 * median(check_s)
            << ",\"memory_budget_ms\":" << 1000 * median(budget_s) << "}" << std::endl;
  return 0;
}

int generate_mode(zoo::models::GPT2Options o, int64_t prompt_len, int64_t new_tokens) {
  torch::manual_seed(0);
  zoo::models::GPT2LMHeadModel model(o);
  model->eval();
  torch::NoGradGuard no_grad;
  auto prompt_t = torch::randint(0, o.vocab_size, {prompt_len}, torch::kLong);
  std::vector<int64_t> prompt(prompt_t.data_ptr<int64_t>(), prompt_t.data_ptr<int64_t>() + prompt_len);
  zoo::models::GenerationOptions g;
  g.num_beams = 1;
  g.max_new_tokens = new_tokens;
  g.bos_id = prompt.back();
  g.eos_id = o.vocab_size;  // never produced: exactly new_tokens tokens
  std::vector<int64_t> outputs[2];
  double secs[2];
  for (int cached = 1; cached >= 0; --cached) {
    zoo::models::GPT2Decoder decoder(model, cached == 1);
    std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;  // of the cached pass
    if (cached && std::getenv("ZOO_BENCH_PROFILE"))
      profile = std::make_unique<torch::autograd::profiler::RecordProfile>(std::getenv("ZOO_BENCH_PROFILE"));
    const auto t0 = std::chrono::steady_clock::now();
    outputs[cached] = zoo::models::greedy_decode(decoder, decoder.start(prompt), g)[0].tokens;
    secs[cached] = seconds_since(t0);
  }
  std::cout << "{\"impl\":\"zoo (C++)\",\"threads\":" << torch::get_num_threads() << ",\"new_tokens\":" << new_tokens
            << ",\"cached_s\":" << secs[1] << ",\"recomputed_s\":" << secs[0]
            << ",\"speedup\":" << secs[0] / secs[1] << ",\"same_output\":" << (outputs[0] == outputs[1] ? "true" : "false")
            << "}" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  zoo::use_startup_environment(argv);  // may re-execute (OMP_WAIT_POLICY, OPENBLAS_CORETYPE)
  zoo::models::GPT2Options o;
  o.vocab_size = 65, o.n_positions = 64, o.n_embd = 128, o.n_layer = 4, o.n_head = 4;
  o.resid_pdrop = o.embd_pdrop = o.attn_pdrop = 0;
  std::string mode = "train";
  int64_t batch = 12, steps = 30, warmup = 5, threads = 2, shards = 0, prompt = 16, new_tokens = 200;
  std::string device_spec = "cpu", precision = "fp32";
  CLI::App app{"GPT benchmarks"};
  app.add_option("--mode", mode)->check(CLI::IsMember({"train", "generate", "load"}));
  app.add_option("--layers", o.n_layer);
  app.add_option("--heads", o.n_head);
  app.add_option("--embd", o.n_embd);
  app.add_option("--block", o.n_positions, "context = training window");
  app.add_option("--vocab", o.vocab_size);
  double dropout = 0;
  app.add_option("--dropout", dropout, "train: resid_pdrop = embd_pdrop = attn_pdrop (nanoGPT's dropout)");
  app.add_option("--batch", batch);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  app.add_option("--shards", shards, "batch slices run at once (default: as zoo train, one per thread on the CPU)");
  app.add_option("--device", device_spec, "train: cpu, cuda, cuda:N or mps");
  app.add_option("--precision", precision, "train: fp32, bf16 or fp16 autocast as train.precision")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  bool async_clip = false, cuda_graph = false, recompute = false, unfused_loss = false;
  int64_t lora = 0;
  app.add_option("--lora", lora, "train: LoRA adapters of this rank on c_attn (alpha 2r), the rest frozen (train.lora)");
  app.add_flag("--gradient-checkpointing", recompute, "train: recompute each block in backward (train.gradient_checkpointing)");
  app.add_flag("--async-clip", async_clip, "train: clip without reading the norm back to the host");
  app.add_flag("--cuda-graph", cuda_graph, "train: capture the step as a CUDA graph and replay it (CUDA, LibTorch 2.x)");
  app.add_flag("--unfused-loss", unfused_loss,
               "train: the loss through linear() and fp32 logits, as before the fused form (CUDA bf16/fp16)");
  app.add_option("--prompt", prompt, "generate: prompt tokens");
  app.add_option("--new", new_tokens, "generate: tokens to generate");
  CLI11_PARSE(app, argc, argv);
  o.resid_pdrop = o.embd_pdrop = o.attn_pdrop = dropout;
  zoo::configure_cpu_threads(static_cast<int>(threads));
  if (mode == "train") {
    try {
      const torch::Device device = zoo::resolve_device(device_spec);
      zoo::check_precision(precision, device);
      // As zoo train: one slice per core on the CPU.
      if (shards <= 0) shards = device.is_cpu() ? torch::get_num_threads() : 1;
      if (cuda_graph && !device.is_cuda()) throw zoo::Error("--cuda-graph needs --device cuda");
      if (cuda_graph && precision == "fp16") throw zoo::Error("--cuda-graph does not run with fp16's loss scaling");
      if (recompute) shards = 1;  // as zoo train: recomputed blocks run one slice
      return train_mode(o, {batch, steps, warmup, shards, device, precision, async_clip, cuda_graph, recompute, lora,
                                  unfused_loss});
    } catch (const zoo::Error& e) {
      std::cerr << "zoo_bench_gpt: " << e.what() << std::endl;
      return 2;
    }
  }
  if (mode == "load") return load_mode(o);
  return generate_mode(o, prompt, new_tokens);
}
