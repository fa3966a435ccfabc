// The linear layers' product for a few rows: zoo's few_rows_linear (models/kernels/
// few_rows_linear.h) against LibTorch's addmm (OpenBLAS's packed sgemm) on the same inputs, at
// the shapes of the models' decoding steps, interleaved rounds, medians; then the int8 product
// (models/kernels/int8_linear.h) in zoo's loops against LibTorch's quantized engine; then
// products of many rows through oneDNN's matmul (models/kernels/onednn_linear.h) against
// addmm, forward and, under autograd, forward plus backward (dx and dW).
//
//   build/zoo_bench_linear [--threads N] [--rounds R]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/threads.h"
#include "models/kernels/few_rows_linear.h"
#include "models/kernels/int8_linear.h"
#include "models/kernels/onednn_linear.h"
#include "tools/bench/bench_util.h"

namespace {

struct Shape {
  const char* what;
  int64_t m, k, n;
};

// Microseconds per call of f, over enough calls for ~20 ms.
template <class F>
double time_us(F f, int64_t macs) {
  const int64_t calls = std::max<int64_t>(3, 4000000000LL / 200 / std::max<int64_t>(1, macs));
  const auto t0 = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < calls; ++i) f();
  return 1e6 * zoo::bench::seconds_since(t0) / static_cast<double>(calls);
}

