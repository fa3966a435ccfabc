// int8 weights at load time (issue 64): the int8 linear kernel against PyTorch's dynamic
// quantization (tests/py/int8_linear_ref.py), each family loaded with int8 giving outputs close
// to fp32's but not equal to them, --quantize on every command that loads a model, and the
// errors: an unknown value, a device other than the CPU, training a quantized model.
#include <gtest/gtest.h>

#include <filesystem>
#include <thread>

#include "fixtures.h"
#include "predictor_fixtures.h"
#include "io/checkpoint.h"
#include "io/inference_model.h"
#include "io/safetensors.h"
#include "models/gpt.h"
#include "models/kernels/int8_linear.h"
#include "models/quantize.h"
#include "models/transformer.h"
#include "review_fixtures.h"
#include "test_util.h"
#include "translation_fixtures.h"
#include "zoo/zoo.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

// The largest difference relative to the reference's largest magnitude.
double relative_error(const torch::Tensor& a, const torch::Tensor& reference) {
  return (a - reference).abs().max().item<double>() / reference.abs().max().item<double>();
}

std::map<std::string, torch::Tensor> python_int8(const test::TempDir& dir, const std::string& engine,
                                                 const torch::Tensor& w, const torch::Tensor& b,
                                                 const std::vector<torch::Tensor>& xs) {
  std::vector<std::pair<std::string, torch::Tensor>> in = {{"weight", w}, {"bias", b}};
  for (size_t i = 0; i < xs.size(); ++i) in.emplace_back("x" + std::to_string(i), xs[i]);
  safetensors::save(dir / "in.safetensors", {in.begin(), in.end()});
  const auto r = test::run_python("int8_linear_ref.py", (dir / "in.safetensors") + " " + (dir / "out.safetensors") +
                                                            " " + engine);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return {};
  return safetensors::load(dir / "out.safetensors").tensors;
}

TEST(Int8Linear, MatchesPyTorchsDynamicQuantizationOnEachEngine) {
  torch::manual_seed(0);
  auto w = torch::randn({48, 40}) * 0.2, b = torch::randn({48});
  w[7][5] = 4.0;   // an outlier: its row gets a coarser scale than the others
  w[3].mul_(0.01); // a row of small weights: a finer one
  const std::vector<torch::Tensor> xs = {torch::randn({5, 40}), torch::randn({2, 3, 40}) * 3, torch::randn({1, 40})};
  const auto engines = models::int8_engines();
  ASSERT_FALSE(engines.empty()) << "this LibTorch has no quantized engine";
  for (const auto& engine : engines) {
    SCOPED_TRACE(engine);
    test::TempDir dir;
    const auto ref = python_int8(dir, engine, w, b, xs);
    ASSERT_FALSE(ref.empty());
    const auto packed = models::pack_int8(w, b, engine);
    EXPECT_EQ(packed.engine, engine);
    EXPECT_EQ(packed.in_features, 40);
    EXPECT_EQ(packed.out_features, 48);
    // The weight: PyTorch's per-row symmetric int8, value for value.
    const auto q = models::int8_weight(packed);
    EXPECT_TRUE(torch::equal(q.int_repr(), ref.at("weight_int")));
    EXPECT_TRUE(torch::allclose(q.q_per_channel_scales().to(torch::kFloat), ref.at("weight_scale"), 0, 0));
    auto python_like = packed;
    python_like.reduce_range = true;  // what Python's dynamic Linear passes
    for (size_t i = 0; i < xs.size(); ++i) {
      SCOPED_TRACE("x" + std::to_string(i));
      const auto ours = models::linear_int8(xs[i], packed, models::Int8Kernel::kEngine);
      // zoo's loops for small products: the op's arithmetic (the input's uint8 rounding may
      // differ by one step at a tie: within one input step times the weights).
      const auto loops = models::linear_int8(xs[i], packed, models::Int8Kernel::kLoops);
      EXPECT_TRUE(torch::allclose(loops, ref.at("op_x" + std::to_string(i)), 1e-4, 1e-4))
          << (loops - ref.at("op_x" + std::to_string(i))).abs().max();
      if (engine != "qnnpack") {  // which ignores reduce_range (it says so)
        EXPECT_TRUE(torch::allclose(models::linear_int8(xs[i], python_like, models::Int8Kernel::kLoops),
                                    ref.at("module_x" + std::to_string(i)), 1e-4, 1e-4));
      }
      const auto fp32 = torch::nn::functional::linear(xs[i], w, b);
      ASSERT_EQ(ours.sizes(), fp32.sizes());
      EXPECT_TRUE(torch::allclose(ours, ref.at("op_x" + std::to_string(i)), 1e-5, 1e-5));
      EXPECT_TRUE(torch::allclose(models::linear_int8(xs[i], python_like, models::Int8Kernel::kEngine),
                                  ref.at("module_x" + std::to_string(i)), 1e-5, 1e-5));
      // Close to fp32 (8-bit inputs and weights), and not fp32 itself.
      EXPECT_LT(relative_error(ours, fp32), 0.03);
      EXPECT_GT(relative_error(ours, fp32), 1e-6);
    }
  }
}

