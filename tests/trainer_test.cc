// The generic trainer: exact resume, NaN stop, atomic checkpoints and rotation.
#include <filesystem>
#include <set>

#include <gtest/gtest.h>
#include <torch/version.h>

#include "fixtures.h"
#include "train_fixtures.h"
#include "models/vit.h"
#include "models/kernels/dropout.h"
#include "io/checkpoint.h"
#include "io/checkpoint_average.h"
#include "train/collective.h"
#include "train/device.h"
#include "train/optimizers.h"
#include "io/safetensors.h"
#include "train/task_registry.h"
#include "train/trainer.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

using test::train_losses;

json tiny_config(const test::TempDir& dir, const std::string& extra = "") {
  test::write_tiny_mnist(dir.path().string(), 160, 40);
  return resolve_config(json::parse(test::tiny_vit_config(dir.path().string(), extra)), "tiny.json");
}

void run(const json& config, const std::string& out, const std::string& resume = "") {
  test::run_training(config, out, torch::Device(torch::kCPU), resume);
}

// N steps + resume + M steps gives the same per-step losses as N+M steps uninterrupted
// (dropout, augmentation, data order and optimizer state all restored).
// Exact resume with dropout (one thread runs each batch) and without it (the batch is cut
// into one slice per core, run at once: see PerCoreBatchSlicesGiveTheWholeBatchGradients).
void expect_exact_resume(const json& config, const test::TempDir& dir) {
  const std::string a = dir / "a", b = dir / "b";
  run(config, a);
  const auto full = train_losses(a);
  ASSERT_EQ(full.size(), 8u);
  fs::create_directories(b);
  fs::copy(a + "/checkpoint-4", b + "/checkpoint-4", fs::copy_options::recursive);
  run(config, b, b + "/checkpoint-4");
  const auto resumed = train_losses(b);
  ASSERT_EQ(resumed.size(), 4u);
  for (int64_t step = 5; step <= 8; ++step) {
    ASSERT_TRUE(resumed.count(step)) << step;
    EXPECT_EQ(resumed.at(step), full.at(step)) << "step " << step;
  }
  // Final weights identical too (and, with train.ema_decay, the weights being trained).
  for (const std::string file : {"model.safetensors", "training_weights.safetensors"}) {
    const std::string fa = a + "/checkpoint-8/" + file, fb = b + "/checkpoint-8/" + file;
    ASSERT_EQ(fs::exists(fa), fs::exists(fb)) << file;
    if (!fs::exists(fa)) continue;
    auto wa = safetensors::load(fa).tensors;
    auto wb = safetensors::load(fb).tensors;
    ASSERT_EQ(wa.size(), wb.size());
    for (auto& [name, t] : wa) EXPECT_TRUE(torch::equal(t, wb.at(name))) << file << " " << name;
  }
}

TEST(Trainer, ResumeIsExact) {
  test::TempDir dir;
  expect_exact_resume(tiny_config(dir), dir);
}

TEST(Trainer, ResumeIsExactWithPerCoreBatchSlices) {
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(2);
  test::TempDir dir;
  json config = tiny_config(dir, R"(, "label_smoothing_factor": 0.1)");
  config["model"]["hidden_dropout_prob"] = 0.0;
  expect_exact_resume(config, dir);
  at::set_num_threads(saved_threads);
}

TEST(WeightAverage, FollowsTheDecayScheduleAndSwapsInPlace) {
  torch::manual_seed(1);
  torch::nn::Linear net(3, 2);
  auto w0 = net->weight.detach().clone(), b0 = net->bias.detach().clone();
  WeightAverage average(*net, 0.9);
  EXPECT_DOUBLE_EQ(WeightAverage::decay_at(0.9, 1), 2.0 / 11.0);  // warm-up of the decay
  EXPECT_DOUBLE_EQ(WeightAverage::decay_at(0.9, 1000), 0.9);
  torch::NoGradGuard no_grad;
  auto w1 = torch::randn({2, 3});
  net->weight.copy_(w1);
  average.update(1);
  const double d1 = 2.0 / 11.0;
  auto expect1 = d1 * w0 + (1 - d1) * w1;
  EXPECT_TRUE(torch::allclose(average.averages()[0], expect1, 1e-6, 1e-7));
  EXPECT_TRUE(torch::allclose(average.averages()[1], b0));  // unchanged weights stay put
  auto w2 = torch::randn({2, 3});
  net->weight.copy_(w2);
  average.update(1000);
  auto expect2 = 0.9 * expect1 + 0.1 * w2;
  EXPECT_TRUE(torch::allclose(average.averages()[0], expect2, 1e-6, 1e-7));
  // swap() puts the average into the model and the live weights into the average.
  average.swap();
  EXPECT_TRUE(torch::allclose(net->weight, expect2, 1e-6, 1e-7));
  EXPECT_TRUE(torch::equal(average.averages()[0], w2));
  average.swap();
  EXPECT_TRUE(torch::equal(net->weight, w2));
}

// With train.ema_decay a checkpoint holds the average (model.safetensors) and the weights
// being trained (training_weights.safetensors); resume is exact for both, and resuming
// with the average switched off (or on, from a run without it) is refused with the fix.
TEST(Trainer, WeightAverageCheckpointsAndResumesExactly) {
  test::TempDir dir;
  const json config = tiny_config(dir, R"(, "ema_decay": 0.9)");
  expect_exact_resume(config, dir);
  const std::string ckpt = dir / "a/checkpoint-8";
  auto averaged = safetensors::load(ckpt + "/model.safetensors").tensors;
  auto live = safetensors::load(ckpt + "/training_weights.safetensors").tensors;
  ASSERT_EQ(averaged.size(), live.size());
  EXPECT_FALSE(torch::equal(averaged.at("classifier.weight"), live.at("classifier.weight")));
  // The evaluation recorded in the checkpoint is that of the average, as `zoo eval` sees it.
  const json recorded = read_json_file(ckpt + "/trainer_state.json").at("eval_metrics");
  auto reloaded = load_task(ckpt, {}, torch::Device(torch::kCPU));
  const Metrics m = evaluate(*reloaded, "valid", 64, torch::Device(torch::kCPU));
  EXPECT_NEAR(m.at("loss"), recorded.at("loss").get<double>(), 1e-6);

  json off = config;
  off["train"]["ema_decay"] = 0.0;
  try {
    run(off, dir / "c", ckpt);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--set train.ema_decay=0.9"), std::string::npos) << e.what();
  }
  const json plain = tiny_config(dir);
  run(plain, dir / "d");
  try {
    run(config, dir / "e", dir / "d/checkpoint-4");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("without train.ema_decay"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "d/checkpoint-8/training_weights.safetensors"));
}

