// ViT: shapes, backward, the exact Hugging Face state-dict names, and logits parity with
// a plain-PyTorch re-implementation of transformers' ViTForImageClassification
// (tests/py/hf_vit.py) in both directions (our export -> Python, HF checkpoint -> us).
#include <gtest/gtest.h>

#include "fixtures.h"
#include "models/kernels/attention.h"
#include "models/kernels/gelu.h"
#include "models/kernels/one_query_attention.h"
#include "models/registry.h"
#include "models/vit.h"
#include "test_util.h"
#include "train_fixtures.h"
#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "train/task_registry.h"
#include "train/tasks/image_classification.h"

namespace zoo {
namespace {

models::ViTOptions tiny() {
  models::ViTOptions o;
  o.hidden_size = 32;
  o.num_hidden_layers = 2;
  o.num_attention_heads = 4;
  o.intermediate_size = 48;
  o.image_size = 16;
  o.patch_size = 4;
  o.num_channels = 3;
  o.num_labels = 5;
  return o;
}

// The attention every model uses (the kernel, and attention_math, the plain-ops path that
// bf16 and dropout take) against the formula written out, forward and all three input
// gradients: no mask, a padding mask, the causal mask with and without it, and a shared
// (tq, tk) mask with and without the causal one; on 1 and 2 threads (the LibTorch 1.x CPU
// kernel gives each thread its own slice of the batch x head matrices).
TEST(Attention, MatchesTheReferenceForwardAndBackwardOnEveryThreadCount) {
  const int saved_threads = at::get_num_threads();
  torch::manual_seed(7);
  auto mask = torch::zeros({3, 1, 1, 6});
  mask.index_put_({1, 0, 0, torch::indexing::Slice(4)}, -std::numeric_limits<float>::infinity());
  const auto shared = torch::randn({6, 6});
  struct Case { int64_t tq; torch::Tensor mask; bool causal; };
  for (const auto& c : {Case{5, torch::Tensor(), false}, Case{5, mask, false}, Case{6, mask, true},
                        Case{6, torch::Tensor(), true}, Case{6, shared, false}, Case{6, shared, true}}) {
    auto q0 = torch::randn({3, 2, c.tq, 4}), k0 = torch::randn({3, 2, 6, 4}), v0 = torch::randn({3, 2, 6, 5});
    auto go = torch::randn({3, 2, c.tq, 5});
    auto formula = [&](const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v) {
      auto scores = torch::matmul(q, k.transpose(-2, -1)) / 2.0;  // sqrt(d), d = 4
      if (c.mask.defined()) scores = scores + c.mask;
      if (c.causal)
        scores = torch::where(torch::ones({c.tq, 6}, torch::kBool).tril(), scores,
                              torch::full({}, -std::numeric_limits<float>::infinity()));
      return torch::matmul(torch::softmax(scores, -1), v);
    };
    auto run = [&](int which) {  // 0: the formula, 1: attention_math, 2: the kernel
      auto q = q0.clone().requires_grad_(), k = k0.clone().requires_grad_(), v = v0.clone().requires_grad_();
      auto out = which == 0   ? formula(q, k, v)
                 : which == 1 ? models::attention_math(q, k, v, c.mask, 0.0, c.causal)
                              : models::scaled_dot_product_attention(q, k, v, c.mask, 0.0, true, c.causal);
      out.backward(go);
      return std::vector<torch::Tensor>{out.detach(), q.grad(), k.grad(), v.grad()};
    };
    const auto ref = run(0);
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      for (int which : {1, 2}) {
        const auto got = run(which);
        const char* names[] = {"output", "dq", "dk", "dv"};
        for (size_t i = 0; i < ref.size(); ++i) {
          ASSERT_TRUE(got[i].defined()) << names[i];
          EXPECT_TRUE(torch::allclose(got[i], ref[i], 1e-5, 1e-5))
              << (which == 1 ? "attention_math: " : "kernel: ") << names[i] << " differs on " << threads
              << " threads (tq " << c.tq << ", causal " << c.causal << ", mask dims "
              << (c.mask.defined() ? c.mask.dim() : 0) << "): max |diff| " << (got[i] - ref[i]).abs().max().item<double>();
        }
      }
    }
  }
  at::set_num_threads(saved_threads);
}

// A decoding step's attention (one query, models/kernels/one_query_attention.h) against the
// formula: queries from a transposed view, keys and values read in place from a cache with room
// to grow, no mask, a padding mask with -inf, a fully masked row at the lowest finite value
// (uniform weights), a shared 2-D mask; on 1 and 2 threads, and through
// scaled_dot_product_attention. It takes only inputs it computes right.
TEST(Attention, OneQueryKernelMatchesTheFormulaOnACacheWithRoomToGrow) {
  torch::NoGradGuard no_grad;
  const int saved_threads = at::get_num_threads();
  torch::manual_seed(11);
  const auto q = torch::randn({3, 1, 2, 8}).transpose(1, 2);  // (3, 2, 1, 8), not contiguous
  const auto k = torch::randn({3, 2, 10, 8}).slice(2, 0, 6), v = torch::randn({3, 2, 10, 5}).slice(2, 0, 6);
  auto padding = torch::zeros({3, 1, 1, 6});
  padding.index_put_({1, 0, 0, torch::indexing::Slice(4)}, -std::numeric_limits<float>::infinity());
  padding.index_put_({2}, std::numeric_limits<float>::lowest());
  for (const auto& mask : {torch::Tensor(), padding, torch::randn({1, 6})}) {
    auto scores = torch::matmul(q, k.transpose(-2, -1)) / std::sqrt(8.0);
    if (mask.defined()) scores = scores + mask;
    const auto want = torch::matmul(torch::softmax(scores, -1), v);
    ASSERT_TRUE(models::one_query_attention_applies(q, k, v, mask, false));
    for (int threads : {1, 2}) {
      at::set_num_threads(threads);
      for (const auto& got : {models::one_query_attention(q, k, v, mask),
                              models::scaled_dot_product_attention(q, k, v, mask, 0.0, false)}) {
        ASSERT_EQ(got.sizes(), want.sizes());
        EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5))
            << threads << " threads, mask dims " << (mask.defined() ? mask.dim() : 0) << ": max |diff| "
            << (got - want).abs().max().item<double>();
      }
    }
  }
  at::set_num_threads(saved_threads);
  EXPECT_FALSE(models::one_query_attention_applies(q, k, v, {}, /*causal=*/true));  // sees only key 0
  EXPECT_FALSE(models::one_query_attention_applies(q.expand({3, 2, 2, 8}), k, v, {}, false));
  EXPECT_FALSE(models::one_query_attention_applies(q.to(torch::kDouble), k, v, {}, false));
  torch::GradMode::set_enabled(true);
  EXPECT_FALSE(models::one_query_attention_applies(q.clone().requires_grad_(), k, v, {}, false));
  torch::GradMode::set_enabled(false);
}

