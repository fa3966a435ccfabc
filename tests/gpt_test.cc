// GPT-2 (models/gpt.h): Hugging Face names and layout, the same logits as an independent
// plain-PyTorch GPT-2 (tests/py/hf_gpt2.py) in both directions, and decoding with the
// key/value cache equal to recomputing the prefix.
#include <gtest/gtest.h>

#include "models/gpt.h"
#include "models/registry.h"
#include "test_util.h"
#include "train/checkpoint.h"
#include "train/config.h"
#include "train/safetensors.h"
#include "train/task_registry.h"

namespace zoo {
namespace {

models::GPT2Options tiny() {
  models::GPT2Options o;
  o.vocab_size = 37;
  o.n_positions = 24;
  o.n_embd = 32;
  o.n_layer = 2;
  o.n_head = 4;
  o.resid_pdrop = o.embd_pdrop = o.attn_pdrop = 0;
  return o;
}

json section_of(const models::GPT2Options& o) {
  json section = to_json(o);
  section["model_type"] = "gpt2";
  return models::resolve_model_config(section);
}

models::GPT2LMHeadModel perturbed(const models::GPT2Options& o, int seed) {
  torch::manual_seed(seed);
  models::GPT2LMHeadModel m(o);
  torch::NoGradGuard g;
  for (auto& p : m->parameters()) p.add_(torch::randn_like(p) * 0.1);  // non-trivial LayerNorms and biases
  m->eval();
  return m;
}

TEST(GPT2, RegisteredNamesAreHuggingFacesAndTheFileHoldsConv1DLayout) {
  auto m = perturbed(tiny(), 1);
  std::set<std::string> names;
  for (const auto& [k, v] : state_dict(*m)) names.insert(k);
  for (const char* k : {"transformer.wte.weight", "transformer.wpe.weight", "transformer.h.0.ln_1.weight",
                        "transformer.h.0.attn.c_attn.weight", "transformer.h.0.attn.c_attn.bias",
                        "transformer.h.0.attn.c_proj.weight", "transformer.h.0.ln_2.bias",
                        "transformer.h.1.mlp.c_fc.weight", "transformer.h.1.mlp.c_proj.bias",
                        "transformer.ln_f.weight"})
    EXPECT_TRUE(names.count(k)) << k;
  EXPECT_EQ(names.size(), 4u + 2 * 12u);  // wte, wpe, ln_f (2); 12 per block; no lm_head (tied)
  test::TempDir dir;
  save_model(*m, dir / "model.safetensors", json{{"model", section_of(tiny())}});
  auto file = safetensors::load(dir / "model.safetensors");
  EXPECT_EQ(file.tensors.at("transformer.h.0.attn.c_attn.weight").sizes(), (std::vector<int64_t>{32, 96}));
  EXPECT_EQ(file.tensors.at("transformer.h.0.mlp.c_fc.weight").sizes(), (std::vector<int64_t>{32, 128}));
  // ... and loads back into the same weights.
  auto back = perturbed(tiny(), 2);
  load_model(*back, dir / "model.safetensors");
  auto ids = torch::randint(0, 37, {2, 9}, torch::kLong);
  torch::NoGradGuard g;
  EXPECT_TRUE(torch::equal(m->forward(ids), back->forward(ids)));
}

torch::Tensor python_logits(const test::TempDir& dir, const std::string& model_dir, const torch::Tensor& ids) {
  safetensors::save(dir / "in.safetensors", {{"input_ids", ids}});
  auto r = test::run_python("hf_gpt2.py", "logits " + model_dir + " " + (dir / "in.safetensors") + " " +
                                              (dir / "out.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  if (r.exit_code != 0) return torch::Tensor();
  return safetensors::load(dir / "out.safetensors").tensors.at("logits");
}

TEST(GPT2, ExportGivesThePythonReferenceTheSameLogits) {
  test::TempDir dir;
  auto m = perturbed(tiny(), 3);
  const json section = section_of(tiny());
  save_model(*m, dir / "model.safetensors", json{{"model", section}});
  write_json_file(dir / "config.json", models::to_hf_config(section));
  auto ids = torch::randint(0, 37, {3, 17}, torch::kLong);
  auto py = python_logits(dir, dir.path().string(), ids);
  ASSERT_TRUE(py.defined());
  torch::NoGradGuard g;
  auto ours = m->forward(ids);
  EXPECT_LE((ours - py).abs().max().item<double>(), 1e-4);
}

// A Hugging Face checkpoint written by the reference, with transformer.* names or with the
// bare names (and mask buffers) of the original gpt2 files.
void check_loads_hugging_face(bool bare) {
  test::TempDir dir;
  const std::string hf = dir / "hf";
  auto r = test::run_python("hf_gpt2.py", "make " + hf + " 4" + (bare ? " bare" : ""));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string task;
  const json section = models::from_hf_config(read_json_file(hf + "/config.json"), &task);
  EXPECT_EQ(task, "language_modeling");
  EXPECT_EQ(section["vocab_size"], 260);
  EXPECT_EQ(section["n_inner"], 0);
  auto m = std::dynamic_pointer_cast<models::GPT2LMHeadModelImpl>(models::build_model(section));
  ASSERT_TRUE(m);
  load_model(*m, hf + "/model.safetensors", "gpt2");
  m->eval();
  auto ids = torch::randint(0, 260, {2, 32}, torch::kLong);
  auto py = python_logits(dir, hf, ids);
  ASSERT_TRUE(py.defined());
  torch::NoGradGuard g;
  EXPECT_LE((m->forward(ids) - py).abs().max().item<double>(), 1e-4);
}

TEST(GPT2, LoadsAHuggingFaceCheckpointWithTheSameLogits) { check_loads_hugging_face(false); }
TEST(GPT2, LoadsTheBareNamesOfTheOriginalGpt2Files) { check_loads_hugging_face(true); }

// A Hugging Face GPT-2 directory (weights, config.json, vocab.json + merges.txt) is a
// checkpoint: its greedy continuation equals the Python reference's, `zoo generate` runs on
// it, and `zoo train` fine-tunes it with model.preset and train.init_from naming it.
TEST(GPT2, AHuggingFaceDirectoryGeneratesAndFineTunes) {
  test::TempDir dir;
  const std::string hf = dir / "hf";
  auto made = test::run_python("hf_gpt2.py", "make " + hf + " 5");
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto task = load_task(hf, {}, torch::Device(torch::kCPU));
  TextGenerator* g = task->text_generator();
  ASSERT_NE(g, nullptr);
  const auto prompt = g->encode(" the cat");
  ASSERT_FALSE(prompt.empty());
  torch::NoGradGuard no_grad;
  auto decoding = g->start_decoding(prompt, true);
  models::GenerationOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 8;
  o.bos_id = decoding.first;
  o.eos_id = 100000;  // run all 8 steps
  const auto ours = models::greedy_decode(*decoding.model, std::move(decoding.state), o)[0].tokens;
  std::string args = "greedy " + hf + " 8";
  for (int64_t id : prompt) args += " " + std::to_string(id);
  auto py = test::run_python("hf_gpt2.py", args);
  ASSERT_EQ(py.exit_code, 0) << py.output;
  std::string expected;
  for (size_t i = 0; i < ours.size(); ++i) expected += (i ? " " : "") + std::to_string(ours[i]);
  EXPECT_EQ(py.output, expected + "\n");
  auto cli = test::run_zoo("generate --checkpoint " + hf + " --prompt ' the' --max-new-tokens 5 --seed 1");
  EXPECT_EQ(cli.exit_code, 0) << cli.output;
  test::write_file(dir / "text.txt", std::string(4000, 'a') + " the cat " + std::string(4000, 'h'));
  write_json_file(dir / "ft.json",
                  json{{"task", "language_modeling"},
                       {"model", {{"preset", hf}}},
                       {"data", {{"files", {dir / "text.txt"}}, {"tokenizer", hf}}},
                       {"train", {{"max_steps", 2}, {"per_device_train_batch_size", 2}, {"init_from", hf},
                                  {"report_to_tensorboard", false}}}});
  auto ft = test::run_zoo("train --config " + (dir / "ft.json") + " --output-dir " + (dir / "ft"));
  ASSERT_EQ(ft.exit_code, 0) << ft.output;
  EXPECT_NE(ft.output.find("loaded 28 of 28 tensors"), std::string::npos) << ft.output;
  auto exported = test::run_zoo("export --checkpoint " + (dir / "ft/checkpoint-2") + " --out " + (dir / "out"));
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  for (const char* f : {"config.json", "model.safetensors", "vocab.json", "merges.txt", "tokenizer_config.json"})
    EXPECT_TRUE(std::filesystem::exists(dir / ("out/" + std::string(f)))) << f;
  auto reloaded = python_logits(dir, dir / "out", torch::zeros({1, 4}, torch::kLong));
  EXPECT_TRUE(reloaded.defined());
}

TEST(GPT2, CachedStepsGiveTheLogitsOfTheWholeSequence) {
  auto m = perturbed(tiny(), 5);
  auto ids = torch::randint(0, 37, {2, 12}, torch::kLong);
  torch::NoGradGuard g;
  auto full = m->forward(ids);
  std::vector<models::KVCache> caches;
  auto first = m->forward(ids.narrow(1, 0, 5), &caches);  // a prompt, then one token at a time
  std::vector<torch::Tensor> parts{first};
  for (int64_t t = 5; t < 12; ++t) parts.push_back(m->forward(ids.narrow(1, t, 1), &caches));
  EXPECT_LE((torch::cat(parts, 1) - full).abs().max().item<double>(), 1e-5);
}

TEST(GPT2, TooManyPositionsIsAnErrorNamingTheLimit) {
  auto m = perturbed(tiny(), 6);
  torch::NoGradGuard g;
  try {
    m->forward(torch::zeros({1, 25}, torch::kLong));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("n_positions"), std::string::npos) << e.what();
  }
}

// The decoder with and without the cache chooses the same tokens, also past the context
// (where the cache is rebuilt from the last half of the window).
TEST(GPT2, DecoderWithCacheMatchesRecomputingWithinTheContext) {
  auto m = perturbed(tiny(), 7);
  torch::NoGradGuard g;
  models::GenerationOptions o;
  o.num_beams = 1;
  o.max_new_tokens = 15;  // prompt 6 + 15 < 24 positions
  o.eos_id = 36;
  const std::vector<int64_t> prompt{1, 2, 3, 4, 5, 6};
  o.bos_id = prompt.back();
  models::GPT2Decoder cached(m, true), recomputed(m, false);
  auto a = models::greedy_decode(cached, cached.start(prompt), o);
  auto b = models::greedy_decode(recomputed, recomputed.start(prompt), o);
  EXPECT_EQ(a[0].tokens, b[0].tokens);
  EXPECT_NEAR(a[0].log_prob, b[0].log_prob, 1e-4);
  o.max_new_tokens = 40;  // beyond the 24 positions: keeps going
  o.eos_id = 999;
  auto c = models::greedy_decode(cached, cached.start(prompt), o);
  EXPECT_EQ(c[0].tokens.size(), 40u);
  auto beams = models::beam_search(cached, cached.start(prompt), [&] {
    auto ob = o;
    ob.num_beams = 3;
    ob.max_new_tokens = 10;
    return ob;
  }());
  EXPECT_EQ(beams[0][0].tokens.size(), 10u);
}

}  // namespace
}  // namespace zoo