// train.average_checkpoints: checkpoint-averaged holds the element-wise mean of the newest N
// checkpoints' weights (not the last one's), loads like any checkpoint, and is evaluated at
// the end; a save_total_limit that cannot keep N is refused before training.
TEST(Trainer, MaxTimeEndsTheRunAndItsScheduleOnTheClock) {
  test::TempDir dir;
  // 40,000 steps take far longer than the budget (about 25 s here): only the clock can end this run early.
  json config = tiny_config(dir, R"(, "max_time": 1.5, "lr_scheduler_type": "linear", "warmup_steps": 0)");
  config["train"]["max_steps"] = 40000;
  config["train"]["save_steps"] = 0;
  auto task = make_task(config);
  const auto start = std::chrono::steady_clock::now();
  const TrainResult result = train(*task, TrainerArgs{config, "tiny.json", dir / "run", torch::Device(torch::kCPU), ""});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GT(result.global_step, 20);
  EXPECT_LT(result.global_step, 40000);
  EXPECT_LT(seconds, 1.5 + 20) << "the budget, then one evaluation and one checkpoint";
  EXPECT_FALSE(result.final_metrics.empty());  // the last step was evaluated and saved
  EXPECT_TRUE(fs::exists(dir / cat("run/checkpoint-", result.global_step, "/model.safetensors")));
  // The linear schedule ran its whole length within the budget: near 0 at the end, not at the
  // 1 - steps/40000 of the steps' first estimate.
  const auto records = test::train_records(dir / "run");
  const double peak = config["train"]["learning_rate"].get<double>();
  ASSERT_TRUE(records.count(result.global_step));
  EXPECT_LT(records.at(result.global_step).at("lr").get<double>(), 0.15 * peak);
  // A quarter of the way it is still high (0.75 of the peak at an even pace; a loaded machine's
  // pace is not even, so the check leaves room).
  EXPECT_GT(records.at(result.global_step / 4).at("lr").get<double>(), 0.3 * peak);
  // The budget was spent: the last step is the one the pace says ends at the budget, so the
  // clock may stop a step's time short of it.
  const json state = read_json_file(dir / cat("run/checkpoint-", result.global_step, "/trainer_state.json"));
  EXPECT_GE(state.at("train_seconds").get<double>(), 1.35);
}

TEST(Trainer, AveragedCheckpointIsTheMeanOfTheNewestFiles) {
  test::TempDir dir;
  json config = tiny_config(dir, R"(, "average_checkpoints": 3)");
  config["train"]["save_steps"] = 2;  // checkpoints 2, 4, 6, 8: the newest three are 4, 6, 8
  auto task = make_task(config);
  const std::string run_dir = dir / "run", averaged = run_dir + "/" + kAveragedCheckpoint;
  const TrainResult result = train(*task, TrainerArgs{config, "tiny.json", run_dir, torch::Device(torch::kCPU), ""});
  ASSERT_EQ(result.averaged_checkpoint, averaged);
  const auto mean = safetensors::load(averaged + "/model.safetensors").tensors;
  std::vector<std::map<std::string, torch::Tensor>> files;
  for (int step : {4, 6, 8}) 
    files.push_back(safetensors::load(cat(run_dir, "/checkpoint-", step, "/model.safetensors")).tensors);
  ASSERT_EQ(mean.size(), files[0].size());
  for (const auto& [name, t] : mean) {
    const auto expected = (files[0].at(name).to(torch::kFloat64) + files[1].at(name).to(torch::kFloat64) +
                           files[2].at(name).to(torch::kFloat64)) / 3;
    EXPECT_TRUE(torch::allclose(t.to(torch::kFloat64), expected, 0, 1e-7)) << name;
  }
  EXPECT_FALSE(torch::equal(mean.at("classifier.weight"), files[2].at("classifier.weight")));
  EXPECT_EQ(read_json_file(averaged + "/averaged_from.json").at("steps"), json({4, 6, 8}));
  EXPECT_FALSE(fs::exists(averaged + "/optimizer.pt"));
  EXPECT_FALSE(fs::exists(averaged + "/trainer_state.json"));  // a model, not a point to resume from
  // The evaluation reported is that of the averaged weights, as `zoo eval` sees them.
  auto reloaded = load_task(averaged, {}, torch::Device(torch::kCPU));
  const Metrics m = evaluate(*reloaded, "valid", 64, torch::Device(torch::kCPU));
  ASSERT_TRUE(result.averaged_metrics.count("loss"));
  EXPECT_NEAR(m.at("loss"), result.averaged_metrics.at("loss"), 1e-6);
  EXPECT_NE(result.averaged_metrics.at("loss"), result.final_metrics.at("loss"));

  json few = config;
  few["train"]["save_total_limit"] = 2;
  try {
    auto t = make_task(few);
    train(*t, TrainerArgs{few, "tiny.json", dir / "few", torch::Device(torch::kCPU), ""});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.save_total_limit to 0"), std::string::npos) << e.what();
  }
  try {
    newest_checkpoints(run_dir, 5);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("4 checkpoint(s), 5 to average"), std::string::npos) << e.what();
  }
}

// A task whose loss turns NaN at a given step.
class NanTask : public Task {
 public:
  explicit NanTask(int64_t nan_at) : nan_at_(nan_at), net_(torch::nn::Linear(2, 1)) {}
  std::shared_ptr<torch::nn::Module> model() override { return net_.ptr(); }
  void prepare_training(const std::string&) override {}
  int64_t num_train_examples() const override { return 64; }
  Batch make_train_batch(const std::vector<int64_t>& idx, uint64_t) const override {
    return Batch{{{"x", torch::ones({static_cast<int64_t>(idx.size()), 2})}}, static_cast<int64_t>(idx.size()), 0};
  }
  Loss loss(const Batch& b) override {
    auto l = net_->forward(b["x"]).pow(2).mean();
    return ++calls_ >= nan_at_ ? l * std::numeric_limits<float>::quiet_NaN() : l;
  }
  std::vector<std::vector<int64_t>> eval_plan(const std::string&, int64_t) override { return {{0}}; }
  Batch make_eval_batch(const std::string&, const std::vector<int64_t>&) const override { return Batch{{}, 1, 0}; }
  Metrics eval_sums(const std::string&, const Batch&) override { return {{"loss", 1.0}}; }

 private:
  int64_t nan_at_, calls_ = 0;
  torch::nn::Linear net_;
};

TEST(Trainer, NonFiniteLossStopsWithTheStepAndKeepsTheLastCheckpoint) {
  test::TempDir dir;
  json config = {{"model", {{"model_type", "test"}}},
                 {"train", to_json(read_options<TrainOptions>(
                               json{{"max_steps", 10}, {"save_steps", 2}, {"per_device_train_batch_size", 8},
                                    {"report_to_tensorboard", false}},
                               "train"))}};
  NanTask task(5);
  TrainerArgs args{config, "x.json", dir / "out", torch::Device(torch::kCPU), ""};
  try {
    train(task, args);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("at step 5"), std::string::npos) << msg;
    EXPECT_NE(msg.find("checkpoint-4"), std::string::npos) << msg;
  }
  EXPECT_EQ(latest_checkpoint(dir / "out"), (fs::path(dir / "out") / "checkpoint-4").string());
}

// A linear model on fixed data: loss = mean((w.x + b - y)^2); evaluation reports a loss
// that never improves after the first evaluation.
class LinearTask : public Task {
 public:
  LinearTask() : net_(torch::nn::Linear(3, 1)) {
    torch::manual_seed(5);
    x_ = torch::randn({64, 3});
    y_ = x_.matmul(torch::tensor({1.0f, -2.0f, 0.5f})) + 0.3;
  }
  std::shared_ptr<torch::nn::Module> model() override { return net_.ptr(); }
  void prepare_training(const std::string&) override {}
  int64_t num_train_examples() const override { return 64; }
  Batch make_train_batch(const std::vector<int64_t>& idx, uint64_t) const override {
    auto i = torch::tensor(idx, torch::kLong);
    return Batch{{{"x", x_.index_select(0, i)}, {"y", y_.index_select(0, i)}}, static_cast<int64_t>(idx.size()), 0};
  }
  Loss loss(const Batch& b) override {
    return (net_->forward(b["x"]).squeeze(1) - b["y"]).pow(2).mean();
  }
  std::vector<std::vector<int64_t>> eval_plan(const std::string&, int64_t) override { return {{0}}; }
  Batch make_eval_batch(const std::string&, const std::vector<int64_t>&) const override { return Batch{{}, 1, 0}; }
  Metrics eval_sums(const std::string&, const Batch&) override {  // one batch: one call per evaluation
    ++evals;
    return {{"loss", evals == 1 ? 1.0 : 2.0}};
  }
  int evals = 0;
  torch::nn::Linear net_;