TEST(Activation, GelusMatchLibTorchsInFp32AndBf16ForwardAndBackward) {
  // zoo's GELUs compute Phi(x) (exact: erfc to 1.5e-7) or the tanh form themselves with their
  // own e^x; each must stay LibTorch's GELU computed in double on the same inputs: within a few
  // fp32 ulps in fp32, within one bf16 rounding in bf16 (where LibTorch's own bf16 tanh backward
  // is off by up to 3%), the far tails included; inference takes the same kernel.
  auto x0 = torch::cat({torch::randn({100003}) * 3, torch::tensor({0.f, -8.f, 8.f, -30.f, 30.f, -100.f, 100.f})});
  auto go = torch::randn_like(x0);
  auto diff = [](const torch::Tensor& a, const torch::Tensor& b) {
    const auto da = a.to(torch::kDouble), db = b.to(torch::kDouble);
    return ((da - db).abs() / (db.abs() + 1)).max().item<double>();
  };
  for (const auto& [name, approximate] : {std::pair<std::string, std::string>{"gelu", "none"}, {"gelu_new", "tanh"}})
    for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
      auto xs = x0.to(dtype), gs = go.to(dtype);
      auto x = xs.clone().requires_grad_();
      auto got = models::activation(name, x);
      ASSERT_EQ(got.scalar_type(), dtype);
      got.backward(gs);
      auto y = xs.to(torch::kDouble).requires_grad_();
      auto want = torch::gelu(y, approximate);
      want.backward(gs.to(torch::kDouble));
      const double tol = dtype == torch::kFloat ? 2e-6 : 4e-3;  // bf16: 2^-8, one rounding step
      EXPECT_LE(diff(got, want), tol) << name << " " << dtype;
      EXPECT_LE(diff(x.grad(), y.grad()), tol) << name << " " << dtype;
      torch::NoGradGuard no_grad;
      EXPECT_TRUE(torch::equal(models::activation(name, xs), got.detach())) << name << " " << dtype;
    }
}

