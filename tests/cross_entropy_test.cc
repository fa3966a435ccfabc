// The output layer and its loss (models/kernels/cross_entropy.h): the padded rows CUDA runs,
// the fused fp16 form, and the CPU's row kernel (models/kernels/softmax_rows.h) with a bias, in
// fp32 and under bf16 autocast, against F::cross_entropy of linear()'s scores; what it does
// with NaN and large scores, and that a second backward pass through it is refused. And
// R-Drop's loss (train/objectives.h r_drop_loss) against explicit loops in double precision.
#include <cmath>
#include <limits>
#include <optional>

#include <gtest/gtest.h>
#include <torch/cuda.h>

#include "models/kernels/cross_entropy.h"
#include "models/kernels/linear.h"
#include "models/kernels/softmax_rows.h"
#include "train/objectives.h"
#include "train/precision.h"

namespace zoo {
namespace {

using namespace models;
namespace F = torch::nn::functional;

// The output layer with its loss over padded rows (what GPT's training step runs on CUDA for
// GPT-2's 50,257 words) gives the plain loss and gradients, with some rows ignored (label
// -100): fp32 on the CPU to rounding, the fused form too (run there in fp32), and on CUDA under
// bf16 autocast through linear_cross_entropy's own choice (the fused form in fp16 on
// LibTorch >= 2.8), against the narrowed product's loss in bf16 and in fp32. A width that
// needs no padding is left as it is.
TEST(LinearCrossEntropy, PaddedRowsGiveThePlainLossAndGradients) {
  torch::manual_seed(10);
  for (int64_t n : {1037, 1024}) {
    const auto x0 = torch::randn({2, 150, 16}), w0 = torch::randn({n, 16}) * 0.5;
    auto labels0 = torch::randint(0, n, {2, 150});
    labels0.index_put_({0, torch::indexing::Slice(140, torch::indexing::None)}, -100);
    labels0.index_put_({1, 3}, -100);
    enum Form { kPlain, kChosen, kFused };
    auto run = [&](const torch::Device& device, Form form, int64_t pad_to, bool bf16) {
      auto x = x0.to(device).detach().requires_grad_(), w = w0.to(device).detach().requires_grad_();
      const auto labels = labels0.to(device);
      torch::Tensor loss;
      {
        zoo::AutocastGuard autocast(bf16, device);
        if (form == kPlain)
          loss = torch::nn::functional::cross_entropy(linear(x, w, torch::Tensor()).to(torch::kFloat).flatten(0, 1),
                                                      labels.flatten());
        else if (form == kChosen)
          loss = linear_cross_entropy(x, w, labels, pad_to);
        else
          loss = linear_cross_entropy_fused(x, w, labels, pad_to, torch::kFloat);
      }
      (loss * 3).backward();
      return std::vector<torch::Tensor>{loss.detach().cpu(), x.grad().cpu().to(torch::kFloat),
                                        w.grad().cpu().to(torch::kFloat)};
    };
    auto expect_close = [&](const std::vector<torch::Tensor>& got, const std::vector<torch::Tensor>& want,
                            double tolerance, const std::string& what) {
      EXPECT_EQ(got[0].dim(), 0) << what;
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(torch::allclose(got[i], want[i], tolerance, tolerance))
            << what << ", tensor " << i << ": largest difference " << (got[i] - want[i]).abs().max().item<double>();
    };
    const std::string width = " n=" + std::to_string(n);
    const auto plain = run(torch::kCPU, kPlain, 0, false);
    EXPECT_EQ(plain[1][0][145].abs().max().item<float>(), 0.0f) << "an ignored row has no gradient";
    expect_close(run(torch::kCPU, kChosen, 64, false), plain, 1e-6, "cpu" + width);
    expect_close(run(torch::kCPU, kChosen, 0, false), plain, 1e-6, "cpu, default padding," + width);
    expect_close(run(torch::kCPU, kFused, 64, false), plain, 1e-6, "cpu, fused," + width);
    expect_close(run(torch::kCPU, kFused, 1, false), plain, 1e-6, "cpu, fused, unpadded," + width);
    if (torch::cuda::is_available()) {
      const auto chosen = run(torch::kCUDA, kChosen, 0, true);
      expect_close(chosen, run(torch::kCUDA, kPlain, 0, true), 2e-2, "cuda bf16" + width);
      expect_close(chosen, run(torch::kCUDA, kPlain, 0, false), 5e-3, "cuda bf16 against fp32" + width);
    }
  }
}

// With a bias, in fp32: the loss and the gradients of x, W and b are F::cross_entropy's of
// linear(x, W, b) to rounding, with ignored rows (no gradient); on the CPU (the row kernel) for a
// width that is not a multiple of the kernel's chunk (2,048) or lanes (16) and with several
// chunks per row, and on CUDA (padded rows with the bias) where there is one.
TEST(LinearCrossEntropy, WithBiasGivesThePlainLossAndGradients) {
  torch::manual_seed(11);
  std::vector<torch::Device> devices{torch::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(torch::kCUDA);
  for (const auto& device : devices)
    for (int64_t n : {5000, 37, 2048}) {
      const auto x0 = torch::randn({3, 40, 24}), w0 = torch::randn({n, 24}) * 0.5, b0 = torch::randn({n});
      auto labels = torch::randint(0, n, {3, 40});
      labels.index_put_({1, torch::indexing::Slice(0, 10)}, -100);
      auto run = [&](bool kernel) {
        auto x = x0.to(device).detach().requires_grad_(), w = w0.to(device).detach().requires_grad_(),
             b = b0.to(device).detach().requires_grad_();
        const auto y = labels.to(device);
        auto loss = kernel ? linear_cross_entropy(x, w, y, 0, b) : F::cross_entropy(at::linear(x, w, b).flatten(0, 1), y.flatten());
        (loss * 2).backward();
        return std::vector<torch::Tensor>{loss.detach().cpu(), x.grad().cpu(), w.grad().cpu(), b.grad().cpu()};
      };
      const auto want = run(false), got = run(true);
      const std::string what = device.str() + " n=" + std::to_string(n);
      EXPECT_EQ(got[0].dim(), 0) << what;
      for (size_t i = 0; i < want.size(); ++i)
        EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-5, 1e-6))
            << what << ", tensor " << i << ": largest difference " << (got[i] - want[i]).abs().max().item<double>();
      EXPECT_EQ(got[1][1][5].abs().max().item<float>(), 0.0f) << what << ": an ignored row has no gradient";
    }
}

// Under bf16 autocast on the CPU the kernel reads the product's bf16 scores and adds the bias in
// fp32, as the plain path does after its fp32 copy: the same loss to fp32 rounding, and gradients
// within bf16's.
TEST(LinearCrossEntropy, CpuKernelUnderBf16AutocastMatchesThePlainPath) {
  torch::manual_seed(12);
  const int64_t n = 3001;
  const auto x0 = torch::randn({64, 32}), w0 = torch::randn({n, 32}) * 0.3, b0 = torch::randn({n}) * 0.1;
  auto labels = torch::randint(0, n, {64});
  labels[7] = -100;
  auto run = [&](bool kernel) {
    auto x = x0.clone().requires_grad_(), w = w0.clone().requires_grad_(), b = b0.clone().requires_grad_();
    torch::Tensor loss;
    {
      AutocastGuard autocast(true, torch::kCPU);
      loss = kernel ? linear_cross_entropy(x, w, labels, 0, b)
                    : F::cross_entropy(linear(x, w, torch::Tensor()).to(torch::kFloat) + b, labels);
    }
    loss.backward();
    return std::vector<torch::Tensor>{loss.detach(), x.grad(), w.grad(), b.grad()};
  };
  const auto want = run(false), got = run(true);
  EXPECT_NEAR(got[0].item<double>(), want[0].item<double>(), 1e-5);
  for (size_t i = 1; i < want.size(); ++i) {
    const double scale = want[i].abs().max().item<double>();
    EXPECT_LE((got[i] - want[i]).abs().max().item<double>(), 1e-2 * scale) << "tensor " << i;
    EXPECT_EQ(got[i].scalar_type(), torch::kFloat) << "gradients in the parameters' dtype";
  }
}

// Scores far from 0 (1e4) give the exact loss (the softmax subtracts the row's maximum), a NaN or
// infinite score anywhere in a row makes the loss NaN (so the trainer's check sees it), and a
// row with every label ignored counts for nothing.
TEST(SoftmaxRows, LargeScoresAreExactAndNaNPropagates) {
  auto logits = torch::full({4, 3000}, -1e4);
  logits.index_put_({0, 5}, 1e4);
  logits.index_put_({1, 2999}, 1e4), logits.index_put_({1, 0}, 1e4);
  logits.index_put_({2, 100}, std::numeric_limits<float>::quiet_NaN());
  const auto labels = torch::tensor({5, 0, 1, -100}, torch::kLong);
  const auto loss = softmax_rows_loss(logits, labels, -100).second;
  EXPECT_NEAR(loss[0].item<double>(), 0.0, 1e-6);
  EXPECT_NEAR(loss[1].item<double>(), std::log(2.0), 1e-6);
  EXPECT_TRUE(std::isnan(loss[2].item<double>())) << "a NaN score two thousand places from the label";
  EXPECT_EQ(loss[3].item<double>(), 0.0);
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    auto g = logits.narrow(0, 0, 2).to(dtype).clone();  // not logits itself, which the fp32 pass would overwrite
    const auto two = labels.narrow(0, 0, 2);
    softmax_rows_gradient_(g, softmax_rows_loss(g, two, -100).first, two, 2.0f, -100);
    EXPECT_NEAR(g[0].abs().sum().item<double>(), 0.0, 1e-6);
    EXPECT_NEAR(g[1][0].item<double>(), 2.0 * (0.5 - 1.0), 1e-6);
    EXPECT_NEAR(g[1][2999].item<double>(), 1.0, 1e-6);
  }
  auto inf = torch::zeros({1, 40});
  inf.index_put_({0, 3}, std::numeric_limits<float>::infinity());
  EXPECT_TRUE(std::isnan(softmax_rows_loss(inf, torch::tensor({1}, torch::kLong), -100).second[0].item<double>()));
}