 private:
  torch::Tensor x_, y_;
};

// Gives `to` the weights of `from`, so that two runs start alike.
void start_alike(const LinearTask& from, LinearTask& to) {
  torch::NoGradGuard g;
  to.net_->weight.copy_(from.net_->weight);
  to.net_->bias.copy_(from.net_->bias);
}

json linear_config(const json& train) {
  json t = train;
  t["report_to_tensorboard"] = false;
  t["optim"] = "sgd";
  t["momentum"] = 0.0;
  t["learning_rate"] = 0.05;
  t["lr_scheduler_type"] = "constant";
  t["max_grad_norm"] = 0.0;
  return {{"model", {{"model_type", "test"}}}, {"train", to_json(read_options<TrainOptions>(t, "train"))}};
}

TEST(Trainer, GradientAccumulationEqualsTheLargerBatch) {
  test::TempDir dir;
  LinearTask a, b;
  start_alike(a, b);
  const auto w0 = a.net_->weight.detach().clone();
  train(a, TrainerArgs{linear_config({{"max_steps", 3}, {"per_device_train_batch_size", 16}}), "x", dir / "a",
                       torch::Device(torch::kCPU), ""});
  train(b, TrainerArgs{linear_config({{"max_steps", 3},
                                      {"per_device_train_batch_size", 8},
                                      {"gradient_accumulation_steps", 2}}),
                       "x", dir / "b", torch::Device(torch::kCPU), ""});
  EXPECT_TRUE(torch::allclose(a.net_->weight, b.net_->weight, 1e-6, 1e-6));
  EXPECT_TRUE(torch::allclose(a.net_->bias, b.net_->bias, 1e-6, 1e-6));
  EXPECT_FALSE(torch::allclose(a.net_->weight, w0));  // it did train
}

// A small grey-image ViT for gradient checks (8x8 images, 3 classes, 2 heads).
models::ViTOptions small_vit(int64_t hidden, int64_t layers, int64_t intermediate, int64_t patch) {
  models::ViTOptions o;
  o.hidden_size = hidden, o.num_hidden_layers = layers, o.num_attention_heads = 2, o.intermediate_size = intermediate;
  o.image_size = 8, o.patch_size = patch, o.num_channels = 1, o.num_labels = 3;
  return o;
}

// The parameters' gradients (copies) after one forward_backward call from zero gradients.
std::vector<torch::Tensor> gradients_of(const std::function<torch::Tensor(const Batch&)>& loss_of, const Batch& batch,
                                        double weight, int64_t shards, const std::vector<torch::Tensor>& params,
                                        double* loss, bool onednn = false,
                                        const std::function<double(const Batch&)>& terms_of = {}) {
  for (auto& p : params) const_cast<torch::Tensor&>(p).mutable_grad() = torch::Tensor();
  *loss = forward_backward(loss_of, batch, weight, shards, params, {}, onednn, terms_of).total;
  std::vector<torch::Tensor> g;
  for (auto& p : params) g.push_back(p.grad().clone());
  return g;
}

// One batch slice per core (zoo::forward_backward with shards > 1) gives the gradients and
// loss of the whole batch, also when the slices differ in size, and the same bits each time.
TEST(Trainer, PerCoreBatchSlicesGiveTheWholeBatchGradients) {
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(3);
  models::ViTForImageClassification model(small_vit(16, 1, 24, 4));
  const auto params = model->parameters();
  const Batch batch{{{"pixel_values", torch::randn({7, 1, 8, 8})}, {"labels", torch::randint(0, 3, {7}, torch::kLong)}}, 7, 0};
  auto loss_of = [&](const Batch& b) {
    return torch::nn::functional::cross_entropy(model->forward(b["pixel_values"]), b["labels"]);
  };
  auto grads_for = [&](int64_t shards, double* loss) { return gradients_of(loss_of, batch, 0.5, shards, params, loss); };
  double whole = 0, sliced = 0, again = 0;
  const auto ref = grads_for(1, &whole), got = grads_for(2, &sliced), got2 = grads_for(2, &again);
  EXPECT_NEAR(sliced, whole, 1e-6);
  EXPECT_EQ(sliced, again);
  ASSERT_EQ(got.size(), ref.size());
  for (size_t i = 0; i < ref.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got[i], ref[i], 1e-5, 1e-6)) << "parameter " << i << ": max |diff| "
                                                             << (got[i] - ref[i]).abs().max().item<double>();
    EXPECT_TRUE(torch::equal(got[i], got2[i])) << "parameter " << i << " differs between two identical steps";
  }
  double checked = NAN;
  forward_backward(loss_of, batch, 1.0, 2, params, [&](double v) { checked = v; });
  EXPECT_NEAR(checked, whole, 1e-6);  // the check sees the whole batch's loss
  EXPECT_THROW(forward_backward(loss_of, batch, 1.0, 2, params, [](double) { throw Error("stop"); }), Error);
  at::set_num_threads(saved_threads);
}

// Dropout inside batch slices: each slice's masks come from its own seed stream, its base
// drawn from the default generator in slice order, so a step replays from torch::manual_seed
// whatever the threads' timing. Replayed here one slice after the other on this thread; two
// dropout calls per slice, so that slices drawing straight from the generator would differ.
TEST(Trainer, BatchSlicesTakeTheirDropoutMasksFromTheirOwnStreams) {
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(6);
  torch::nn::Linear layer(5, 3);
  const auto params = layer->parameters();
  const Batch batch{{{"x", torch::randn({9, 5})}, {"y", torch::randint(0, 3, {9}, torch::kLong)}}, 9, 0};
  auto loss_of = [&](const Batch& b) {
    const auto h = models::apply_dropout(b["x"], 0.4, /*training=*/true);
    return torch::nn::functional::cross_entropy(models::apply_dropout(layer->forward(h), 0.2, true), b["y"]);
  };
  double sliced = 0, again = 0;
  torch::manual_seed(7);
  const auto got = gradients_of(loss_of, batch, 1.0, 2, params, &sliced);
  torch::manual_seed(7);
  const auto got2 = gradients_of(loss_of, batch, 1.0, 2, params, &again);
  EXPECT_EQ(sliced, again);

  torch::manual_seed(7);
  const uint64_t seeds[2] = {models::draw_dropout_seed(), models::draw_dropout_seed()};
  for (auto& p : params) const_cast<torch::Tensor&>(p).mutable_grad() = torch::Tensor();
  double replayed = 0;
  for (int64_t i = 0, start = 0; i < 2; ++i) {
    const int64_t n = i == 0 ? 5 : 4;  // slices of 5 and 4 examples
    models::DropoutSeedStream stream(seeds[i]);
    const auto loss = loss_of(batch.narrow(start, n)) * (static_cast<double>(n) / 9);
    replayed += loss.item<double>();
    loss.backward();
    start += n;
  }
  EXPECT_NEAR(sliced, replayed, 1e-6);
  for (size_t i = 0; i < params.size(); ++i) {
    EXPECT_TRUE(torch::allclose(got[i], params[i].grad(), 1e-5, 1e-6)) << "parameter " << i;
    EXPECT_TRUE(torch::equal(got[i], got2[i])) << "parameter " << i << " differs between two identical steps";
  }
  at::set_num_threads(saved_threads);
}