TEST(ViT, ShapesAndBackward) {
  torch::manual_seed(0);
  models::ViTForImageClassification m(tiny());
  auto x = torch::randn({3, 3, 16, 16});
  auto logits = m->forward(x);
  ASSERT_EQ(logits.sizes(), (std::vector<int64_t>{3, 5}));
  logits.sum().backward();
  for (const auto& p : m->named_parameters()) {
    ASSERT_TRUE(p.value().grad().defined()) << p.key();
    EXPECT_GT(p.value().grad().abs().sum().item<double>(), 0) << p.key() << " got no gradient";
  }
  EXPECT_THROW(m->forward(torch::randn({1, 1, 16, 16})), c10::Error);  // wrong channels
}

TEST(ViT, ExactStateDictKeys) {
  auto o = tiny();
  o.num_hidden_layers = 1;
  models::ViTForImageClassification m(o);
  std::vector<std::string> keys;
  for (const auto& [k, v] : state_dict(*m)) keys.push_back(k);
  std::sort(keys.begin(), keys.end());
  std::vector<std::string> expected = {
      "classifier.bias",
      "classifier.weight",
      "vit.embeddings.cls_token",
      "vit.embeddings.patch_embeddings.projection.bias",
      "vit.embeddings.patch_embeddings.projection.weight",
      "vit.embeddings.position_embeddings",
      "vit.encoder.layer.0.attention.attention.key.bias",
      "vit.encoder.layer.0.attention.attention.key.weight",
      "vit.encoder.layer.0.attention.attention.query.bias",
      "vit.encoder.layer.0.attention.attention.query.weight",
      "vit.encoder.layer.0.attention.attention.value.bias",
      "vit.encoder.layer.0.attention.attention.value.weight",
      "vit.encoder.layer.0.attention.output.dense.bias",
      "vit.encoder.layer.0.attention.output.dense.weight",
      "vit.encoder.layer.0.intermediate.dense.bias",
      "vit.encoder.layer.0.intermediate.dense.weight",
      "vit.encoder.layer.0.layernorm_after.bias",
      "vit.encoder.layer.0.layernorm_after.weight",
      "vit.encoder.layer.0.layernorm_before.bias",
      "vit.encoder.layer.0.layernorm_before.weight",
      "vit.encoder.layer.0.output.dense.bias",
      "vit.encoder.layer.0.output.dense.weight",
      "vit.layernorm.bias",
      "vit.layernorm.weight",
  };
  EXPECT_EQ(keys, expected);
  // Shapes that Hugging Face checkpoints have.
  for (const auto& [k, v] : state_dict(*m)) {
    if (k == "vit.embeddings.position_embeddings") {
      EXPECT_EQ(v.sizes(), (std::vector<int64_t>{1, 17, 32}));
    }
    if (k == "vit.embeddings.patch_embeddings.projection.weight") {
      EXPECT_EQ(v.sizes(), (std::vector<int64_t>{32, 3, 4, 4}));
    }
  }
}

