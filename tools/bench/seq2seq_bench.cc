// zoo_bench_seq2seq: times document 000's GRU encoder-decoder with Bahdanau attention, as
// tools/bench/seq2seq_bench.py does for the document's own PyTorch modules. Prints JSON.
//
//   --mode train: training steps on random batches (teacher-forced forward, padding-masked
//                 cross-entropy, backward, clipping to norm 5, Adam step).
//   --mode beam:  beam-search translation of --sentences random sources, --beam-batch of
//                 them per call; --save FILE writes the weights and the sources so that the
//                 Python side decodes the same sentences with the same model.
//
// Batch i of the synthetic data: source row r has src_len - r % (src_len / 2) tokens and
// target row r has tgt_len - r % (tgt_len / 2) (bos ... eos), padded with 0 at the end, as
// the Python side builds them.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <torch/torch.h>

#include "models/seq2seq.h"
#include "tools/bench/bench_util.h"
#include "core/threads.h"
#include "train/device.h"
#include "io/safetensors.h"

namespace {

constexpr int64_t kPad = 0, kBos = 2, kEos = 3, kFirstWord = 4;

using zoo::bench::seconds_since;

// (B, len) random tokens; see bench_util.h.
torch::Tensor synthetic(int64_t batch, int64_t len, int64_t vocab, bool framed) {
  return zoo::bench::synthetic_sentences(batch, len, vocab, framed, {kPad, kBos, kEos, kFirstWord});
}

}  // namespace

int main(int argc, char** argv) {
  zoo::use_startup_environment(argv);  // may re-execute (OMP_WAIT_POLICY, OPENBLAS_CORETYPE)
  zoo::models::Seq2SeqOptions o;
  o.source_vocab_size = 2779, o.target_vocab_size = 6800;  // cmn.txt: characters / words
  o.embedding_dim = 256, o.units = 1024, o.mask_source_padding = false;
  std::string mode = "train", save;
  int64_t batch = 64, src_len = 14, tgt_len = 12, steps = 10, warmup = 2, threads = 2;
  int64_t sentences = 200, beam_batch = 100, beams = 4, max_len = 20;
  CLI::App app{"seq2seq (document 000) benchmark"};
  app.add_option("--mode", mode)->check(CLI::IsMember({"train", "beam"}));
  app.add_option("--embedding", o.embedding_dim);
  app.add_option("--units", o.units);
  app.add_option("--src-vocab", o.source_vocab_size);
  app.add_option("--tgt-vocab", o.target_vocab_size);
  app.add_option("--mask", o.mask_source_padding, "1: zoo's masked attention + packed encoder");
  app.add_option("--batch", batch);
  app.add_option("--src-len", src_len);
  app.add_option("--tgt-len", tgt_len);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  app.add_option("--sentences", sentences);
  app.add_option("--beam-batch", beam_batch);
  app.add_option("--beams", beams);
  app.add_option("--max-len", max_len);
  app.add_option("--save", save, "beam mode: write weights + sources here (safetensors)");
  CLI11_PARSE(app, argc, argv);
  zoo::configure_cpu_threads(static_cast<int>(threads));  // as the zoo binary does
  torch::manual_seed(0);
  zoo::models::Seq2Seq model(o);

  if (mode == "train") {
    model->train();
    torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(1e-3));
    std::vector<double> times;
    for (int64_t i = 0; i < warmup + steps; ++i) {
      auto src = synthetic(batch, src_len, o.source_vocab_size, false);
      auto tgt = synthetic(batch, tgt_len, o.target_vocab_size, true);
      const auto t0 = std::chrono::steady_clock::now();
      opt.zero_grad();
      auto logits = model->forward(src, tgt.narrow(1, 0, tgt_len - 1));
      auto loss = torch::nn::functional::cross_entropy(
          logits.reshape({-1, logits.size(-1)}), tgt.narrow(1, 1, tgt_len - 1).reshape({-1}),
          torch::nn::functional::CrossEntropyFuncOptions().ignore_index(kPad));
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 5.0);
      opt.step();
      const double dt = seconds_since(t0);
      if (i >= warmup) times.push_back(dt);
      if (std::getenv("ZOO_BENCH_TRACE")) std::cerr << "step " << i << " " << 1000 * dt << " ms\n";
    }
    std::sort(times.begin(), times.end());
    std::cout << "{\"impl\":\"zoo (C++)\",\"mode\":\"train\",\"threads\":" << torch::get_num_threads()
              << ",\"batch\":" << batch << ",\"median_step_ms\":" << 1000 * times[times.size() / 2]
              << "}" << std::endl;
    return 0;
  }

  auto src = synthetic(sentences, src_len, o.source_vocab_size, false);
  if (!save.empty()) {
    std::vector<std::pair<std::string, torch::Tensor>> tensors{{"src", src}};
    for (const auto& p : model->named_parameters()) tensors.emplace_back(p.key(), p.value());
    zoo::safetensors::save(save, tensors);
  }
  zoo::models::GenerationOptions g;
  g.bos_id = kBos, g.eos_id = kEos, g.num_beams = beams, g.max_new_tokens = max_len;
  int64_t checksum = 0, tokens = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < sentences; s += beam_batch) {
    const auto part = src.narrow(0, s, std::min(beam_batch, sentences - s));
    for (const auto& nbest : zoo::models::generate(*model, part, g)) {
      for (int64_t t : nbest.front().tokens) checksum = (checksum * 31 + t) % 1000000007;
      tokens += static_cast<int64_t>(nbest.front().tokens.size());
    }
  }
  const double dt = seconds_since(t0);
  std::cout << "{\"impl\":\"zoo (C++)\",\"mode\":\"beam\",\"threads\":" << torch::get_num_threads()
            << ",\"beams\":" << beams << ",\"sentences\":" << sentences
            << ",\"sentences_per_s\":" << sentences / dt << ",\"output_tokens\":" << tokens
            << ",\"checksum\":" << checksum << "}" << std::endl;
}