// A loss that is a mean over a number of terms that differs between examples (an MLM batch's
// masked tokens): slices counted by their terms give the whole batch's loss and gradients;
// counted by their examples they would not; a slice with no terms is left out.
TEST(Trainer, BatchSlicesCountByTheTermsOfTheirLoss) {
  using torch::indexing::Slice;
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(4);
  torch::nn::Linear layer(4, 3);
  const auto params = layer->parameters();
  auto selected = torch::zeros({6, 5}, torch::kBool);
  selected.index_put_({Slice(0, 3), 0}, true);  // the first slice: 3 terms
  selected.index_put_({Slice(3, 6)}, true);     // the second: 15
  Batch batch{{{"x", torch::randn({6, 5, 4})}, {"y", torch::randint(0, 3, {6, 5}, torch::kLong)}, {"selected", selected}}, 6, 0};
  auto loss_of = [&](const Batch& b) {
    const auto& s = b["selected"];
    return torch::nn::functional::cross_entropy(layer->forward(b["x"].index({s})), b["y"].index({s}));
  };
  auto terms_of = [](const Batch& b) { return b["selected"].sum().item<double>(); };
  double whole = 0, by_terms = 0, by_examples = 0;
  const auto ref = gradients_of(loss_of, batch, 1.0, 1, params, &whole);
  const auto got = gradients_of(loss_of, batch, 1.0, 2, params, &by_terms, false, terms_of);
  const auto naive = gradients_of(loss_of, batch, 1.0, 2, params, &by_examples);
  EXPECT_NEAR(by_terms, whole, 1e-6);
  EXPECT_GT(std::abs(by_examples - whole), 1e-3);  // the case really needs the terms
  for (size_t i = 0; i < ref.size(); ++i)
    EXPECT_TRUE(torch::allclose(got[i], ref[i], 1e-5, 1e-6)) << "parameter " << i << ": max |diff| "
                                                             << (got[i] - ref[i]).abs().max().item<double>();

  batch["selected"].index_put_({Slice(0, 3)}, false);  // the first slice has nothing to average
  const auto ref2 = gradients_of(loss_of, batch, 1.0, 1, params, &whole);
  const auto got2 = gradients_of(loss_of, batch, 1.0, 2, params, &by_terms, false, terms_of);
  EXPECT_NEAR(by_terms, whole, 1e-6);
  for (size_t i = 0; i < ref2.size(); ++i) EXPECT_TRUE(torch::allclose(got2[i], ref2[i], 1e-5, 1e-6)) << "parameter " << i;
  at::set_num_threads(saved_threads);
}

// train.precision=auto on the CPU: bf16 where the CPU has native bf16 and its bf16 matrix
// product measures at least 1.25x fp32's, else fp32; an explicit bf16 and a checkpoint trained
// in bf16 keep bf16 wherever it can run, whatever the probe says.
TEST(Trainer, AutoPrecisionOnTheCpuTakesBf16OnlyWhereItsProductsAreFaster) {
  EXPECT_FALSE((CpuMatmulProbe{300, 170}.bf16_faster()));  // a Xeon with AVX512-BF16, no AMX
  EXPECT_FALSE((CpuMatmulProbe{200, 240}.bf16_faster()));  // not enough to pay for the casts
  EXPECT_TRUE((CpuMatmulProbe{200, 440}.bf16_faster()));   // AMD Zen 4
  const torch::Device cpu(torch::kCPU);
  const auto& probe = cpu_matmul_probe();
  const bool native = !cpu_bf16_support().empty();
  EXPECT_EQ(&probe, &cpu_matmul_probe());  // measured once
  if (!native) {
    EXPECT_EQ(probe.fp32_gflops, 0);
    EXPECT_EQ(resolve_precision("auto", cpu), "fp32");
    EXPECT_EQ(auto_precision_note(cpu), "");
    return;
  }
  EXPECT_GT(probe.fp32_gflops, 1);
  EXPECT_GT(probe.bf16_gflops, 1);
  EXPECT_EQ(resolve_precision("auto", cpu), probe.bf16_faster() ? "bf16" : "fp32")
      << probe.bf16_gflops << " against " << probe.fp32_gflops << " GFLOP/s";
  EXPECT_EQ(resolve_precision("bf16", cpu), "bf16");
  EXPECT_EQ(evaluation_precision("bf16", cpu), "bf16");
  EXPECT_EQ(evaluation_precision("auto", cpu), resolve_precision("auto", cpu));
  EXPECT_NE(auto_precision_note(cpu).find("GFLOP/s against fp32's"), std::string::npos) << auto_precision_note(cpu);
}

// A stand-in for the other processes: sum() adds what rank 0 contributed (`rank0`) to this
// process's values; nothing else is called.
class SumOnlyCollective : public Collective {
 public:
  SumOnlyCollective(int rank, std::vector<double> rank0) : rank_(rank), rank0_(std::move(rank0)) {}
  int rank() const override { return rank_; }
  int world_size() const override { return 2; }
  std::string backend() const override { return "test"; }
  void attach(torch::nn::Module&) override { ADD_FAILURE() << "attach"; }
  void prepare_backward(bool) override { ADD_FAILURE() << "prepare_backward"; }
  void average_gradients() override { ADD_FAILURE() << "average_gradients"; }
  void sum(std::vector<double>& values) override {
    ++sums;
    for (size_t i = 0; i < values.size(); ++i) values[i] += rank0_.at(i);
  }
  std::string summary() const override { return ""; }
  std::vector<std::string> gather(const std::string&) override { return {}; }
  int sums = 0;

 private:
  int rank_;
  std::vector<double> rank0_;
};

// Data parallel: every process takes rank 0's resolution of train.precision=auto, whatever
// its own probe said, in one collective call.
TEST(Trainer, DataParallelProcessesTakeRankZerosAutoPrecision) {
  const torch::Device cpu(torch::kCPU);
  const bool native = !cpu_bf16_support().empty();
  SumOnlyCollective rank0(0, {0.0});
  EXPECT_EQ(agree_on_precision("bf16", rank0, cpu), "bf16");
  EXPECT_EQ(agree_on_precision("fp32", rank0, cpu), "fp32");
  for (const std::string mine : {"fp32", "bf16"}) {
    SumOnlyCollective says_fp32(1, {0.0});
    EXPECT_EQ(agree_on_precision(mine, says_fp32, cpu), "fp32") << mine;
    EXPECT_EQ(says_fp32.sums, 1);
    SumOnlyCollective says_bf16(1, {1.0});
    if (native) {
      EXPECT_EQ(agree_on_precision(mine, says_bf16, cpu), "bf16") << mine;
    } else {
      try {
        agree_on_precision(mine, says_bf16, cpu);
        ADD_FAILURE() << "bf16 taken on a CPU without native bf16";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1: rank 0 resolved train.precision=auto to bf16"),
                  std::string::npos)
            << e.what();
      }
    }
  }
}