// Shifted Patch Tokenization's input: the image, then copies moved one pixel down-right,
// down-left, up-right and up-left, each channel in its own place, zeros where they leave.
TEST(ViT, DiagonalShiftsMoveTheImageWithZerosAtTheEdges) {
  const auto images = torch::arange(1, 2 * 2 * 4 * 5 + 1, torch::kFloat).view({2, 2, 4, 5});
  const auto out = models::with_diagonal_shifts(images, 1);
  ASSERT_EQ(out.sizes(), (std::vector<int64_t>{2, 10, 4, 5}));
  const int moves[4][2] = {{1, 1}, {1, -1}, {-1, 1}, {-1, -1}};  // (down, right) of each copy
  auto x = images.accessor<float, 4>();
  auto y = out.accessor<float, 4>();
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t c = 0; c < 2; ++c)
      for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j < 5; ++j) {
          EXPECT_EQ(y[b][c][i][j], x[b][c][i][j]);
          for (int copy = 0; copy < 4; ++copy) {
            const int64_t si = i - moves[copy][0], sj = j - moves[copy][1];
            const float want = si >= 0 && si < 4 && sj >= 0 && sj < 5 ? x[b][c][si][sj] : 0.f;
            EXPECT_EQ(y[b][2 + 2 * copy + c][i][j], want) << "copy " << copy << " channel " << c << " at " << i << "," << j;
          }
        }
  EXPECT_THROW(models::with_diagonal_shifts(images, 0), c10::Error);
}

// Locality Self-Attention's two halves in the shared attention: the scores divided by a
// learned temperature (first sqrt(head_dim)) and each query's own key left out, against the
// formula written out, forward and the temperature's gradient.
TEST(Attention, ExcludeSelfAndALearnedTemperatureFollowTheFormula) {
  torch::manual_seed(3);
  models::MultiHeadAttention attention(
      models::MultiHeadAttentionOptions(8, 2).learned_temperature(true).exclude_self(true));
  ASSERT_TRUE(attention->temperature.defined());
  EXPECT_FLOAT_EQ(attention->temperature.item<float>(), 2.f);  // sqrt(head_dim 4)
  {
    torch::NoGradGuard no_grad;
    attention->temperature.fill_(1.7);
  }
  const auto x = torch::randn({2, 5, 8});
  auto heads = [](const torch::Tensor& t) { return t.view({2, 5, 2, 4}).transpose(1, 2); };  // (B, heads, T, d)
  auto temperature = torch::full({}, 1.7, torch::requires_grad());  // the formula's own copy
  auto q = heads(attention->query(x)), k = heads(attention->key(x)), v = heads(attention->value(x));
  auto scores = torch::matmul(q, k.transpose(-2, -1)) / temperature;
  scores = scores.masked_fill(torch::eye(5, torch::kBool), -std::numeric_limits<float>::infinity());
  auto mixed = torch::matmul(torch::softmax(scores, -1), v).transpose(1, 2).reshape({2, 5, 8});
  const auto want = attention->output(mixed);
  want.pow(2).sum().backward();
  auto got = attention->forward(x);
  EXPECT_TRUE(torch::allclose(got, want, 1e-5, 1e-5)) << (got - want).abs().max().item<double>();
  got.pow(2).sum().backward();
  ASSERT_TRUE(attention->temperature.grad().defined());
  EXPECT_GT(temperature.grad().abs().item<double>(), 1e-3);
  EXPECT_NEAR(attention->temperature.grad().item<double>(), temperature.grad().item<double>(),
              1e-4 * (1 + std::abs(temperature.grad().item<double>())));
  EXPECT_THROW(attention->forward(x.narrow(1, 0, 1)), c10::Error);  // one position has no other key
}

// Both options on: their parameters, under names of their own, train; Hugging Face's layout
// has no place for them, so the export refuses such a model before writing anything.
TEST(ViT, SmallDataOptionsAddTheirParametersTrainAndHaveNoHuggingFaceForm) {
  auto o = tiny();
  o.shifted_patch_tokenization = true;
  o.locality_self_attention = true;
  torch::manual_seed(0);
  models::ViTForImageClassification m(o);
  std::map<std::string, torch::Tensor> params;
  for (const auto& p : m->named_parameters()) params[p.key()] = p.value();
  ASSERT_EQ(params.count("vit.embeddings.patch_embeddings.layernorm.weight"), 1u);
  ASSERT_EQ(params.count("vit.encoder.layer.1.attention.temperature"), 1u);
  EXPECT_EQ(params["vit.embeddings.patch_embeddings.projection.weight"].sizes(), (std::vector<int64_t>{32, 15, 4, 4}));
  EXPECT_EQ(params["vit.embeddings.patch_embeddings.layernorm.weight"].sizes(), (std::vector<int64_t>{240}));
  m->forward(torch::randn({3, 3, 16, 16})).pow(2).sum().backward();
  for (const auto& [name, p] : params) {
    ASSERT_TRUE(p.grad().defined()) << name;
    EXPECT_GT(p.grad().abs().sum().item<double>(), 0) << name << " got no gradient";
  }
  for (const char* field : {"shifted_patch_tokenization", "locality_self_attention"}) {
    json section = to_json(tiny());
    section["model_type"] = "vit";
    section[field] = true;
    EXPECT_THROW(models::to_hf_config(models::resolve_model_config(section)), Error) << field;
  }
  o.patch_size = 1;
  o.image_size = 4;
  EXPECT_THROW(o.validate(), Error);  // half a patch of one pixel is no shift
}