// zoo's loops (groups of four input rows, then single rows) give the engine's results for 1 to
// 9 rows of 1,000 inputs, on every engine.
TEST(Int8Linear, LoopsEqualTheEngineForEveryRowCount) {
  torch::manual_seed(1);
  const auto w = torch::randn({50, 1000}) * 0.1, b = torch::randn({50});
  for (const auto& engine : models::int8_engines()) {
    SCOPED_TRACE(engine);
    const auto packed = models::pack_int8(w, b, engine);
    for (int64_t rows : {1, 4, 7, 9}) {
      const auto x = torch::randn({rows, 1000});
      const auto loops = models::linear_int8(x, packed, models::Int8Kernel::kLoops);
      const auto ref = models::linear_int8(x, packed, models::Int8Kernel::kEngine);
      EXPECT_TRUE(torch::allclose(loops, ref, 1e-4, 1e-3)) << rows << " rows: " << (loops - ref).abs().max();
    }
  }
}

// The oneDNN matmul zoo builds once per weight (where zoo is built with oneDNN's headers and
// LibTorch's engine is oneDNN) gives the engine's results for 1 to 200 rows, in 3-D inputs too,
// and is what kAuto picks for products too large for the loops, up to 256 rows.
TEST(Int8Linear, OneDnnMatmulEqualsTheEngineForEveryRowCount) {
  torch::manual_seed(2);
  const auto w = torch::randn({300, 256}) * 0.1, b = torch::randn({300});
  const auto engines = models::int8_engines();
  const bool onednn = std::find(engines.begin(), engines.end(), "onednn") != engines.end();
  if (!onednn) GTEST_SKIP() << "this LibTorch has no oneDNN quantized engine";
  const auto packed = models::pack_int8(w, b, "onednn");
  ASSERT_EQ(models::has_onednn_matmul(packed), ZOO_WITH_ONEDNN == 1);
  if (!models::has_onednn_matmul(packed)) {
    EXPECT_THROW(models::linear_int8(torch::randn({2, 256}), packed, models::Int8Kernel::kOneDnn), Error);
    return;
  }
  for (int64_t rows : {1, 3, 64, 200}) {
    const auto x = torch::randn({rows, 256}) * 2;
    const auto ours = models::linear_int8(x, packed, models::Int8Kernel::kOneDnn);
    const auto ref = models::linear_int8(x, packed, models::Int8Kernel::kEngine);
    // The same arithmetic as the loops; the engine's input rounding may differ from ours by one
    // step on a value near a tie (oneDNN multiplies by 1 / scale in its own order): at most a
    // step or two times the largest weight.
    EXPECT_TRUE(torch::allclose(models::linear_int8(x, packed, models::Int8Kernel::kLoops), ours, 1e-5, 1e-5));
    const double step = (x.max().item<double>() - std::min(0.0, x.min().item<double>())) / 255;
    EXPECT_LE((ours - ref).abs().max().item<double>(), 2 * step * w.abs().max().item<double>()) << rows << " rows";
    const auto fp32 = torch::nn::functional::linear(x, w, b);  // and as close to fp32 as the engine
    EXPECT_LT(relative_error(ours, fp32), 1.1 * relative_error(ref, fp32)) << rows << " rows";
  }
  const auto x3 = torch::randn({4, 50, 256});  // 200 x 300 x 256 products: over the loops' limit, 256 rows at most
  EXPECT_TRUE(torch::equal(models::linear_int8(x3, packed), models::linear_int8(x3, packed, models::Int8Kernel::kOneDnn)));
  EXPECT_EQ(models::linear_int8(x3, packed).sizes(), (std::vector<int64_t>{4, 50, 300}));
}