// train.precision=bf16 on the CPU: refused with the reason where the CPU has no native
// bf16; elsewhere the forward pass runs in bf16 (the loss differs from fp32's, by little),
// per-core slices give the whole batch's gradients, and a run trains and resumes exactly.
TEST(Trainer, Bf16AutocastOnTheCpu) {
  const torch::Device cpu(torch::kCPU);
  EXPECT_EQ(resolve_precision("fp32", cpu), "fp32");
  if (cpu_bf16_support().empty()) {
    try {
      check_precision("bf16", cpu);
      ADD_FAILURE() << "bf16 accepted on a CPU without native bf16";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("AVX512-BF16 or AMX"), std::string::npos) << e.what();
    }
    return;
  }
  EXPECT_NO_THROW(check_precision("bf16", cpu));
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(5);
  models::ViTForImageClassification model(small_vit(32, 2, 64, 2));
  const auto params = model->parameters();
  const Batch batch{{{"pixel_values", torch::randn({16, 1, 8, 8})}, {"labels", torch::randint(0, 3, {16}, torch::kLong)}}, 16, 0};
  auto grads_for = [&](bool bf16, int64_t shards, double* loss) {
    auto loss_of = [&](const Batch& b) {
      AutocastGuard autocast(bf16, cpu);
      auto logits = model->forward(b["pixel_values"]);
      EXPECT_EQ(logits.scalar_type(), bf16 ? torch::kBFloat16 : torch::kFloat);
      return torch::nn::functional::cross_entropy(logits.to(torch::kFloat), b["labels"]);
    };
    return gradients_of(loss_of, batch, 1.0, shards, params, loss, /*onednn=*/bf16);
  };
  double fp32 = 0, whole = 0, sliced = 0, again = 0;
  const auto ref = grads_for(false, 1, &fp32), one = grads_for(true, 1, &whole);
  const auto got = grads_for(true, 2, &sliced), got2 = grads_for(true, 2, &again);
  EXPECT_NE(whole, fp32);  // the forward pass really ran in bf16
  EXPECT_NEAR(whole, fp32, 0.02 * fp32);
  EXPECT_NEAR(sliced, whole, 0.01 * whole);
  EXPECT_EQ(sliced, again);
  for (size_t i = 0; i < ref.size(); ++i) {
    ASSERT_EQ(got[i].scalar_type(), torch::kFloat) << "parameter " << i;  // fp32 master weights and grads
    auto cosine = [](const torch::Tensor& a, const torch::Tensor& b) {
      return (a * b).sum().item<double>() / (a.norm().item<double>() * b.norm().item<double>() + 1e-30);
    };
    if (ref[i].norm().item<double>() > 1e-6) {
      EXPECT_GT(cosine(one[i], ref[i]), 0.97) << "parameter " << i;
      EXPECT_GT(cosine(got[i], one[i]), 0.97) << "parameter " << i;
    }
    EXPECT_TRUE(torch::equal(got[i], got2[i])) << "parameter " << i << " differs between two identical steps";
  }
  test::TempDir dir;
  json config = tiny_config(dir, R"(, "precision": "bf16")");
  config["model"]["hidden_dropout_prob"] = 0.0;
  expect_exact_resume(config, dir);
  const auto losses = train_losses(dir / "a");
  EXPECT_LT(losses.at(8), losses.at(1));
  at::set_num_threads(saved_threads);
}

TEST(Trainer, ThreadedAdamWIsLibTorchsAdamWBitForBit) {
  const int saved_threads = at::get_num_threads();
  at::set_num_threads(2);
  torch::manual_seed(5);
  // Sizes unequal on purpose, so that the threads' shares are cut inside the list.
  const std::vector<torch::Tensor> init{torch::randn({40, 30}), torch::randn({30}), torch::randn({7, 5, 3}),
                                        torch::randn({200}), torch::randn({3})};
  std::vector<std::vector<torch::Tensor>> grads;
  for (int s = 0; s < 4; ++s) {
    grads.emplace_back();
    for (const auto& t : init) grads.back().push_back(torch::randn_like(t));
  }
  test::TempDir dir;
  const auto file = (dir.path() / "optimizer.pt").string();
  // `threaded_steps` steps with ThreadedAdamW, then its optimizer.pt loaded into LibTorch's
  // AdamW for the rest: the state must carry over under LibTorch's own keys.
  auto run = [&](size_t threaded_steps) {
    std::vector<torch::Tensor> params;
    for (const auto& t : init) params.push_back(t.clone().requires_grad_());
    auto make = [&](bool threaded) -> std::unique_ptr<torch::optim::Optimizer> {
      std::vector<torch::optim::OptimizerParamGroup> groups;
      auto base = torch::optim::AdamWOptions(0.01).betas({0.8, 0.95}).eps(1e-6);
      groups.emplace_back(std::vector<torch::Tensor>{params[0], params[2], params[3]},
                          std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(base).weight_decay(0.1)));
      groups.emplace_back(std::vector<torch::Tensor>{params[1], params[4]},
                          std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(base).weight_decay(0)));
      if (threaded) return std::make_unique<ThreadedAdamW>(std::move(groups), base);
      return std::make_unique<torch::optim::AdamW>(std::move(groups), base);
    };
    auto opt = make(threaded_steps > 0);
    for (size_t s = 0; s < grads.size(); ++s) {
      if (s == threaded_steps && s > 0) {
        torch::save(*opt, file);
        opt = make(false);
        torch::load(*opt, file);
      }
      for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = grads[s][i].clone();
      params[4].mutable_grad() = torch::Tensor();  // a parameter without a gradient is left alone
      opt->step();
    }
    return params;
  };
  const auto want = run(0);
  EXPECT_TRUE(torch::equal(want[4], init[4]));
  EXPECT_FALSE(torch::equal(want[0], init[0]));
  // On the CPU each fp32 parameter is updated in one pass (train/adamw_cpu.h) that repeats
  // LibTorch 1.13's roundings: bit for bit there. Another build of LibTorch may fuse other
  // multiply-adds in its kernels: to a few ulps.
  const bool exact = TORCH_VERSION_MAJOR == 1;
  for (size_t threaded_steps : {size_t{4}, size_t{2}}) {
    const auto got = run(threaded_steps);
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(exact ? torch::equal(got[i], want[i]) : torch::allclose(got[i], want[i], 1e-6, 1e-7))
          << threaded_steps << " threaded steps, parameter " << i << ": max |diff| "
          << (got[i] - want[i]).abs().max().item<double>();
  }
  at::set_num_threads(saved_threads);
}

// Gradient clipping in multi-tensor launches (zoo train's on accelerators) scales as
// LibTorch's clip_grad_norm_ does and returns the same norm, clipping or not; parameters
// without a gradient are skipped.
TEST(Trainer, ForeachGradientClippingIsLibTorchs) {
  torch::manual_seed(7);
  const std::vector<torch::Tensor> grads{torch::randn({40, 30}), torch::randn({30}), torch::randn({7, 5, 3})};
  for (double max_norm : {1.0, 1e3}) {
    auto params = [&] {
      std::vector<torch::Tensor> ps;
      for (const auto& g : grads) {
        ps.push_back(torch::zeros_like(g).requires_grad_());
        ps.back().mutable_grad() = g.clone();
      }
      ps.push_back(torch::zeros({4}).requires_grad_());  // no gradient
      return ps;
    };
    auto want = params(), got = params();
    const double want_norm = torch::nn::utils::clip_grad_norm_(want, max_norm);
    const double got_norm = clip_grad_norm_foreach(got, max_norm);
    EXPECT_NEAR(got_norm, want_norm, 1e-5 * want_norm) << max_norm;
    EXPECT_NEAR(got_norm, torch::cat({grads[0].flatten(), grads[1], grads[2].flatten()}).norm().item<double>(),
                1e-4);
    for (size_t i = 0; i < grads.size(); ++i)
      EXPECT_TRUE(torch::allclose(got[i].grad(), want[i].grad(), 1e-6, 1e-7)) << max_norm << " " << i;
    EXPECT_FALSE(got[3].grad().defined());
    const double after = torch::cat({got[0].grad().flatten(), got[1].grad(), got[2].grad().flatten()}).norm().item<double>();
    if (max_norm == 1.0) EXPECT_NEAR(after, 1.0, 1e-5);  // clipped
    else EXPECT_TRUE(torch::equal(got[0].grad(), grads[0]));  // left alone
  }
}