TEST(SoftmaxRows, LogSoftmaxRowsIsTorchsLogSoftmax) {
  torch::manual_seed(3);
  // Rows of a strided view (as the last position of (N, T, V) logits), one with -inf entries,
  // one with huge scores, and a width that is not a multiple of the vector lanes.
  auto logits = (torch::randn({5, 3, 1003}) * 8).select(1, 2);
  logits.index_put_({1, torch::indexing::Slice(0, 500)}, -std::numeric_limits<float>::infinity());
  logits.index_put_({2, 7}, 1e30);
  ASSERT_FALSE(logits.is_contiguous());
  const auto ours = log_softmax_rows(logits), theirs = torch::log_softmax(logits, -1);
  const auto finite = torch::isfinite(theirs);
  EXPECT_TRUE(torch::equal(finite, torch::isfinite(ours)));
  EXPECT_TRUE(torch::allclose(ours.masked_select(finite), theirs.masked_select(finite), 1e-5, 1e-5));
  EXPECT_NEAR(ours[2][7].item<double>(), 0.0, 1e-6);
  logits.index_put_({3, 9}, std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(log_softmax_rows(logits).max().item<double>())) << "a NaN score must reach the caller";
}

// The backward pass turns the saved scores into their gradient in place, so a second one
// through the same graph must be refused, not return wrong gradients.
TEST(LinearCrossEntropy, CpuKernelRefusesASecondBackwardPass) {
  auto x = torch::randn({4, 8}, torch::requires_grad()), w = torch::randn({50, 8}, torch::requires_grad());
  auto loss = linear_cross_entropy(x, w, torch::randint(0, 50, {4}));
  loss.backward({}, /*retain_graph=*/true);
  EXPECT_ANY_THROW(loss.backward());
}