TEST(Int8Linear, UnknownValuesDevicesAndEnginesAreErrors) {
  EXPECT_NO_THROW(models::check_quantize("", torch::Device(torch::kCUDA)));
  EXPECT_NO_THROW(models::check_quantize("int8", torch::kCPU));
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no zoo::Error");
  };
  const std::string unknown = message([] { models::check_quantize("int4", torch::kCPU); });
  EXPECT_NE(unknown.find("'int4'"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("int8"), std::string::npos) << unknown;
  const std::string cuda = message([] { models::check_quantize("int8", torch::Device(torch::kCUDA, 1)); });
  EXPECT_NE(cuda.find("cuda:1"), std::string::npos) << cuda;
  // The library checks before it reads anything: the directory need not exist.
  const torch::Device gpu(torch::kCUDA, 0);
  const LoadOptions int8{"int8"};
  for (const auto& f : std::vector<std::function<void()>>{
           [&] { Generator("/nonexistent", gpu, int8); }, [&] { Translator("/nonexistent", gpu, int8); },
           [&] { Classifier("/nonexistent", gpu, int8); }, [&] { Encoder("/nonexistent", gpu, int8); }}) {
    const std::string m = message(f);
    EXPECT_NE(m.find("LoadOptions::quantize int8 runs on the CPU only"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda:0"), std::string::npos) << m;
  }
  const std::string bad = message([] { Generator("/nonexistent", torch::kCPU, LoadOptions{"fp8"}); });
  EXPECT_NE(bad.find("'fp8'"), std::string::npos) << bad;
  // An engine this build lacks, named in the environment.
  setenv("ZOO_INT8_ENGINE", "nosuchengine", 1);
  const std::string engine = message([] { models::pack_int8(torch::ones({2, 2})); });
  unsetenv("ZOO_INT8_ENGINE");
  EXPECT_NE(engine.find("ZOO_INT8_ENGINE=nosuchengine"), std::string::npos) << engine;
  EXPECT_NE(engine.find(models::int8_engines().front()), std::string::npos) << engine;
  const auto packed = models::pack_int8(torch::ones({2, 2}));
  const std::string input = message([&] { models::linear_int8(torch::empty({1, 2}, torch::Device(torch::kMeta)), packed); });
  EXPECT_NE(input.find("CPU only"), std::string::npos) << input;
}

// A tiny GPT, ViT, Transformer and BERT classifier, trained once for the suite.
class Int8 : public test::TinyPredictorSuite<Int8> {
 public:
  static std::vector<std::string> families() { return {"gpt", "vit", "mt", "gru", "bert"}; }
 protected:
  static std::shared_ptr<torch::nn::Module> load(const std::string& dir, const std::string& quantize) {
    return load_inference_model(dir, load_checkpoint_config(dir), torch::kCPU, quantize);
  }
};

int64_t linear_layers(const torch::nn::Module& model) {
  int64_t n = 0;
  for (const auto& m : model.modules()) n += dynamic_cast<const torch::nn::LinearImpl*>(m.get()) != nullptr;
  return n;
}

TEST_F(Int8, GptLogitsAndLossAreCloseToFp32) {
  torch::NoGradGuard no_grad;
  auto fp32 = std::dynamic_pointer_cast<models::GPT2LMHeadModelImpl>(load(gpt(), ""));
  auto int8 = std::dynamic_pointer_cast<models::GPT2LMHeadModelImpl>(load(gpt(), "int8"));
  ASSERT_TRUE(fp32 && int8);
  // Every Linear (4 per block) and the tied output projection, a copy of wte's weight.
  EXPECT_EQ(linear_layers(*int8), 8);
  int64_t packed = 0;
  for (const auto& m : int8->modules()) packed += models::int8_weights(*m) != nullptr;
  EXPECT_EQ(packed, 9);
  EXPECT_NE(models::int8_weights(*int8), nullptr);
  EXPECT_EQ(models::int8_weights(*fp32), nullptr);
  // The checkpoint's tensors are the same: the int8 copies stay out of it.
  EXPECT_EQ(int8->named_parameters().size(), fp32->named_parameters().size());
  torch::manual_seed(1);
  const auto ids = torch::randint(0, fp32->options().vocab_size, {2, 24});
  const auto a = fp32->forward(ids), b = int8->forward(ids);
  EXPECT_LT(relative_error(b, a), 0.05);
  EXPECT_GT(relative_error(b, a), 1e-6) << "the int8 path was not taken";
  const auto labels = torch::randint(0, fp32->options().vocab_size, {2, 24});
  const double loss_fp32 = fp32->loss(ids, labels).item<double>(), loss_int8 = int8->loss(ids, labels).item<double>();
  EXPECT_NEAR(loss_int8, loss_fp32, 0.02 * loss_fp32);
  EXPECT_NE(loss_int8, loss_fp32);
}

// The Transformer (its output tied to the decoder's embedding) and the GRU model (its linear
// layers in int8, the GRU's own weights in fp32).
TEST_F(Int8, TranslationLogitsAreCloseToFp32) {
  torch::NoGradGuard no_grad;
  for (const auto& dir : {mt(), gru()}) {
    SCOPED_TRACE(dir);
    auto fp32 = std::dynamic_pointer_cast<models::EncoderDecoder>(load(dir, ""));
    auto module = load(dir, "int8");
    auto int8 = std::dynamic_pointer_cast<models::EncoderDecoder>(module);
    ASSERT_TRUE(fp32 && int8);
    int64_t packed = 0;
    for (const auto& m : module->modules()) packed += models::int8_weights(*m) != nullptr;
    const auto* shared = dynamic_cast<const models::SharedOutputWeight*>(module.get());
    EXPECT_EQ(packed, linear_layers(*module) + (shared && shared->shared_output_weight().defined() ? 1 : 0));
    EXPECT_GE(packed, 3);
    const json model = load_checkpoint_config(dir).at("model");
    torch::manual_seed(2);
    const auto src = torch::randint(4, model.at("source_vocab_size").get<int64_t>(), {2, 7});
    const auto tgt = torch::randint(4, model.at("target_vocab_size").get<int64_t>(), {2, 5});
    const auto a = fp32->forward(src, tgt), b = int8->forward(src, tgt);
    EXPECT_LT(relative_error(b, a), 0.05);
    EXPECT_GT(relative_error(b, a), 1e-6) << "the int8 path was not taken";
  }
}

TEST_F(Int8, ClassifiersAndEncoderAreCloseToFp32) {
  const std::vector<std::string> reviews = {test::review(300, true), test::review(301, false)};
  const Classifier texts(bert()), texts8(bert(), torch::kCPU, LoadOptions{"int8"});
  const Encoder encoder(bert()), encoder8(bert(), torch::kCPU, LoadOptions{"int8"});
  std::string pixels(64, static_cast<char>(40));
  for (int x = 0; x < 8; ++x) pixels[static_cast<size_t>(8 + x)] = static_cast<char>(220);
  test::write_file(*dir_ / "img.pgm", "P5\n8 8\n255\n" + pixels);
  const Classifier images(vit()), images8(vit(), torch::kCPU, LoadOptions{"int8"});
  auto probabilities = [](const std::vector<std::vector<Label>>& rows) {
    std::vector<float> p;
    for (const auto& row : rows) {
      std::vector<std::pair<std::string, float>> sorted;
      for (const auto& l : row) sorted.emplace_back(l.name, l.probability);
      std::sort(sorted.begin(), sorted.end());
      for (const auto& [name, prob] : sorted) p.push_back(prob);
    }
    return torch::tensor(p);
  };
  for (const auto& [a, b] : {std::pair{probabilities(texts.classify_texts(reviews, 2)),
                                       probabilities(texts8.classify_texts(reviews, 2))},
                             std::pair{probabilities(images.classify_images({*dir_ / "img.pgm"}, 4)),
                                       probabilities(images8.classify_images({*dir_ / "img.pgm"}, 4))}}) {
    EXPECT_LT((a - b).abs().max().item<double>(), 0.03);
    EXPECT_FALSE(torch::equal(a, b)) << "the int8 path was not taken";
  }
  const auto e = encoder.embed(reviews), e8 = encoder8.embed(reviews);
  EXPECT_LT(relative_error(e8, e), 0.05);
  EXPECT_FALSE(torch::equal(e, e8)) << "the int8 path was not taken";
}

TEST_F(Int8, TrainingAQuantizedModelIsAnError) {
  auto model = load(gpt(), "int8");
  model->train();
  try {
    std::dynamic_pointer_cast<models::GPT2LMHeadModelImpl>(model)->forward(torch::zeros({1, 4}, torch::kLong));
    ADD_FAILURE() << "a quantized model ran in train mode";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("inference only"), std::string::npos) << e.what();
  }
  EXPECT_THROW(models::quantize_model(*model, "int8"), Error);  // not in eval mode
}

TEST_F(Int8, EveryCommandTakesTheFlag) {
  const test::TempDir& d = *dir_;
  // generate: the library's int8 text, and a text of the same length as fp32's.
  GenerationOptions o;
  o.greedy = true;
  o.max_new_tokens = 16;
  const Generator g8(gpt(), torch::kCPU, LoadOptions{"int8"});
  const auto r = test::run(std::string(ZOO_BINARY) + " generate --checkpoint " + gpt() +
                           " --greedy --prompt 'the cat' --max-new-tokens 16 --quantize int8 2>/dev/null");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "the cat" + g8.generate({"the cat"}, o)[0].text + "\n");
  // translate
  test::write_file(d / "mt-in.txt", "三只红猫。\n四只黄猫。\n");
  const auto t = test::run(std::string(ZOO_BINARY) + " translate --checkpoint " + mt() + " --quantize int8 < " +
                           (d / "mt-in.txt") + " 2>/dev/null");
  ASSERT_EQ(t.exit_code, 0) << t.output;
  const Translator t8(mt(), torch::kCPU, LoadOptions{"int8"});
  const auto translated = t8.translate({"三只红猫。", "四只黄猫。"});
  EXPECT_EQ(t.output, translated[0].text + "\n" + translated[1].text + "\n");
  const auto g = test::run(std::string(ZOO_BINARY) + " translate --checkpoint " + gru() + " --quantize int8 < " +
                           (d / "mt-in.txt") + " 2>/dev/null");
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_EQ(test::lines_of(g.output).size(), 2u) << g.output;
  // classify: images and texts
  test::write_file(d / "review.txt", test::review(500, true));
  test::write_file(d / "flat.pgm", "P5\n8 8\n255\n" + std::string(64, static_cast<char>(40)));
  for (const auto& [checkpoint, file] : {std::pair{vit(), d / "flat.pgm"}, std::pair{bert(), d / "review.txt"}}) {
    const auto c = test::run_zoo("classify --checkpoint " + checkpoint + " --quantize int8 " + file);
    ASSERT_EQ(c.exit_code, 0) << c.output;
    EXPECT_EQ(c.output.rfind(file + "\t", 0), 0u) << c.output;
  }
  // eval: the line says int8 and fp32 around it; the loss moves a little.
  for (const auto& checkpoint : {gpt(), bert(), vit(), mt(), gru()}) {
    const auto fp32 = test::run_zoo("eval --checkpoint " + checkpoint);
    const auto int8 = test::run_zoo("eval --checkpoint " + checkpoint + " --quantize int8");
    ASSERT_EQ(fp32.exit_code, 0) << fp32.output;
    ASSERT_EQ(int8.exit_code, 0) << int8.output;
    const json a = test::eval_json(fp32.output), b = test::eval_json(int8.output);
    EXPECT_EQ(b.value("quantize", ""), "int8") << int8.output;
    EXPECT_EQ(b.value("precision", ""), "fp32") << int8.output;
    EXPECT_FALSE(a.contains("quantize"));
    const double la = a.at("loss").get<double>(), lb = b.at("loss").get<double>();
    EXPECT_NEAR(lb, la, 0.03 * la) << checkpoint;
    EXPECT_NE(lb, la) << checkpoint << ": the int8 path was not taken";
  }
}