// On CUDA, ThreadedAdamW runs LibTorch's fused AdamW kernel (LibTorch 2.1+): the same
// parameters and state as LibTorch's AdamW on the CPU, to rounding, with two groups and with
// amsgrad; a parameter without a gradient is left alone.
TEST(Trainer, ThreadedAdamWOnCudaAgreesWithLibTorchsAdamW) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "needs a CUDA device";
  torch::manual_seed(6);
  const std::vector<torch::Tensor> init{torch::randn({40, 30}), torch::randn({30}), torch::randn({7, 5, 3}),
                                        torch::randn({3})};
  std::vector<std::vector<torch::Tensor>> grads;
  for (int s = 0; s < 5; ++s) {
    grads.emplace_back();
    for (const auto& t : init) grads.back().push_back(torch::randn_like(t));
  }
  for (bool amsgrad : {false, true}) {
    auto run = [&](torch::Device device) {
      std::vector<torch::Tensor> params;
      for (const auto& t : init) params.push_back(t.to(device).clone().requires_grad_());
      std::vector<torch::optim::OptimizerParamGroup> groups;
      auto base = torch::optim::AdamWOptions(0.01).betas({0.8, 0.95}).eps(1e-6).amsgrad(amsgrad);
      groups.emplace_back(std::vector<torch::Tensor>{params[0], params[2]},
                          std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(base).weight_decay(0.1)));
      groups.emplace_back(std::vector<torch::Tensor>{params[1], params[3]},
                          std::make_unique<torch::optim::AdamWOptions>(torch::optim::AdamWOptions(base).weight_decay(0)));
      std::unique_ptr<torch::optim::Optimizer> opt;
      if (device.is_cuda()) opt = std::make_unique<ThreadedAdamW>(std::move(groups), base);
      else opt = std::make_unique<torch::optim::AdamW>(std::move(groups), base);
      for (const auto& step_grads : grads) {
        for (size_t i = 0; i < params.size(); ++i) params[i].mutable_grad() = step_grads[i].to(device);
        params[3].mutable_grad() = torch::Tensor();
        opt->step();
      }
      std::vector<torch::Tensor> out;
      for (const auto& p : params) out.push_back(p.detach().cpu());
      return out;
    };
    const auto want = run(torch::kCPU), got = run(torch::Device(torch::kCUDA));
    EXPECT_TRUE(torch::equal(got[3], init[3]));
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-5, 1e-6))
          << "amsgrad " << amsgrad << ", parameter " << i << ": max |diff| " << (got[i] - want[i]).abs().max().item<double>();
    EXPECT_FALSE(torch::allclose(want[0], init[0], 1e-3, 1e-3));
  }
}

// Weight decay falls on matrices only, and not on those train.weight_decay_exclude names. With
// zero gradients an AdamW step at lr 1 and decay 0.5 halves exactly the decayed tensors.
TEST(Trainer, WeightDecayExcludeKeepsTheNamedParametersFreeOfDecay) {
  torch::manual_seed(3);
  torch::nn::Sequential model({{"wte", torch::nn::Embedding(10, 4)}, {"fc", torch::nn::Linear(4, 4)},
                               {"ln", torch::nn::LayerNorm(torch::nn::LayerNormOptions({4}))}});
  auto step = [&](std::vector<std::string> exclude) {
    for (auto& p : model->parameters()) {
      torch::NoGradGuard no_grad;
      p.uniform_(1, 2);
      p.mutable_grad() = torch::zeros_like(p);
    }
    std::map<std::string, torch::Tensor> before;
    for (const auto& p : model->named_parameters()) before[p.key()] = p.value().detach().clone();
    TrainOptions o;
    o.learning_rate = 1;
    o.weight_decay = 0.5;
    o.weight_decay_exclude = std::move(exclude);
    make_optimizer(*model, o)->step();
    std::map<std::string, double> ratio;  // after / before, the same for every element
    for (const auto& p : model->named_parameters()) ratio[p.key()] = (p.value() / before[p.key()]).mean().item<double>();
    return ratio;
  };
  const auto plain = step({});
  EXPECT_DOUBLE_EQ(plain.at("wte.weight"), 0.5);
  EXPECT_DOUBLE_EQ(plain.at("fc.weight"), 0.5);
  EXPECT_DOUBLE_EQ(plain.at("fc.bias"), 1.0);
  EXPECT_DOUBLE_EQ(plain.at("ln.weight"), 1.0);
  const auto excluded = step({"wte."});
  EXPECT_DOUBLE_EQ(excluded.at("wte.weight"), 1.0);
  EXPECT_DOUBLE_EQ(excluded.at("fc.weight"), 0.5);
  TrainOptions typo;
  typo.weight_decay_exclude = {"wpe."};
  try {
    make_optimizer(*model, typo);
    ADD_FAILURE() << "a fragment that names no parameter was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"wpe.\" is in no parameter name"), std::string::npos) << e.what();
  }
}

// train.layer_lr_decay: the head keeps the learning rate, layer i of L gets decay^(L - i), the
// embeddings decay^(L + 1). With zero gradients an AdamW step at lr 1 and decay 0.5 multiplies
// a decayed tensor by 1 - 0.5 * its share; the trainer's schedule keeps the shares.
TEST(Trainer, LayerLrDecayGivesEachLayerItsShareOfTheLearningRate) {
  struct Net : torch::nn::Module {
    Net() {
      register_module("embeddings", torch::nn::Linear(4, 4));
      auto encoder = register_module("encoder", std::make_shared<torch::nn::Module>());
      encoder->register_module("layer", torch::nn::ModuleList(torch::nn::Linear(4, 4), torch::nn::Linear(4, 4)));
      register_module("classifier", torch::nn::Linear(4, 2));
    }
  } net;
  const auto named = net.named_parameters();
  const auto shares = layer_lr_scales(named, 0.5);
  std::map<std::string, double> share;
  for (size_t i = 0; i < named.size(); ++i) share[named[i].key()] = shares[i];
  EXPECT_DOUBLE_EQ(share.at("embeddings.weight"), 0.125);
  EXPECT_DOUBLE_EQ(share.at("encoder.layer.0.weight"), 0.25);
  EXPECT_DOUBLE_EQ(share.at("encoder.layer.1.bias"), 0.5);
  EXPECT_DOUBLE_EQ(share.at("classifier.weight"), 1.0);
  for (double s : layer_lr_scales(named, 1.0)) EXPECT_EQ(s, 1.0);

  for (auto& p : net.parameters()) {
    torch::NoGradGuard no_grad;
    p.uniform_(1, 2);
    p.mutable_grad() = torch::zeros_like(p);
  }
  std::map<std::string, torch::Tensor> before;
  for (const auto& p : named) before[p.key()] = p.value().detach().clone();
  TrainOptions o;
  o.learning_rate = 1;
  o.weight_decay = 0.5;
  o.layer_lr_decay = 0.5;
  make_optimizer(net, o)->step();
  for (const std::string name : {"embeddings.weight", "encoder.layer.0.weight", "encoder.layer.1.weight", "classifier.weight"})
    EXPECT_NEAR((named[name] / before[name]).mean().item<double>(), 1 - 0.5 * share.at(name), 1e-6) << name;

  // A run keeps the shares under its schedule: the learning rates its optimizer.pt holds.
  test::TempDir dir;
  json config = tiny_config(dir, R"(, "layer_lr_decay": 0.5, "lr_scheduler_type": "constant", "warmup_steps": 0)");
  run(config, dir / "run");
  torch::serialize::InputArchive archive;  // LibTorch saves each group's options (and loads none)
  archive.load_from(dir / "run/checkpoint-8/optimizer.pt");
  torch::serialize::InputArchive saved;
  archive.read("param_groups", saved);
  torch::Tensor groups;
  saved.read("param_groups/size", groups);
  std::set<double> rates;
  for (int64_t g = 0; g < groups.item<int64_t>(); ++g) {
    torch::serialize::InputArchive group, group_options;
    saved.read("param_groups/" + std::to_string(g), group);
    group.read("options", group_options);
    c10::IValue rate;
    group_options.read("lr", rate);
    rates.insert(rate.toDouble());
  }
  const double lr = config["train"]["learning_rate"].get<double>();
  EXPECT_EQ(rates, (std::set<double>{lr / 4, lr / 2, lr})) << "a ViT of one layer: embeddings, the layer, the head";
}