// R-Drop's two terms computed another way: row by row and class by class in double precision,
// the cross-entropy from its label-smoothed definition, the KL from both of its directions.
struct RDropReference {
  double ce = 0, kl = 0;
};
RDropReference r_drop_reference(const torch::Tensor& logits1, const torch::Tensor& logits2, const torch::Tensor& targets,
                                double smoothing, std::optional<int64_t> ignore) {
  const auto a = logits1.to(torch::kDouble).contiguous(), b = logits2.to(torch::kDouble).contiguous();
  const int64_t n = a.size(0), c = a.size(1);
  auto log_softmax_row = [c](const double* x) {
    double top = x[0], sum = 0;
    for (int64_t j = 1; j < c; ++j) top = std::max(top, x[j]);
    for (int64_t j = 0; j < c; ++j) sum += std::exp(x[j] - top);
    std::vector<double> out(static_cast<size_t>(c));
    for (int64_t j = 0; j < c; ++j) out[static_cast<size_t>(j)] = x[j] - top - std::log(sum);
    return out;
  };
  RDropReference r;
  int64_t counted = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t y = targets[i].item<int64_t>();
    if (ignore && y == *ignore) continue;
    ++counted;
    const auto p = log_softmax_row(a.data_ptr<double>() + i * c), q = log_softmax_row(b.data_ptr<double>() + i * c);
    for (const auto* logp : {&p, &q}) {
      double uniform = 0;
      for (double v : *logp) uniform -= v / static_cast<double>(c);
      r.ce += 0.5 * ((1 - smoothing) * -(*logp)[static_cast<size_t>(y)] + smoothing * uniform);
    }
    double p_q = 0, q_p = 0;  // KL(p || q), KL(q || p)
    for (size_t j = 0; j < p.size(); ++j) {
      p_q += std::exp(p[j]) * (p[j] - q[j]);
      q_p += std::exp(q[j]) * (q[j] - p[j]);
    }
    r.kl += 0.5 * (p_q + q_p);
  }
  r.ce /= static_cast<double>(counted);
  r.kl /= static_cast<double>(counted);
  return r;
}

