// GPT-2 (models/gpt.h): Hugging Face names and layout, the same logits as an independent
// plain-PyTorch GPT-2 (tests/py/hf_gpt2.py) in both directions, and decoding with the
// key/value cache equal to recomputing the prefix.
#include <set>
#include <sstream>

#include <gtest/gtest.h>

#include "models/gpt.h"
#include "models/registry.h"
#include "test_util.h"
#include "io/checkpoint.h"
#include "io/config.h"
#include "io/safetensors.h"
#include "predict/text_generator.h"
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
  auto g = load_text_generator(hf, torch::Device(torch::kCPU));
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

// `zoo generate --prompts FILE` continues every line in batches (here of 2, with padding), one
// JSON line per prompt in the file's order, each the greedy text `zoo generate --prompt` gives
// it alone (a character model trained on the README, so that the continuations differ).
TEST(GPT2, GenerateWithPromptsFileGivesEachPromptsTextAlone) {
  test::TempDir dir;
  write_json_file(dir / "lm.json",
                  json{{"task", "language_modeling"},
                       {"model", {{"preset", "gpt-nano-char"}}},
                       {"data", {{"files", {std::string(ZOO_TESTS_DIR) + "/../README.md"}}, {"tokenizer", "char"},
                                 {"block_size", 32}}},
                       {"train", {{"max_steps", 300}, {"per_device_train_batch_size", 16}, {"learning_rate", 0.003},
                                  {"save_steps", 300}, {"eval_steps", 300}, {"report_to_tensorboard", false}}}});
  auto trained = test::run_zoo("train --config " + (dir / "lm.json") + " --output-dir " + (dir / "lm"));
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const std::string checkpoint = dir / "lm/checkpoint-300";
  const std::vector<std::string> prompts{"the model", "a", "zoo train --con", "The "};
  std::string file;
  for (const auto& p : prompts) file += p + "\n";
  test::write_file(dir / "prompts.txt", file);
  const std::string options = " --greedy --max-new-tokens 12 --checkpoint " + checkpoint;
  auto batched = test::run("{ " + std::string(ZOO_BINARY) + " generate --prompts " + (dir / "prompts.txt") +
                           " --batch-size 2" + options + " 2>/dev/null; }");
  ASSERT_EQ(batched.exit_code, 0) << batched.output;
  std::istringstream lines(batched.output);
  std::set<std::string> different;
  for (const auto& p : prompts) {
    std::string line;
    ASSERT_TRUE(std::getline(lines, line)) << batched.output;
    const json j = json::parse(line);
    EXPECT_EQ(j.at("prompt"), p);
    different.insert(j.at("completion").get<std::string>());
    auto alone = test::run("{ " + std::string(ZOO_BINARY) + " generate --prompt '" + p + "'" + options + " 2>/dev/null; }");
    ASSERT_EQ(alone.exit_code, 0) << alone.output;
    EXPECT_EQ(p + j.at("completion").get<std::string>() + "\n", alone.output) << "prompt '" << p << "'";
  }
  EXPECT_GE(different.size(), 3u) << batched.output;  // a test that could tell the prompts apart
  auto bad = test::run_zoo("generate --prompts " + (dir / "prompts.txt") + " --prompt x" + options);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("give one of --prompt TEXT, --prompt-file FILE and --prompts FILE"), std::string::npos)
      << bad.output;
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

// Prompts of different lengths decoded as one left-padded batch give each prompt's own tokens
// and log-probabilities: a padded row's logits equal its logits alone; greedy with the cache
// within the context, recomputing also past it, and beam search.
TEST(GPT2, ALeftPaddedBatchDecodesEachPromptAsAlone) {
  auto m = perturbed(tiny(), 8);
  torch::NoGradGuard g;
  const std::vector<std::vector<int64_t>> prompts{{5, 9, 2, 7, 1, 3}, {4}, {8, 8, 30}, {11, 12, 13, 14, 15, 16, 17, 18}};
  const int64_t longest = 8;
  auto tokens = torch::zeros({4, longest}, torch::kLong), mask = torch::zeros({4, longest}, torch::kLong);
  for (int64_t r = 0; r < 4; ++r) {
    const auto n = static_cast<int64_t>(prompts[r].size());
    tokens[r].narrow(0, longest - n, n).copy_(torch::tensor(prompts[r]));
    mask[r].narrow(0, longest - n, n).fill_(1);
  }
  const auto batch = m->forward(tokens, nullptr, mask);
  for (int64_t r = 0; r < 4; ++r) {
    const auto n = static_cast<int64_t>(prompts[r].size());
    const auto alone = m->forward(torch::tensor(prompts[r]).view({1, -1}))[0];
    EXPECT_LE((batch[r].narrow(0, longest - n, n) - alone).abs().max().item<double>(), 1e-5) << "row " << r;
  }
  auto decode = [&](bool cache, int64_t new_tokens, int64_t beams) {
    models::GPT2Decoder decoder(m, cache);
    models::GenerationOptions o;
    o.num_beams = beams;
    o.max_new_tokens = new_tokens;
    o.eos_id = 999;  // never: every row runs all its steps
    std::vector<models::Hypothesis> alone;
    for (const auto& p : prompts) {
      o.bos_id = p.back();
      alone.push_back(beams > 1 ? models::beam_search(decoder, decoder.start(p), o)[0][0]
                                : models::greedy_decode(decoder, decoder.start(p), o)[0]);
    }
    o.bos_id = 0;  // a placeholder: each row's own last token comes first
    std::vector<models::Hypothesis> together;
    if (beams > 1)
      for (auto& best : models::beam_search(decoder, decoder.start(prompts, 0), o)) together.push_back(best[0]);
    else
      together = models::greedy_decode(decoder, decoder.start(prompts, 0), o);
    ASSERT_EQ(together.size(), prompts.size());
    for (size_t r = 0; r < prompts.size(); ++r) {
      EXPECT_EQ(together[r].tokens, alone[r].tokens) << "row " << r << (cache ? ", cached" : ", recomputed");
      EXPECT_NEAR(together[r].log_prob, alone[r].log_prob, 1e-4) << "row " << r;
    }
  };
  decode(true, 12, 1);   // 8 + 12 < 24 positions
  decode(false, 30, 1);  // past the context: each row's window of its last 24 tokens
  decode(true, 10, 3);
}

}  // namespace
}  // namespace zoo