// Resuming with another weight-decay grouping cannot load optimizer.pt: the error says which
// settings must be the run's.
TEST(Trainer, ResumeWithAnotherWeightDecayGroupingNamesTheSetting) {
  test::TempDir dir;
  json config = tiny_config(dir, R"(, "weight_decay": 0.1)");
  const std::string out = dir / "run";
  run(config, out);
  config["train"]["weight_decay_exclude"] = {"patch_embeddings."};
  config["train"]["max_steps"] = 10;
  try {
    run(config, out, out + "/checkpoint-8");
    ADD_FAILURE() << "resumed with another weight-decay grouping";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.weight_decay_exclude"), std::string::npos) << e.what();
  }
}

TEST(Trainer, EarlyStoppingAfterPatienceEvaluations) {
  test::TempDir dir;
  LinearTask task;
  auto result = train(task, TrainerArgs{linear_config({{"max_steps", 50}, {"per_device_train_batch_size", 8},
                                                       {"eval_steps", 1}, {"early_stopping_patience", 2}}),
                                        "x", dir / "out", torch::Device(torch::kCPU), ""});
  EXPECT_TRUE(result.early_stopped);
  EXPECT_EQ(result.global_step, 3);  // best at eval 1, no improvement at evals 2 and 3
  EXPECT_EQ(result.best_checkpoint, (fs::path(dir / "out") / "checkpoint-1").string());
  EXPECT_TRUE(fs::exists(result.best_checkpoint));
}

TEST(Checkpoint, UncommittedWriterLeavesNothingThatLooksWhole) {
  test::TempDir dir;
  {
    CheckpointWriter w(dir.path().string(), 7);
    test::write_file(w.path("trainer_state.json"), "{}");
    // destroyed without commit(): like a kill mid-save
  }
  EXPECT_EQ(latest_checkpoint(dir.path().string()), "");
  EXPECT_FALSE(fs::exists(dir / "checkpoint-7"));
  CheckpointWriter w(dir.path().string(), 7);
  test::write_file(w.path("trainer_state.json"), "{}");
  EXPECT_EQ(w.commit(), dir / "checkpoint-7");
  EXPECT_EQ(latest_checkpoint(dir.path().string()), dir / "checkpoint-7");
  // A folder named like a checkpoint past int64_t's range is not one of ours (and not an error).
  fs::create_directories(dir / "checkpoint-99999999999999999999");
  test::write_file(dir / "checkpoint-99999999999999999999/trainer_state.json", "{}");
  EXPECT_EQ(latest_checkpoint(dir.path().string()), dir / "checkpoint-7");
}

TEST(Checkpoint, RotationKeepsNewestAndBest) {
  test::TempDir dir;
  for (int step : {1, 2, 3, 4, 5}) {
    CheckpointWriter w(dir.path().string(), step);
    test::write_file(w.path("trainer_state.json"), "{}");
    w.commit();
  }
  rotate_checkpoints(dir.path().string(), 2, dir / "checkpoint-2");
  std::vector<int64_t> left;
  for (auto& [step, path] : list_checkpoints(dir.path().string())) left.push_back(step);
  EXPECT_EQ(left, (std::vector<int64_t>{2, 4, 5}));
}

TEST(Checkpoint, Base64RoundTrip) {
  for (const std::string& s : std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)})
    EXPECT_EQ(base64_decode(base64_encode(s)), s);
}


// A linear model whose loss has two named parts; it records the model's mode in loss() and
// evaluate(), and evaluates its own loss on all the data.
class TwoPartTask : public LinearTask {
 public:
  Loss loss(const Batch& b) override {
    loss_saw_training = loss_saw_training && net_->is_training();
    auto err = net_->forward(b["x"]).squeeze(1) - b["y"];
    auto squared = err.pow(2).mean(), absolute = err.abs().mean();
    return {squared + absolute, {{"squared", squared}, {"absolute", absolute}}};
  }
  Metrics eval_sums(const std::string&, const Batch&) override {
    eval_saw_training = eval_saw_training || net_->is_training();
    eval_saw_grad = eval_saw_grad || torch::GradMode::is_enabled();
    eval_dtype = net_->forward(torch::ones({2, 3})).scalar_type();
    return {{"loss", 1.0}};
  }
  bool loss_saw_training = true, eval_saw_training = false, eval_saw_grad = false;
  torch::ScalarType eval_dtype = torch::kDouble;
};

TEST(Trainer, LossPartsAreLoggedBesideTheTotal) {
  test::TempDir dir;
  TwoPartTask task;
  train(task, TrainerArgs{linear_config({{"max_steps", 4}, {"per_device_train_batch_size", 8}, {"logging_steps", 2},
                                         {"eval_steps", 2}}),
                          "x", dir / "out", torch::Device(torch::kCPU), ""});
  std::ifstream in(dir / "out/metrics.jsonl");
  int train_lines = 0;
  for (std::string line; std::getline(in, line);) {
    const auto j = json::parse(line);
    if (j["type"] != "train") continue;
    ++train_lines;
    ASSERT_TRUE(j.contains("loss_squared") && j.contains("loss_absolute")) << line;
    EXPECT_NEAR(j["loss"].get<double>(), j["loss_squared"].get<double>() + j["loss_absolute"].get<double>(), 1e-5);  // float sums
    EXPECT_GT(j["loss_absolute"].get<double>(), 0.0);
  }
  EXPECT_EQ(train_lines, 2);
  // The trainer owns the mode: training mode in loss(), eval mode without gradients in evaluate().
  EXPECT_TRUE(task.loss_saw_training);
  EXPECT_FALSE(task.eval_saw_training);
  EXPECT_FALSE(task.eval_saw_grad);
  EXPECT_TRUE(task.net_->is_training());  // given back after the evaluations
}

// Every logged step carries the process's peak resident memory (no CUDA figure on the CPU),
// never falling, at least the size of a buffer the test allocates and touches first.
TEST(Trainer, PeakMemoryIsLogged) {
  test::TempDir dir;
  std::vector<char> ballast(64 << 20, 1);  // 64 MiB resident before training
  TwoPartTask task;
  train(task, TrainerArgs{linear_config({{"max_steps", 4}, {"per_device_train_batch_size", 8}, {"logging_steps", 1}}),
                          "x", dir / "out", torch::Device(torch::kCPU), ""});
  double last = 0;
  for (const auto& [step, j] : test::train_records(dir / "out")) {
    ASSERT_TRUE(j.contains("peak_rss_mib")) << j.dump();
    EXPECT_GE(j["peak_rss_mib"].get<double>(), 64 + ballast[12345]) << j.dump();
    EXPECT_GE(j["peak_rss_mib"].get<double>(), last);
    EXPECT_FALSE(j.contains("cuda_peak_allocated_mib"));
    last = j["peak_rss_mib"].get<double>();
  }
  EXPECT_GT(last, 0);
}

