// zoo_bench_bert_doc000: training steps of document 000's BERT (models/bert_doc000.h) with
// the document's BertTrainer loss (NLLLoss over the selected tokens + BCEWithLogits NSP,
// Adam with weight decay 0.015), as tools/bench/bert_doc000_bench.py does with the
// document's own classes. zoo scores the vocabulary at the selected tokens only: the
// document's loss zeroes the others (masked_fill, ignore_index), so the loss and gradients
// are the same. Prints JSON with the median step. --device cuda (cuda:N, mps) runs the model
// and the batches there, the device synchronised before each clock reading; --precision bf16
// autocasts the forward pass on that device (as train.precision=bf16).
#include <algorithm>
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "core/error.h"
#include "core/threads.h"
#include "models/bert_doc000.h"
#include "tools/bench/bench_util.h"
#include "train/device.h"
#include "train/precision.h"

using zoo::bench::sync;

int main(int argc, char** argv) {
  zoo::use_startup_environment(argv);
  zoo::models::Doc000BertOptions o;
  o.vocab_size = 71942, o.dim_inp = 64, o.dim_out = 36, o.attention_heads = 4;
  int64_t batch = 24, length = 55, steps = 10, warmup = 2, threads = 2;
  std::string device_spec = "cpu", precision = "fp32";
  CLI::App app{"document 000 BERT training-step benchmark"};
  app.add_option("--vocab", o.vocab_size);
  app.add_option("--dim-inp", o.dim_inp);
  app.add_option("--dim-out", o.dim_out);
  app.add_option("--heads", o.attention_heads);
  app.add_option("--batch", batch);
  app.add_option("--length", length);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  app.add_option("--device", device_spec, "cpu, cuda, cuda:N or mps");
  app.add_option("--precision", precision, "fp32, or bf16 autocast as train.precision=bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  CLI11_PARSE(app, argc, argv);
  zoo::configure_cpu_threads(static_cast<int>(threads));
  const auto resolved = zoo::bench::bench_device("zoo_bench_bert_doc000", device_spec, precision);
  if (!resolved) return 2;
  const torch::Device device = *resolved;
  const bool bf16 = precision == "bf16";
  torch::manual_seed(0);
  zoo::models::Doc000Bert model(o);
  model->to(device);
  model->train();
  torch::optim::Adam opt(model->parameters(), torch::optim::AdamOptions(0.005).weight_decay(0.015));
  std::vector<double> times;
  for (int64_t i = 0; i < warmup + steps; ++i) {
    auto ids = torch::randint(5, o.vocab_size, {batch, length}, torch::kLong);
    auto selected = torch::rand({batch, length}).lt(0.15);  // the document's ~inverse_token_mask
    auto target = ids.masked_fill(selected.logical_not(), 0);
    auto mask = ids.eq(1).unsqueeze(1);
    auto nsp_target = torch::zeros({batch, 2});
    nsp_target.select(1, 0).fill_(1);
    ids = ids.to(device), selected = selected.to(device), target = target.to(device), mask = mask.to(device);
    nsp_target = nsp_target.to(device);
    sync(device);
    const auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    torch::Tensor log_probs, nsp_logits;
    {
      zoo::AutocastGuard autocast(bf16, device);  // the forward pass, as zoo train
      auto encoded = model->encode(ids, mask);
      log_probs = model->token_log_probs(encoded.index({selected})).to(torch::kFloat);  // (selected, V)
      nsp_logits = model->nsp_logits(encoded).to(torch::kFloat);
    }
    auto mlm = torch::nn::functional::nll_loss(log_probs, target.index({selected}),
                                               torch::nn::functional::NLLLossFuncOptions().ignore_index(0));
    auto nsp = torch::nn::functional::binary_cross_entropy_with_logits(nsp_logits, nsp_target);
    (mlm + nsp).backward();
    opt.step();
    sync(device);
    if (i >= warmup) times.push_back(zoo::bench::seconds_since(t0));
  }
  std::sort(times.begin(), times.end());
  std::cout << "{\"impl\":\"zoo (C++)\",\"device\":\"" << device.str() << "\",\"precision\":\"" << precision
            << "\",\"threads\":" << torch::get_num_threads() << ",\"batch\":" << batch
            << ",\"median_step_ms\":" << 1000 * times[times.size() / 2] << "}" << std::endl;
}
