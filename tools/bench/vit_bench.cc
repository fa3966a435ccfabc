// zoo_bench_vit: times ViT training steps (forward, cross-entropy, backward, clipping to norm
// 1, AdamW step) on random data, as tools/bench/vit_bench.py does for the Python reference.
// Prints JSON: the median step and the median of its update part (clipping + AdamW).
//   zoo_bench_vit --hidden 128 --layers 4 --heads 4 --mlp 256 --image 28 --patch 4
//                 --channels 1 --batch 128 --steps 30 --warmup 5 --threads 2 [--shards N] [--act relu]
//                 [--precision bf16] [--device cuda]
// Like `zoo train`, on the CPU the batch is cut into one slice per thread, each run on its own
// core (zoo::forward_backward), and AdamW updates on all threads (zoo::ThreadedAdamW); --shards
// 1 times LibTorch's intra-op threading instead. --device cuda (cuda:N, mps) runs the model and
// the data there in one slice, as zoo train does, the device synchronised before each clock
// reading; --precision bf16 is autocast on that device.
#include <chrono>
#include <iostream>

#include <CLI/CLI.hpp>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/cuda.h>
#include <torch/torch.h>

#include "core/error.h"
#include "models/vit.h"
#include "tools/bench/bench_util.h"
#include "core/threads.h"
#include "train/device.h"
#include "train/optimizers.h"
#include "train/precision.h"
#include "train/trainer.h"

using zoo::bench::sync;

int main(int argc, char** argv) {
  zoo::use_startup_environment(argv);  // may re-execute (OMP_WAIT_POLICY, OPENBLAS_CORETYPE)
  zoo::models::ViTOptions o;
  int64_t batch = 128, steps = 30, warmup = 5, threads = 2, shards = 0;
  std::string device_spec = "cpu", precision = "fp32";
  o.hidden_size = 128, o.num_hidden_layers = 4, o.num_attention_heads = 4, o.intermediate_size = 256;
  o.image_size = 28, o.patch_size = 4, o.num_channels = 1, o.num_labels = 10;
  CLI::App app{"ViT training-step benchmark"};
  app.add_option("--hidden", o.hidden_size);
  app.add_option("--layers", o.num_hidden_layers);
  app.add_option("--heads", o.num_attention_heads);
  app.add_option("--mlp", o.intermediate_size);
  app.add_option("--image", o.image_size);
  app.add_option("--patch", o.patch_size);
  app.add_option("--channels", o.num_channels);
  app.add_option("--act", o.hidden_act, "feed-forward activation (hidden_act)");
  app.add_option("--batch", batch);
  app.add_option("--steps", steps);
  app.add_option("--warmup", warmup);
  app.add_option("--threads", threads);
  app.add_option("--precision", precision, "fp32, or bf16 autocast as train.precision=bf16")
      ->check(CLI::IsMember({"fp32", "bf16"}));
  app.add_option("--shards", shards,
                 "batch slices run at once (default: as zoo train, one per thread on the CPU, else 1)");
  app.add_option("--device", device_spec, "cpu, cuda, cuda:N or mps");
  CLI11_PARSE(app, argc, argv);
  zoo::configure_cpu_threads(static_cast<int>(threads));  // as the zoo binary does
  const auto resolved = zoo::bench::bench_device("zoo_bench_vit", device_spec, precision);
  if (!resolved) return 2;
  const torch::Device device = *resolved;
  if (shards <= 0) shards = device.is_cpu() ? torch::get_num_threads() : 1;
  const bool bf16 = precision == "bf16";
  torch::manual_seed(0);
  zoo::models::ViTForImageClassification model(o);
  model->to(device);
  model->train();
  zoo::ThreadedAdamW opt(model->parameters(), torch::optim::AdamWOptions(1e-3).weight_decay(0.05));  // as zoo train
  auto x = torch::randn({batch, o.num_channels, o.image_size, o.image_size}).to(device);
  auto y = torch::randint(0, o.num_labels, {batch}, torch::kLong).to(device);
  std::vector<double> times, update_times;
  // ZOO_BENCH_PROFILE=FILE: a Chrome trace of the timed steps (chrome://tracing, Perfetto).
  std::unique_ptr<torch::autograd::profiler::RecordProfile> profile;
  for (int64_t i = 0; i < warmup + steps; ++i) {
    if (i == warmup && std::getenv("ZOO_BENCH_PROFILE"))
      profile = std::make_unique<torch::autograd::profiler::RecordProfile>(std::getenv("ZOO_BENCH_PROFILE"));
    sync(device);
    const auto t0 = std::chrono::steady_clock::now();
    opt.zero_grad();
    zoo::forward_backward(
        [&](const zoo::Batch& b) {
          zoo::AutocastGuard autocast(bf16, device);
          return torch::nn::functional::cross_entropy(model->forward(b["pixel_values"]).to(torch::kFloat), b["labels"]);
        },
        zoo::Batch{{{"pixel_values", x}, {"labels", y}}, batch, 0}, 1.0, shards, model->parameters(), {}, /*onednn=*/bf16 && device.is_cpu());
    sync(device);
    const auto t1 = std::chrono::steady_clock::now();
    zoo::clip_grad_norm(model->parameters(), 1.0);  // as the recipes do
    opt.step();
    sync(device);
    const auto t2 = std::chrono::steady_clock::now();
    const double dt = std::chrono::duration<double>(t2 - t0).count();
    if (i >= warmup) times.push_back(dt), update_times.push_back(std::chrono::duration<double>(t2 - t1).count());
    if (std::getenv("ZOO_BENCH_TRACE")) std::cerr << "step " << i << " " << 1000 * dt << " ms\n";
  }
  profile.reset();
  std::sort(times.begin(), times.end());
  std::sort(update_times.begin(), update_times.end());
  double mean = 0;
  for (double t : times) mean += t / times.size();
  std::cout << "{\"impl\":\"zoo (C++)\",\"device\":\"" << device.str() << "\",\"precision\":\"" << precision
            << "\",\"threads\":" << torch::get_num_threads() << ",\"shards\":" << shards << ",\"batch\":" << batch
            << ",\"median_step_ms\":" << 1000 * times[times.size() / 2] << ",\"mean_step_ms\":" << 1000 * mean
            << ",\"median_update_ms\":" << 1000 * update_times[update_times.size() / 2] << "}"
            << std::endl;
}
