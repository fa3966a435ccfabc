// Loss scaling for fp16 (train.precision=fp16): PyTorch's GradScaler rules on injected
// infinities, the state a checkpoint keeps, and the CPU's refusal.
#include <cmath>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "train_fixtures.h"
#include "train/grad_scaler.h"
#include "train/precision.h"

namespace zoo {
namespace {

std::vector<torch::Tensor> params_with_grads(const std::vector<torch::Tensor>& grads,
                                             const torch::Device& device = torch::kCPU) {
  std::vector<torch::Tensor> ps;
  for (const auto& g : grads) {
    ps.push_back(torch::zeros_like(g, torch::TensorOptions().device(device)).requires_grad_());
    ps.back().mutable_grad() = g.to(device).clone();
  }
  ps.push_back(torch::zeros({3}, torch::TensorOptions().device(device)).requires_grad_());  // no gradient
  return ps;
}

// Scale 2^16; halved (and the clean run restarted) on an inf or NaN; doubled after
// growth_interval clean steps in a row.
TEST(GradScaler, HalvesOnInfAndGrowsAfterTheInterval) {
  GradScaler s;
  EXPECT_EQ(s.scale(), 65536.0);
  for (int i = 0; i < 1999; ++i) s.update(false);
  EXPECT_EQ(s.scale(), 65536.0);
  s.update(false);
  EXPECT_EQ(s.scale(), 131072.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  for (int i = 0; i < 1500; ++i) s.update(false);
  s.update(true);
  EXPECT_EQ(s.scale(), 65536.0);
  EXPECT_EQ(s.growth_tracker(), 0);
  for (int i = 0; i < 1999; ++i) s.update(false);  // the 1,500 before the inf do not count
  EXPECT_EQ(s.scale(), 65536.0);
  GradScaler::Options o;
  o.growth_interval = 3;
  GradScaler small(o);
  for (bool inf : {true, true, false, false, false}) small.update(inf);
  EXPECT_EQ(small.scale(), 65536.0 / 4 * 2);
}

// unscale() divides the gradients by the scale and reports any inf or NaN among them, on the
// CPU and (where there is one) on CUDA, where one multi-tensor kernel does it.
TEST(GradScaler, UnscaleDividesAndFindsNonFiniteGradients) {
  std::vector<torch::Device> devices{torch::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(torch::kCUDA);
  for (const auto& device : devices) {
    torch::manual_seed(3);
    const std::vector<torch::Tensor> grads{torch::randn({5, 4}) * 65536, torch::randn({7}) * 65536};
    GradScaler s;
    auto clean = params_with_grads(grads, device);
    EXPECT_FALSE(s.unscale(clean)) << device;
    for (size_t i = 0; i < grads.size(); ++i)
      EXPECT_TRUE(torch::allclose(clean[i].grad().cpu(), grads[i] / 65536.0, 1e-6, 1e-7)) << device;
    EXPECT_FALSE(clean[2].grad().defined());
    for (float bad : {INFINITY, -INFINITY, NAN}) {
      auto g = grads;
      g[1] = g[1].clone();
      g[1][4] = bad;
      auto ps = params_with_grads(g, device);
      EXPECT_TRUE(s.unscale(ps)) << device << " " << bad;
    }
  }
}

TEST(GradScaler, StateRoundTripsAndRejectsABadScale) {
  GradScaler a;
  a.update(true);
  for (int i = 0; i < 7; ++i) a.update(false);
  GradScaler b;
  b.load(a.state());
  EXPECT_EQ(b.scale(), 32768.0);
  EXPECT_EQ(b.growth_tracker(), 7);
  EXPECT_THROW(b.load({{"scale", -1.0}, {"growth_tracker", 0}}), Error);
}

// fp16 is refused on the CPU, naming the key and what to use instead.
TEST(GradScaler, Fp16IsRefusedOnTheCpu) {
  try {
    check_precision("fp16", torch::Device(torch::kCPU));
    FAIL() << "fp16 accepted on the CPU";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.precision=fp16"), std::string::npos) << e.what();
  }
  EXPECT_EQ(evaluation_precision("fp16", torch::Device(torch::kCPU)), "fp32");  // its checkpoints still evaluate
}

// On CUDA: a tiny ViT trains in fp16, its losses finite and falling, the scale logged, and a
// resumed run continues with the checkpoint's scale (the same losses as the uninterrupted run).
TEST(GradScaler, Fp16TrainsAndResumesOnCuda) {
  const torch::Device cuda(torch::kCUDA);
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";  // reported, not passed
  try {
    check_precision("fp16", cuda);
  } catch (const Error& e) {
    GTEST_SKIP() << e.what();
  }
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 160, 40);
  auto config = resolve_config(json::parse(test::tiny_vit_config(dir.path().string())), "tiny.json");
  config["train"]["precision"] = "fp16";
  const auto [full, resumed] = test::train_and_resume_at_4(config, dir.path().string(), cuda);
  ASSERT_EQ(full.size(), 8u);
  ASSERT_EQ(resumed.size(), 4u);
  for (const auto& [step, loss] : full) EXPECT_TRUE(std::isfinite(loss)) << step;
  EXPECT_LT(full.at(8), full.at(1));
  for (int64_t step = 5; step <= 8; ++step)
    EXPECT_NEAR(resumed.at(step), full.at(step), 1e-4 * std::abs(full.at(step))) << "step " << step;
  const auto records = test::train_records(dir / "a");
  const double first = records.at(1).value("loss_scale", 0.0);  // 2^16, halved where step 1 overflowed
  ASSERT_GT(first, 0);
  EXPECT_EQ(std::log2(65536.0 / first), std::round(std::log2(65536.0 / first))) << first;
  EXPECT_LE(first, 65536.0);
  const auto state = read_json_file(dir / "a/checkpoint-4/trainer_state.json");
  ASSERT_TRUE(state.contains("grad_scaler"));
  EXPECT_GT(state["grad_scaler"]["scale"].get<double>(), 0);
}

}  // namespace
}  // namespace zoo