torch::Tensor python_logits(const test::TempDir& dir, const std::string& model_dir, const torch::Tensor& x) {
  safetensors::save(dir / "in.safetensors", {{"pixel_values", x}});
  auto r = test::run_python("hf_vit.py", "logits " + model_dir + " " + (dir / "in.safetensors") + " " +
                                             (dir / "out.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return torch::Tensor();
  return safetensors::load(dir / "out.safetensors").tensors.at("logits");
}

TEST(ViT, ExportLoadsInHuggingFaceLayoutWithSameLogits) {
  test::TempDir dir;
  torch::manual_seed(1);
  models::ViTForImageClassification m(tiny());
  {  // non-trivial LayerNorms, biases and embeddings
    torch::NoGradGuard g;
    for (auto& p : m->parameters()) p.add_(torch::randn_like(p) * 0.1);
  }
  m->eval();
  json section = to_json(tiny());
  section["model_type"] = "vit";
  const json resolved = models::resolve_model_config(section);
  save_model(*m, dir / "model.safetensors", json{{"model", resolved}});
  write_json_file(dir / "config.json", models::to_hf_config(resolved));
  auto x = torch::randn({2, 3, 16, 16});
  auto py = python_logits(dir, dir.path().string(), x);
  ASSERT_TRUE(py.defined());
  torch::NoGradGuard g;
  auto ours = m->forward(x);
  EXPECT_TRUE(torch::allclose(ours, py, 1e-5, 1e-5)) << "max |diff| " << (ours - py).abs().max().item<double>();
}

TEST(ImageClassification, LabelSmoothingFactorSmoothsTheTrainingLoss) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  auto config = resolve_config(
      json::parse(test::tiny_vit_config(dir.path().string(), R"(, "label_smoothing_factor": 0.2)")), "tiny.json");
  config["model"]["hidden_dropout_prob"] = 0.0;
  auto task = make_task(config);
  task->prepare_training("");
  auto* ic = dynamic_cast<ImageClassificationTask*>(task.get());
  ASSERT_NE(ic, nullptr);
  const auto batch = task->make_train_batch({0, 1, 2, 3, 4, 5}, 1);
  torch::NoGradGuard no_grad;
  const double loss = task->loss(batch).total.item<double>();
  auto logp = torch::log_softmax(ic->vit()->forward(batch["pixel_values"]), -1);
  const double nll = -logp.gather(1, batch["labels"].unsqueeze(1)).mean().item<double>();
  const double uniform = -logp.mean().item<double>();  // cross-entropy against uniform targets
  EXPECT_NEAR(loss, 0.8 * nll + 0.2 * uniform, 1e-5);
  EXPECT_GT(std::abs(loss - nll), 1e-3);  // it did smooth
}

// train.r_drop_alpha: R-Drop's loss (zoo::r_drop_loss) on the augmented batch, both copies of
// each image the same pixels with their own dropout masks.
TEST(ImageClassification, RDropAddsTheKlOfTwoDropoutPasses) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  auto config = resolve_config(
      json::parse(test::tiny_vit_config(dir.path().string(), R"(, "r_drop_alpha": 5, "label_smoothing_factor": 0.1)")),
      "tiny.json");
  config["model"]["hidden_dropout_prob"] = 0.3;
  auto task = make_task(config);
  task->prepare_training("");
  test::expect_r_drop_loss(*task, task->make_train_batch({0, 1, 2, 3, 4, 5, 6, 7}, 1), 5.0);
}