// fp32 products of many rows: onednn_linear against LibTorch's addmm, without and with autograd
// (forward, then dx and dW from a gradient of ones).
void many_rows(int rounds) {
  const Shape shapes[] = {
      {"gpt-nano-char qkv, prefill 8 x 64", 512, 128, 384}, {"transformer-small ffn, 896 rows", 896, 256, 1024},
      {"transformer-small head, 896 rows", 896, 256, 8000}, {"bert-small-imdb ffn, 32 x 256", 8192, 256, 1024},
      {"gpt2 qkv, prefill 8 x 256", 2048, 768, 2304},       {"gpt2 mlp out, prefill 8 x 256", 2048, 3072, 768},
  };
  std::printf("\n| shape (fp32, many rows) | M x K x N | addmm us | onednn us | ratio | with backward: addmm us | onednn us | ratio | max abs diff |\n"
              "|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const auto& s : shapes) {
    const auto x = torch::randn({s.m, s.k}), w = torch::randn({s.n, s.k}), b = torch::randn({s.n});
    if (!zoo::models::onednn_linear_applies(x, w, b)) {
      std::printf("| %s | not taken by onednn_linear in this build |\n", s.what);
      continue;
    }
    const double diff = (zoo::models::onednn_linear(x, w, b) - torch::addmm(b, x, w.t())).abs().max().item<double>();
    const auto xg = x.clone().requires_grad_(), wg = w.clone().requires_grad_();
    auto trained = [&](bool onednn) {
      torch::AutoGradMode grad(true);
      auto y = onednn ? zoo::models::onednn_linear(xg, wg, b) : torch::addmm(b, xg, wg.t());
      y.backward(torch::ones_like(y));
    };
    std::vector<double> blas, dnn, blas_bw, dnn_bw;
    const int64_t macs = s.m * s.k * s.n;
    for (int r = 0; r < rounds; ++r) {
      blas.push_back(time_us([&] { torch::addmm(b, x, w.t()); }, macs));
      dnn.push_back(time_us([&] { zoo::models::onednn_linear(x, w, b); }, macs));
      blas_bw.push_back(time_us([&] { trained(false); }, 3 * macs));
      dnn_bw.push_back(time_us([&] { trained(true); }, 3 * macs));
    }
    const double a = zoo::bench::median(blas), d = zoo::bench::median(dnn);
    const double ab = zoo::bench::median(blas_bw), db = zoo::bench::median(dnn_bw);
    std::printf("| %s | %ld x %ld x %ld | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f | %.1e |\n", s.what, static_cast<long>(s.m),
                static_cast<long>(s.k), static_cast<long>(s.n), a, d, d / a, ab, db, db / ab, diff);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 1, rounds = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--threads") threads = std::atoi(argv[i + 1]);
    else if (a == "--rounds") rounds = std::atoi(argv[i + 1]);
    else return std::fprintf(stderr, "linear_bench: unknown option %s\n", argv[i]), 2;
  }
  zoo::configure_cpu_threads(threads);  // as the zoo binary does: OpenBLAS on as many threads
  torch::NoGradGuard no_grad;
  const Shape shapes[] = {
      {"gpt-nano-char qkv, 8 rows", 8, 128, 384},      {"gpt-nano-char mlp, 16 rows", 16, 128, 512},
      {"gpt-nano-char proj, 16 rows", 16, 512, 128},   {"transformer-small beam 4", 4, 512, 512},
      {"gpt2 qkv, 16 rows", 16, 768, 2304},            {"gpt2 mlp in, 16 rows", 16, 768, 3072},
      {"gpt2 mlp out, 16 rows", 16, 3072, 768},        {"gpt2 head, 16 rows", 16, 768, 50257},
      {"gpt-nano-char mlp, 32 rows", 32, 128, 512},
  };
  std::printf("threads %d, %d rounds, medians\n", threads, rounds);
  std::printf("| shape | M x K x N | addmm us | few_rows_linear us | ratio | max abs diff |\n|---|---|---:|---:|---:|---:|\n");
  for (const auto& s : shapes) {
    const auto x = torch::randn({s.m, s.k}), w = torch::randn({s.n, s.k}), b = torch::randn({s.n});
    if (!zoo::models::few_rows_linear_applies(x, w, b)) {
      std::printf("| %s | not taken by few_rows_linear on this CPU or build |\n", s.what);
      continue;
    }
    const double diff = (zoo::models::few_rows_linear(x, w, b) - torch::addmm(b, x, w.t())).abs().max().item<double>();
    std::vector<double> blas, few;
    for (int r = 0; r < rounds; ++r) {
      blas.push_back(time_us([&] { torch::addmm(b, x, w.t()); }, s.m * s.k * s.n));
      few.push_back(time_us([&] { zoo::models::few_rows_linear(x, w, b); }, s.m * s.k * s.n));
    }
    const double a = zoo::bench::median(blas), f = zoo::bench::median(few);
    std::printf("| %s | %ld x %ld x %ld | %.1f | %.1f | %.2f | %.1e |\n", s.what, static_cast<long>(s.m),
                static_cast<long>(s.k), static_cast<long>(s.n), a, f, f / a, diff);
  }
  std::printf("\n| shape (int8) | M x K x N | engine us | loops us | ratio |\n|---|---|---:|---:|---:|\n");
  const Shape int8_shapes[] = {
      {"gpt2 qkv, 16 rows", 16, 768, 2304}, {"gpt2 mlp out, 16 rows", 16, 3072, 768},
      {"gpt2 head, 16 rows", 16, 768, 50257}, {"transformer-small ffn, 128 rows", 128, 256, 1024},
      {"transformer-small head, 128 rows", 128, 256, 8000},
  };
  for (const auto& s : int8_shapes) {
    const auto x = torch::randn({s.m, s.k});
    const auto w = zoo::models::pack_int8(torch::randn({s.n, s.k}), torch::randn({s.n}));
    std::vector<double> engine, loops;
    for (int r = 0; r < rounds; ++r) {
      engine.push_back(time_us([&] { zoo::models::linear_int8(x, w, zoo::models::Int8Kernel::kEngine); }, s.m * s.k * s.n));
      loops.push_back(time_us([&] { zoo::models::linear_int8(x, w, zoo::models::Int8Kernel::kLoops); }, s.m * s.k * s.n));
    }
    const double e = zoo::bench::median(engine), l = zoo::bench::median(loops);
    std::printf("| %s | %ld x %ld x %ld | %.1f | %.1f | %.2f |\n", s.what, static_cast<long>(s.m),
                static_cast<long>(s.k), static_cast<long>(s.n), e, l, l / e);
  }
  many_rows(rounds);
}
