// zoo_bench_transformer: the Transformer benchmarks of tools/bench/transformer_bench.sh.
//   --mode train: times training steps (teacher-forced forward, label-smoothed cross-entropy
//     with padding ignored, backward, clipping to norm 1, Adam) on random padded batches, as
//     tools/bench/transformer_bench.py does for a torch.nn.Transformer model of the same
//     sizes; as zoo train, one batch slice per core on the CPU (--shards; zoo::forward_backward,
//     slices counted by their target tokens); prints JSON with the median step. --device cuda (cuda:N, mps) runs the model and
//     the batches there, the device synchronised before each clock reading; --precision bf16
//     autocasts the forward pass on that device (as train.precision=bf16).
//   --mode decode: beam search (--beams) of exactly --new tokens (end of sentence made
//     impossible) for --sentences random sources, with the key/value cache and recomputing
//     the decoder over the prefix every step; prints both times, the speed-up and whether the
//     outputs are the same.
#include <chrono>
#include <memory>
#include <iostream>

#include <CLI/CLI.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/threads.h"
#include "models/transformer.h"
#include "tools/bench/bench_util.h"
#include "train/device.h"
#include "train/optimizers.h"
#include "train/precision.h"
#include "train/slices.h"

namespace {

constexpr int64_t kPad = 0, kBos = 1, kEos = 2, kFirstWord = 3;

using zoo::bench::seconds_since;
using zoo::bench::sync;

// (B, len) random tokens; see bench_util.h.
torch::Tensor synthetic(int64_t batch, int64_t len, int64_t vocab, bool framed) {
  return zoo::bench::synthetic_sentences(batch, len, vocab, framed, {kPad, kBos, kEos, kFirstWord});
}

struct TrainSetup {
  int64_t batch, src_len, tgt_len, steps, warmup, shards;
  torch::Device device;
  bool bf16;
};

// The floating-point operations of one training step's matrix products, padding included (every
// side computes it): 2 per multiply-add, the forward's three times over (the backward pass takes
// two products for each of the forward's). Per encoder token its layers' projections and
// feed-forward, and the decoder's cross-attention keys and values; per decoder token its layers'
// self- and cross-attention projections, feed-forward and the output layer; and the attention's
// two products (scores and weighted sum) over each pair of positions.
double step_flops(const zoo::models::TransformerOptions& o, int64_t batch, int64_t src_len, int64_t dec_len) {
  const double d = static_cast<double>(o.d_model), s = static_cast<double>(batch * src_len),
               t = static_cast<double>(batch * dec_len);
  const double encoder = o.encoder_layers * (4 * d * d + 2 * d * o.encoder_ffn_dim) * s;
  const double cross_memory = o.decoder_layers * 2 * d * d * s;
  const double decoder = (o.decoder_layers * (4 * d * d + 2 * d * d + 2 * d * o.decoder_ffn_dim) + d * o.target_vocab_size) * t;
  const double attention = 2 * d * batch *
                           (o.encoder_layers * src_len * src_len + o.decoder_layers * (dec_len * dec_len + dec_len * src_len));
  return 3 * 2 * (encoder + cross_memory + decoder + attention);
}

int train_mode(zoo::models::Transformer& model, const TrainSetup& s) {
  const auto& o = model->options();
  const int64_t tgt_len = s.tgt_len;
  model->to(s.device);
  model->train();
  // As zoo train runs tools/recipes/transformer_cmn.json (train.optim=adamw; fused on CUDA), with
  // no weight decay: the twin's Adam, update for update.
  zoo::ThreadedAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3).betas({0.9, 0.98}).weight_decay(0));
  std::vector<double> times;
  for (int64_t i = 0; i < s.warmup + s.steps; ++i) {
    auto src = synthetic(s.batch, s.src_len, o.source_vocab_size, false).to(s.device);
    auto tgt = synthetic(s.batch, tgt_len, o.target_vocab_size, true).to(s.device);
    sync(s.device);
    const auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    auto loss_of = [&](const zoo::Batch& b) {
      torch::Tensor logits;
      {
        zoo::AutocastGuard autocast(s.bf16, s.device);  // the forward pass, as zoo train
        logits = model->forward(b["src"], b["tgt"].narrow(1, 0, tgt_len - 1)).to(torch::kFloat);
      }
      return zoo::Loss{torch::nn::functional::cross_entropy(
          logits.reshape({-1, logits.size(-1)}), b["tgt"].narrow(1, 1, tgt_len - 1).reshape({-1}),
          torch::nn::functional::CrossEntropyFuncOptions().ignore_index(kPad).label_smoothing(0.1))};
    };
    auto target_tokens = [&](const zoo::Batch& b) {
      return b["tgt"].narrow(1, 1, tgt_len - 1).ne(kPad).sum().item<double>();
    };
    zoo::forward_backward(loss_of, zoo::Batch{{{"src", src}, {"tgt", tgt}}, s.batch, 0}, 1.0, s.shards,
                          model->parameters(), {}, /*onednn=*/s.bf16 && s.device.is_cpu(), target_tokens);
    zoo::clip_grad_norm(model->parameters(), 1.0);
    opt.step();
    sync(s.device);
    if (i >= s.warmup) times.push_back(seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  const double step = times[times.size() / 2], flops = step_flops(o, s.batch, s.src_len, tgt_len - 1);
  const double peak = zoo::bench::matmul_peak(s.device.is_cpu() ? 1024 : 8192, s.device, s.bf16 ? torch::kBFloat16 : torch::kFloat);
  std::cout << "{\"impl\":\"zoo (C++)\",\"mode\":\"train\",\"device\":\"" << s.device.str()
            << "\",\"precision\":\"" << (s.bf16 ? "bf16" : "fp32") << "\",\"threads\":" << torch::get_num_threads()
            << ",\"shards\":" << s.shards << ",\"batch\":" << s.batch << ",\"median_step_ms\":" << 1000 * step
            << ",\"model_gflop_per_step\":" << flops / 1e9 << ",\"matmul_peak_gflops\":" << peak / 1e9
            << ",\"mfu\":" << flops / step / peak << "}"
            << std::endl;
  return 0;
}

int decode_mode(zoo::models::Transformer& model, int64_t sentences, int64_t src_len, int64_t beams, int64_t tokens) {
  {
    torch::NoGradGuard no_grad;  // end of sentence impossible: every search runs `tokens` steps
    model->named_buffers()["final_logits_bias"][0][kEos] = -1e9;
  }
  auto src = synthetic(sentences, src_len, model->options().source_vocab_size, false);
  zoo::models::GenerationOptions g;
  g.bos_id = kBos, g.eos_id = kEos, g.num_beams = beams, g.max_new_tokens = tokens;
  std::vector<std::vector<int64_t>> outputs[2];
  double seconds[2] = {0, 0};
  for (int cached = 1; cached >= 0; --cached) {
    model->set_use_cache(cached == 1);
    zoo::models::generate(*model, src.narrow(0, 0, 1), g);  // warm-up
    std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
    if (std::getenv("ZOO_BENCH_PROFILE") && cached)
      profile = std::make_unique<torch::autograd::profiler::RecordProfile>(std::getenv("ZOO_BENCH_PROFILE"));
    const auto t0 = std::chrono::steady_clock::now();
    for (const auto& nbest : zoo::models::generate(*model, src, g)) outputs[cached].push_back(nbest.front().tokens);
    seconds[cached] = seconds_since(t0);
    profile.reset();
  }
  std::cout << "{\"impl\":\"zoo (C++)\",\"mode\":\"decode\",\"threads\":" << torch::get_num_threads()
            << ",\"beams\":" << beams << ",\"sentences\":" << sentences << ",\"tokens\":" << tokens
            << ",\"cached_s\":" << seconds[1] << ",\"recomputed_s\":" << seconds[0]
            << ",\"speedup\":" << seconds[0] / seconds[1]
            << ",\"same_output\":" << (outputs[0] == outputs[1] ? "true" : "false") << "}" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  zoo::use_startup_environment(argv);  // may re-execute (OMP_WAIT_POLICY, OPENBLAS_CORETYPE)
  zoo::models::TransformerOptions o;   // defaults: transformer-small on cmn.txt's vocabularies
  o.source_vocab_size = 3500, o.target_vocab_size = 7000;
  o.d_model = 256, o.encoder_layers = o.decoder_layers = 3;
  o.encoder_attention_heads = o.decoder_attention_heads = 4;
  o.encoder_ffn_dim = o.decoder_ffn_dim = 1024;
  o.dropout = 0.1;
  std::string mode = "train";
  int64_t batch = 64, src_len = 14, tgt_len = 14, steps = 10, warmup = 2, threads = 2, layers = 3, ffn = 1024,
          heads = 4, sentences = 10, beams = 4, tokens = 50, shards = 0;
  std::string device_spec = "cpu", precision = "fp32";
  CLI::App app{"Transformer benchmark"};
  app.add_option("--mode", mode)->check(CLI::IsMember({"train", "decode"}));
  app.add_option("--d-model", o.d_model);
  app.add_option("--layers", layers, "encoder and decoder layers each");
  app.add_option("--heads", heads);
  app.add_option("--ffn", ffn);
  app.add_option("--dropout", o.dropout);
  app.add_option("--src-vocab", o.source_vocab_size);
  app.add_option("--tgt-vocab", o.target_vocab_size);
  app.add_option("--batch", batch);
  app.add_option("--src-len", src_len);
  app.add_option("--tgt-len", tgt_len);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  app.add_option("--shards", shards,
                 "train mode: batch slices run at once (default: as zoo train, one per thread on the CPU, else 1)");
  app.add_option("--device", device_spec, "train mode: cpu, cuda, cuda:N or mps");
  app.add_option("--precision", precision, "train mode: fp32, or bf16 autocast as train.precision=bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--sentences", sentences, "decode mode: sources decoded in one batch");
  app.add_option("--beams", beams);
  app.add_option("--new", tokens, "decode mode: tokens generated per sentence");
  CLI11_PARSE(app, argc, argv);
  o.encoder_layers = o.decoder_layers = layers;
  o.encoder_attention_heads = o.decoder_attention_heads = heads;
  o.encoder_ffn_dim = o.decoder_ffn_dim = ffn;
  o.max_position_embeddings = std::max<int64_t>({256, src_len, tgt_len, tokens + 1});
  zoo::configure_cpu_threads(static_cast<int>(threads));  // as the zoo binary does
  torch::manual_seed(0);
  zoo::models::Transformer model(o);
  if (mode == "train") {
    try {
      const torch::Device device = zoo::resolve_device(device_spec);
      zoo::check_precision(precision, device);
      if (shards <= 0) shards = device.is_cpu() ? torch::get_num_threads() : 1;
      return train_mode(model, {batch, src_len, tgt_len, steps, warmup, shards, device, precision == "bf16"});
    } catch (const zoo::Error& e) {
      std::cerr << "zoo_bench_transformer: " << e.what() << std::endl;
      return 2;
    }
  }
  return decode_mode(model, sentences, src_len, beams, tokens);
}