TEST(ImageClassification, RandomErasingSetsARectangleOfEachTrainingImageToTheMeanColour) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  auto config = resolve_config(json::parse(test::tiny_vit_config(dir.path().string())), "tiny.json");
  config["data"]["random_crop_padding"] = 0;
  config["data"]["horizontal_flip_prob"] = 0.0;
  auto plain_task = make_task(config);
  config["data"]["random_erasing_prob"] = 1.0;
  auto task = make_task(config);
  plain_task->prepare_training("");
  task->prepare_training("");
  const std::vector<int64_t> indices{0, 1, 2, 3, 4, 5, 6, 7};
  const auto plain = plain_task->make_train_batch(indices, 3)["pixel_values"];
  const auto erased = task->make_train_batch(indices, 3)["pixel_values"];
  EXPECT_TRUE(torch::equal(erased, task->make_train_batch(indices, 3)["pixel_values"]));  // deterministic per seed
  const double mean = 0.1307, std = 0.3081;  // MNIST's, the defaults for data.dataset=mnist
  const double fill = (std::round(mean * 255) / 255 - mean) / std;  // ~0: the mean colour
  for (int64_t i = 0; i < 8; ++i) {
    const auto changed = erased[i].ne(plain[i]);
    EXPECT_GT(changed.sum().item<int64_t>(), 0) << "image " << i;
    EXPECT_TRUE(torch::allclose(erased[i].masked_select(changed), torch::full({1}, fill), 0, 1e-6)) << "image " << i;
  }
}

// data.mixup_alpha / data.cutmix_alpha: the training batch carries each image's partner label
// and lambda, and the loss is lambda * CE(own label) + (1 - lambda) * CE(partner's), label
// smoothing on both. R-Drop does not combine with them.
TEST(ImageClassification, MixupAndCutMixWeighBothLabelsInTheLoss) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  auto config = resolve_config(
      json::parse(test::tiny_vit_config(dir.path().string(), R"(, "label_smoothing_factor": 0.1)")), "tiny.json");
  config["model"]["hidden_dropout_prob"] = 0.0;
  const std::vector<int64_t> indices{0, 1, 2, 3, 4, 5, 6, 7};
  auto plain = make_task(config);
  plain->prepare_training("");
  EXPECT_FALSE(plain->make_train_batch(indices, 1).tensors.count("mix_lambda"));  // off by default
  config["data"]["mixup_alpha"] = 0.8;
  config["data"]["cutmix_alpha"] = 1.0;
  auto task = make_task(config);
  task->prepare_training("");
  auto* ic = dynamic_cast<ImageClassificationTask*>(task.get());
  ASSERT_NE(ic, nullptr);
  const auto batch = task->make_train_batch(indices, 1);
  const auto lambda = batch["mix_lambda"];
  EXPECT_TRUE(torch::equal(batch["mix_labels"], batch["labels"].flip(0)));
  EXPECT_TRUE(lambda.lt(0.999).any().item<bool>());
  torch::NoGradGuard no_grad;
  const double loss = task->loss(batch).total.item<double>();
  const auto logp = torch::log_softmax(ic->vit()->forward(batch["pixel_values"]), -1);
  const auto smoothed = [&](const torch::Tensor& labels) {  // per image, label smoothing 0.1
    return -(0.9 * logp.gather(1, labels.unsqueeze(1)).squeeze(1) + 0.1 * logp.mean(1));
  };
  const double expected = (lambda * smoothed(batch["labels"]) + (1 - lambda) * smoothed(batch["mix_labels"])).mean().item<double>();
  EXPECT_NEAR(loss, expected, 1e-5);
  const double own_only = smoothed(batch["labels"]).mean().item<double>();
  EXPECT_GT(std::abs(loss - own_only), 1e-3);  // the partner's label counts
  config["train"]["r_drop_alpha"] = 1.0;
  EXPECT_THROW(make_task(config), Error);
}