TEST_F(Int8, CommandLineErrorsNameTheValueAndTheDevice) {
  const auto unknown = test::run_zoo("generate --checkpoint " + gpt() + " --prompt a --quantize int4");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.output.find("zoo: error: --quantize 'int4': unknown"), std::string::npos) << unknown.output;
  test::write_file(*dir_ / "one-line.txt", "三只红猫。\n");
  for (const std::string& command :
       {"generate --checkpoint " + gpt() + " --prompt a", "classify --checkpoint " + bert() + " " + (*dir_ / "one-line.txt"),
        "eval --checkpoint " + gpt(), "translate --checkpoint " + mt() + " --input " + (*dir_ / "one-line.txt")}) {
    const auto r = test::run_zoo(command + " --quantize int8 --device cuda:0");
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.output.find("--quantize int8 runs on the CPU only, and the device is cuda:0"), std::string::npos)
        << command << "\n" << r.output;
  }
  const auto devices = test::run_zoo("devices");
  ASSERT_EQ(devices.exit_code, 0) << devices.output;
  EXPECT_NE(devices.output.find("quantized engines: "), std::string::npos) << devices.output;
  EXPECT_NE(devices.output.find("--quantize int8 uses " + models::int8_engine()), std::string::npos) << devices.output;
}

TEST_F(Int8, ThreadsShareTheQuantizedWeights) {
  const Generator g(gpt(), torch::kCPU, LoadOptions{"int8"});
  GenerationOptions o;
  o.greedy = true;
  o.max_new_tokens = 16;
  const std::vector<std::string> prompts = {"the cat", "we sing", "a dog"};
  const auto one = g.generate(prompts, o);
  const Classifier texts(bert(), torch::kCPU, LoadOptions{"int8"});
  const std::vector<std::string> reviews = {test::review(300, true), test::review(301, false)};
  const auto text_one = texts.classify_texts(reviews, 2);
  std::vector<std::string> failures(4);
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&, i] {
      try {
        for (int round = 0; round < 3; ++round) {
          const auto gen = g.generate(prompts, o);
          for (size_t p = 0; p < prompts.size(); ++p)
            if (gen[p].text != one[p].text || gen[p].logprob != one[p].logprob) failures[i] += "generation differs; ";
          if (texts.classify_texts(reviews, 2)[1][0].probability != text_one[1][0].probability)
            failures[i] += "classification differs; ";
        }
      } catch (const std::exception& e) {
        failures[i] += e.what();
      }
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_TRUE(failures[i].empty()) << "thread " << i << ": " << failures[i];
}

}  // namespace
}  // namespace zoo