// r_drop_loss: total = ce + alpha * kl, both parts as the reference computes them, with padding
// rows (ignore index) left out of both or every row counted; kl is 0 for two equal passes and
// positive for two different ones, and is computed in fp32 from bf16 scores.
TEST(RDropLoss, IsTheMeanCrossEntropyPlusAlphaTimesTheSymmetricKl) {
  torch::manual_seed(11);
  const int64_t n = 9, c = 6, pad = 0;
  const auto logits1 = torch::randn({n, c}) * 2, logits2 = logits1 + torch::randn({n, c});
  auto targets = torch::randint(1, c, {n}, torch::kLong);
  targets.index_put_({torch::tensor({1, 4, 8})}, pad);
  const double alpha = 3.5, smoothing = 0.1;
  for (const std::optional<int64_t> ignore : {std::optional<int64_t>(pad), std::optional<int64_t>()}) {
    SCOPED_TRACE(ignore ? "ignoring padding" : "every row counts");
    const Loss loss = r_drop_loss(logits1, logits2, targets, RDropOptions{alpha, smoothing, ignore});
    ASSERT_EQ(loss.parts.size(), 2u);
    const double total = loss.total.item<double>(), ce = loss.parts.at("ce").item<double>(),
                 kl = loss.parts.at("kl").item<double>();
    const auto ref = r_drop_reference(logits1, logits2, targets, smoothing, ignore);
    EXPECT_NEAR(total, ce + alpha * kl, 1e-6);
    EXPECT_NEAR(ce, ref.ce, 1e-6);
    EXPECT_NEAR(kl, ref.kl, 1e-6);
    EXPECT_GT(kl, 0.05);
    EXPECT_NEAR(total, ref.ce + alpha * ref.kl, 1e-5);

    const Loss same = r_drop_loss(logits1, logits1, targets, RDropOptions{alpha, smoothing, ignore});
    EXPECT_EQ(same.parts.at("kl").item<double>(), 0.0);
    EXPECT_NEAR(same.total.item<double>(), r_drop_reference(logits1, logits1, targets, smoothing, ignore).ce, 1e-6);
  }
  // The padding rows really are left out: counting them changes the KL.
  EXPECT_GT(std::abs(r_drop_reference(logits1, logits2, targets, 0, pad).kl -
                     r_drop_reference(logits1, logits2, targets, 0, std::nullopt).kl),
            1e-3);
  const Loss bf16 = r_drop_loss(logits1.to(torch::kBFloat16), logits2.to(torch::kBFloat16), targets,
                                RDropOptions{alpha, 0, pad});
  EXPECT_EQ(bf16.parts.at("kl").scalar_type(), torch::kFloat);
  EXPECT_NEAR(bf16.parts.at("kl").item<double>(),
              r_drop_reference(logits1.to(torch::kBFloat16), logits2.to(torch::kBFloat16), targets, 0, pad).kl, 1e-5);
}

}  // namespace
}  // namespace zoo