TEST(ImageClassification, TestTimeHflipAveragesTheProbabilitiesOfTheImageAndItsMirror) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  auto config = resolve_config(json::parse(test::tiny_vit_config(dir.path().string())), "tiny.json");
  config["model"]["hidden_dropout_prob"] = 0.0;
  config["data"]["test_time_hflip"] = true;
  auto task = make_task(config);
  auto* ic = dynamic_cast<ImageClassificationTask*>(task.get());
  ASSERT_NE(ic, nullptr);
  {  // a model that is not mirror-symmetric
    torch::NoGradGuard g;
    for (auto& p : ic->vit()->parameters()) p.add_(torch::randn_like(p) * 0.5);
  }
  const torch::Device cpu(torch::kCPU);
  const Metrics m = evaluate(*task, "test", 5, cpu);  // batch 5: a short last batch
  // By hand, from the two forward passes.
  auto images = data::load_mnist_like(dir.path().string(), "test", {"a", "b", "c", "d"});
  auto x = ic->preprocess(images.images);
  torch::NoGradGuard g;
  ic->vit()->eval();
  auto p = (torch::softmax(ic->vit()->forward(x), -1) + torch::softmax(ic->vit()->forward(x.flip({-1})), -1)) / 2;
  const double accuracy = p.argmax(-1).eq(images.labels).to(torch::kDouble).mean().item<double>();
  const double loss = -p.log().gather(1, images.labels.unsqueeze(1)).mean().item<double>();
  EXPECT_NEAR(m.at("accuracy"), accuracy, 1e-9);
  EXPECT_NEAR(m.at("loss"), loss, 1e-5);
  // ...and it differs from the plain evaluation of the same model.
  auto plain = torch::log_softmax(ic->vit()->forward(x), -1);
  const double plain_loss = -plain.gather(1, images.labels.unsqueeze(1)).mean().item<double>();
  EXPECT_GT(std::abs(loss - plain_loss), 1e-4);
}

// data.test_time_shift: the image moved a pixel up, down, left and right (black entering at the
// edge, before normalisation, as the training crop pads), each with its mirror too: ten views
// averaged, against the views made by hand from the raw pixels.
TEST(ImageClassification, TestTimeShiftAveragesTheMovedImagesAndTheirMirrors) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  auto config = resolve_config(json::parse(test::tiny_vit_config(dir.path().string())), "tiny.json");
  config["model"]["hidden_dropout_prob"] = 0.0;
  config["data"]["test_time_hflip"] = true;
  config["data"]["test_time_shift"] = 1;
  auto task = make_task(config);
  auto* ic = dynamic_cast<ImageClassificationTask*>(task.get());
  ASSERT_NE(ic, nullptr);
  {
    torch::NoGradGuard g;
    for (auto& p : ic->vit()->parameters()) p.add_(torch::randn_like(p) * 0.5);
  }
  const Metrics m = evaluate(*task, "test", 5, torch::Device(torch::kCPU));
  auto images = data::load_mnist_like(dir.path().string(), "test", {"a", "b", "c", "d"});
  const int64_t h = images.images.size(2), w = images.images.size(3);
  const auto padded = torch::constant_pad_nd(images.images, {1, 1, 1, 1}, 0);  // black around
  std::vector<torch::Tensor> views = {images.images};
  for (const auto& [down, right] : {std::pair<int64_t, int64_t>{-1, 0}, {1, 0}, {0, -1}, {0, 1}})
    views.push_back(padded.narrow(2, 1 - down, h).narrow(3, 1 - right, w));
  torch::NoGradGuard g;
  ic->vit()->eval();
  torch::Tensor p;
  for (const auto& view : views) {
    auto x = ic->preprocess(view.contiguous());
    auto both = torch::softmax(ic->vit()->forward(x), -1) + torch::softmax(ic->vit()->forward(x.flip({-1})), -1);
    p = p.defined() ? p + both : both;
  }
  p = p / 10.0;
  const double loss = -p.log().gather(1, images.labels.unsqueeze(1)).mean().item<double>();
  EXPECT_NEAR(m.at("loss"), loss, 1e-5);
  EXPECT_NEAR(m.at("accuracy"), p.argmax(-1).eq(images.labels).to(torch::kDouble).mean().item<double>(), 1e-9);
  config["data"]["test_time_shift"] = 0;  // the mirror alone differs
  auto mirror_only = make_task(config);
  auto* mo = dynamic_cast<ImageClassificationTask*>(mirror_only.get());
  {
    torch::NoGradGuard copy;
    auto from = ic->vit()->parameters();
    auto to = mo->vit()->parameters();
    for (size_t i = 0; i < from.size(); ++i) to[i].copy_(from[i]);
  }
  EXPECT_GT(std::abs(evaluate(*mirror_only, "test", 5, torch::Device(torch::kCPU)).at("loss") - loss), 1e-4);
}