// Evaluation runs in the training precision: bf16 autocast in a bf16 run, fp32 otherwise.
TEST(Trainer, EvaluationRunsInTheTrainingPrecision) {
  const bool bf16 = !cpu_bf16_support().empty();
  const bool auto_bf16 = resolve_precision("auto", torch::Device(torch::kCPU)) == "bf16";
  for (const std::string precision : {"fp32", "auto", "bf16"}) {
    if (precision == "bf16" && !bf16) continue;
    test::TempDir dir;
    TwoPartTask task;
    train(task, TrainerArgs{linear_config({{"max_steps", 2}, {"per_device_train_batch_size", 8}, {"eval_steps", 2},
                                           {"precision", precision}}),
                            "x", dir / "out", torch::Device(torch::kCPU), ""});
    const bool in_bf16 = precision == "bf16" || (precision == "auto" && auto_bf16);
    EXPECT_EQ(task.eval_dtype, in_bf16 ? torch::kBFloat16 : torch::kFloat) << precision;
    EXPECT_EQ(zoo::evaluate(task, "valid", 8, torch::Device(torch::kCPU), "fp32").at("loss"), 1.0);
    EXPECT_EQ(task.eval_dtype, torch::kFloat) << "autocast left on after a bf16 evaluation";
  }
  // zoo eval: a checkpoint evaluates as trained; one trained in bf16 still evaluates without bf16
  const torch::Device cpu(torch::kCPU);
  EXPECT_EQ(evaluation_precision("fp32", cpu), "fp32");
  EXPECT_EQ(evaluation_precision("bf16", cpu), bf16 ? "bf16" : "fp32");
  EXPECT_EQ(evaluation_precision("auto", cpu), auto_bf16 ? "bf16" : "fp32");
}

TEST(Trainer, AfterBackwardHookSeesTheGradientsBeforeTheUpdate) {
  test::TempDir dir;
  LinearTask task;
  const auto w0 = task.net_->weight.detach().clone();
  int calls = 0;
  TrainerArgs args{linear_config({{"max_steps", 3}, {"per_device_train_batch_size", 8},
                                  {"gradient_accumulation_steps", 2}}),
                   "x", dir / "out", torch::Device(torch::kCPU), ""};
  args.hooks.after_backward = [&](const std::vector<torch::Tensor>& params) {
    ++calls;
    for (const auto& p : params) {
      ASSERT_TRUE(p.grad().defined());
      const_cast<torch::Tensor&>(p).mutable_grad().zero_();  // as if the other processes cancelled it
    }
  };
  train(task, args);
  EXPECT_EQ(calls, 3);  // once per optimizer step, not per micro-batch
  EXPECT_TRUE(torch::equal(task.net_->weight, w0));  // the update used the hook's gradients
}

TEST(Trainer, OnlyTheWritingProcessWritesLogsAndCheckpoints) {
  test::TempDir dir;
  LinearTask writer, reader;
  start_alike(writer, reader);
  const json config = linear_config({{"max_steps", 4}, {"per_device_train_batch_size", 8}, {"save_steps", 2}});
  TrainerArgs quiet{config, "x", dir / "quiet", torch::Device(torch::kCPU), ""};
  quiet.hooks.is_writer = [] { return false; };
  const auto r = train(reader, quiet);
  EXPECT_EQ(r.global_step, 4);
  EXPECT_FALSE(fs::exists(dir / "quiet"));
  train(writer, TrainerArgs{config, "x", dir / "loud", torch::Device(torch::kCPU), ""});
  EXPECT_TRUE(fs::exists(dir / "loud/metrics.jsonl"));
  EXPECT_TRUE(fs::exists(dir / "loud/checkpoint-4/model.safetensors"));
  EXPECT_TRUE(torch::equal(reader.net_->weight, writer.net_->weight));  // same training either way
}

// Two modules sharing a body under different prefixes, with different heads.
struct Body : torch::nn::Module {
  Body() { layer = register_module("layer", torch::nn::Linear(3, 4)); }
  torch::nn::Linear layer{nullptr};
};
struct Pretrained : torch::nn::Module {
  Pretrained() {
    body = register_module("encoder", std::make_shared<Body>());
    head = register_module("lm_head", torch::nn::Linear(4, 5));
  }
  std::shared_ptr<Body> body;
  torch::nn::Linear head{nullptr};
};
struct Classifier : torch::nn::Module {
  explicit Classifier(int64_t in = 4) {
    body = register_module("bert", std::make_shared<Body>());
    head = register_module("classifier", torch::nn::Linear(in, 2));
  }
  std::shared_ptr<Body> body;
  torch::nn::Linear head{nullptr};
};

TEST(FineTuning, InitFromLoadsTheMatchingWeightsThroughTheKeyMap) {
  test::TempDir dir;
  Pretrained source;
  fs::create_directories(dir / "pre");
  save_model(source, dir / "pre/model.safetensors", json::object());
  Classifier target;
  const auto head_before = target.head->weight.detach().clone();
  const auto report = init_from_pretrained(target, dir / "pre", {"encoder.=bert."});
  EXPECT_TRUE(torch::equal(target.body->layer->weight, source.body->layer->weight));
  EXPECT_TRUE(torch::equal(target.body->layer->bias, source.body->layer->bias));
  EXPECT_TRUE(torch::equal(target.head->weight, head_before));  // newly initialised, untouched
  EXPECT_EQ(report.loaded, (std::vector<std::string>{"bert.layer.weight", "bert.layer.bias"}));
  EXPECT_EQ(report.missing, (std::vector<std::string>{"classifier.weight", "classifier.bias"}));
  EXPECT_EQ(report.unexpected, (std::vector<std::string>{"lm_head.bias", "lm_head.weight"}));
  // A tensor mapped to a name the model lacks is left out (the first matching prefix wins): the
  // sentiment recipe starts BERT's pooler anew this way.
  Classifier fresh;
  const auto bias_before = fresh.body->layer->bias.detach().clone();
  const auto partial = init_from_pretrained(fresh, dir / "pre", {"encoder.layer.bias=discarded.", "encoder.=bert."});
  EXPECT_TRUE(torch::equal(fresh.body->layer->weight, source.body->layer->weight));
  EXPECT_TRUE(torch::equal(fresh.body->layer->bias, bias_before));
  EXPECT_FALSE(torch::equal(fresh.body->layer->bias, source.body->layer->bias));
  EXPECT_EQ(partial.missing, (std::vector<std::string>{"bert.layer.bias", "classifier.weight", "classifier.bias"}));
  // Without the map nothing matches: an error that says how to map the names.
  try {
    init_from_pretrained(target, dir / "pre", {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("init_from_key_map"), std::string::npos) << e.what();
  }
  // A shape mismatch names the tensor and both shapes.
  Classifier wide(4);
  wide.body->layer = wide.body->replace_module("layer", torch::nn::Linear(6, 4));
  try {
    init_from_pretrained(wide, dir / "pre", {"encoder.=bert."});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("'encoder.layer.weight' has shape [4, 3]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("'bert.layer.weight' has shape [4, 6]"), std::string::npos) << msg;
  }
  EXPECT_THROW(init_from_pretrained(target, dir / "nowhere", {}), Error);
  EXPECT_THROW(init_from_pretrained(target, dir / "pre", {"no-equals-sign"}), Error);
}

TEST(FineTuning, TrainInitFromStartsFromACheckpointsWeights) {
  test::TempDir dir;
  const json config = tiny_config(dir);
  json two = config;
  two["train"]["max_steps"] = 2;
  two["train"]["save_steps"] = 2;
  run(two, dir / "a");
  json fine = two;
  fine["train"]["seed"] = 99;  // other initial weights, unless init_from replaces them
  fine["train"]["max_steps"] = 1;
  fine["train"]["learning_rate"] = 0.0;
  fine["train"]["init_from"] = dir / "a/checkpoint-2";
  run(fine, dir / "b");
  const auto a = safetensors::load(dir / "a/checkpoint-2/model.safetensors").tensors;
  const auto b = safetensors::load(dir / "b/checkpoint-1/model.safetensors").tensors;
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) EXPECT_TRUE(torch::equal(t, b.at(name))) << name;
}

}  // namespace
}  // namespace zoo