// zoo eval --ensemble: the members' predicted distributions (each with its own test-time
// views) averaged and scored as one classifier, against the same by hand; a member that reads
// other data is refused by its name.
TEST(ImageClassification, AnEnsembleScoresTheMeanOfItsMembersProbabilities) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  auto config = resolve_config(json::parse(test::tiny_vit_config(dir.path().string())), "tiny.json");
  config["model"]["hidden_dropout_prob"] = 0.0;
  config["data"]["test_time_hflip"] = true;
  auto a = make_task(config), b = make_task(config);
  torch::manual_seed(11);
  for (auto* t : {a.get(), b.get()}) {
    torch::NoGradGuard g;
    for (auto& p : t->model()->parameters()) p.add_(torch::randn_like(p) * 0.5);
  }
  const torch::Device cpu(torch::kCPU);
  const Metrics m = evaluate_ensemble({a.get(), b.get()}, {"a", "b"}, "test", 5, cpu);
  auto images = data::load_mnist_like(dir.path().string(), "test", {"a", "b", "c", "d"});
  torch::Tensor p;
  {
    torch::NoGradGuard g;
    for (auto* t : {a.get(), b.get()}) {
      auto* ic = dynamic_cast<ImageClassificationTask*>(t);
      ASSERT_NE(ic, nullptr);
      ic->vit()->eval();
      auto x = ic->preprocess(images.images);
      auto mean = (torch::softmax(ic->vit()->forward(x), -1) + torch::softmax(ic->vit()->forward(x.flip({-1})), -1)) / 4;
      p = p.defined() ? p + mean : mean;
    }
  }
  const double loss = -p.log().gather(1, images.labels.unsqueeze(1)).mean().item<double>();
  EXPECT_EQ(m.at("examples"), 16);
  EXPECT_NEAR(m.at("loss"), loss, 1e-5);
  EXPECT_NEAR(m.at("accuracy"), p.argmax(-1).eq(images.labels).to(torch::kDouble).mean().item<double>(), 1e-9);
  EXPECT_GT(std::abs(evaluate(*a, "test", 5, cpu).at("loss") - loss), 1e-4);  // not a member alone

  test::TempDir other;  // the same shapes, other labels
  test::write_tiny_mnist(other.path().string(), 64, 16, 8, 4, /*seed=*/99);
  auto other_config = resolve_config(json::parse(test::tiny_vit_config(other.path().string())), "tiny.json");
  auto c = make_task(other_config);
  try {
    evaluate_ensemble({a.get(), c.get()}, {"a", "runs/c"}, "test", 5, cpu);
    ADD_FAILURE() << "an ensemble whose members read other labels was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("runs/c: ", 0), 0u) << e.what();
  }
}

TEST(ViT, LoadsAHuggingFaceCheckpointWithSameLogits) {
  test::TempDir dir;
  const std::string hf = dir / "hf";
  auto r = test::run_python("hf_vit.py", "make " + hf + " 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto task = load_task(hf, {}, torch::Device(torch::kCPU));
  auto* ic = dynamic_cast<ImageClassificationTask*>(task.get());
  ASSERT_NE(ic, nullptr);
  EXPECT_EQ(ic->vit()->options().labels, (std::vector<std::string>{"cat", "dog", "bird"}));
  torch::manual_seed(2);
  auto x = torch::randn({2, 3, 16, 16});
  auto py = python_logits(dir, hf, x);
  ASSERT_TRUE(py.defined());
  torch::NoGradGuard g;
  auto ours = ic->vit()->forward(x);
  EXPECT_TRUE(torch::allclose(ours, py, 1e-5, 1e-5)) << "max |diff| " << (ours - py).abs().max().item<double>();
}

}  // namespace
}  // namespace zoo
