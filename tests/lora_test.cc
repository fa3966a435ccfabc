// LoRA adapters (models/lora.h, io/adapters.h) end to end on a tiny GPT: train.lora from a
// base checkpoint leaves the base bit-identical, trains only the adapters, writes PEFT's files;
// a plain-PyTorch LoRA written from the paper's formula (tests/py/lora_reference.py) on the
// exported base and adapter gives zoo's logits, and so does the merged export in the plain
// GPT-2 reference; an exported adapter continues as --init-from; bad targets and adapters are
// named.
#include <gtest/gtest.h>

#include <filesystem>

#include "fixtures.h"
#include "models/gpt.h"
#include "test_util.h"
#include "io/adapters.h"
#include "io/safetensors.h"
#include "train/task_registry.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;

class Lora : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir();
    test::write_file(*dir_ / "text.txt", test::corpus());
    test::tiny_config(*dir_, {*dir_ / "text.txt"}, 20);
    auto r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (*dir_ / "base"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (*dir_ / "lora") +
                      " --init-from " + (*dir_ / "base/checkpoint-20") + " --set train.max_steps=15" +
                      " --set train.save_steps=15 --set train.eval_steps=15 --set train.learning_rate=0.02" +
                      " --set 'train.lora={\"r\": 4, \"alpha\": 8}'");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    output_ = new std::string(r.output);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete output_;
  }
  static std::string base() { return *dir_ / "base/checkpoint-20"; }
  static std::string lora() { return *dir_ / "lora/checkpoint-15"; }
  static test::TempDir* dir_;
  static std::string* output_;
};
test::TempDir* Lora::dir_ = nullptr;
std::string* Lora::output_ = nullptr;

TEST_F(Lora, TheBaseStaysBitIdenticalAndOnlyTheAdaptersTrain) {
  EXPECT_NE(output_->find("zoo: LoRA r=4 alpha=8 on 2 linear layers (c_attn): 1,024 of "), std::string::npos) << *output_;
  const auto before = safetensors::load(base() + "/model.safetensors").tensors;
  const auto after = safetensors::load(lora() + "/model.safetensors").tensors;
  ASSERT_EQ(before.size(), after.size());
  for (const auto& [name, t] : before) EXPECT_TRUE(torch::equal(t, after.at(name))) << name << " changed";
  const auto adapter = safetensors::load(lora() + "/" + kAdapterWeights).tensors;
  ASSERT_EQ(adapter.size(), 4u);  // 2 layers x (A, B)
  const auto& b = adapter.at("base_model.model.transformer.h.1.attn.c_attn.lora_B.weight");
  EXPECT_EQ(b.sizes(), (std::vector<int64_t>{96, 4}));
  EXPECT_GT(b.abs().max().item<double>(), 1e-4) << "B starts at 0; training moves it";
  EXPECT_EQ(adapter.at("base_model.model.transformer.h.0.attn.c_attn.lora_A.weight").sizes(),
            (std::vector<int64_t>{4, 32}));
  // The optimizer keeps state for the adapters only (two moments of 1,024 values, not of the base's).
  EXPECT_LT(fs::file_size(lora() + "/optimizer.pt"), fs::file_size(base() + "/optimizer.pt") / 4);
  const json config = read_json_file(lora() + "/" + kAdapterConfig);
  EXPECT_EQ(config["peft_type"], "LORA");
  EXPECT_EQ(config["r"], 4);
  EXPECT_EQ(config["lora_alpha"], 8.0);
  EXPECT_EQ(config["target_modules"], json({"c_attn"}));
  EXPECT_EQ(config["fan_in_fan_out"], true);
  EXPECT_EQ(config["base_model_name_or_path"], base());
}

torch::Tensor zoo_logits(const std::string& dir, bool merge, const torch::Tensor& ids) {
  auto task = load_task(dir, {}, torch::kCPU, merge);
  auto gpt = std::dynamic_pointer_cast<models::GPT2LMHeadModelImpl>(task->model());
  torch::NoGradGuard no_grad;
  return gpt->forward(ids);
}

torch::Tensor python_logits(const std::string& script, const std::string& args, const test::TempDir& t,
                            const torch::Tensor& ids) {
  safetensors::save(t / "in.safetensors", {{"input_ids", ids}});
  auto r = test::run_python(script, args + " " + (t / "in.safetensors") + " " + (t / "out.safetensors"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return r.exit_code == 0 ? safetensors::load(t / "out.safetensors").tensors.at("logits") : torch::Tensor();
}

TEST_F(Lora, ThePaperFormulaInPlainPyTorchAndTheMergedExportGiveZoosLogits) {
  test::TempDir t;
  const std::string hf_base = t / "hf-base", adapter = t / "adapter", merged = t / "merged";
  ASSERT_EQ(test::run_zoo("export --checkpoint " + base() + " --out " + hf_base).exit_code, 0);
  auto r = test::run_zoo("export --checkpoint " + lora() + " --out " + adapter + " --adapter");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(std::distance(fs::directory_iterator(adapter), fs::directory_iterator()), 2) << "only PEFT's two files";
  ASSERT_EQ(test::run_zoo("export --checkpoint " + lora() + " --out " + merged).exit_code, 0);

  const auto ids = torch::randint(0, 20, {3, 24}, torch::kLong);
  const auto ours = zoo_logits(lora(), /*merge=*/false, ids);
  const auto ours_merged = zoo_logits(lora(), /*merge=*/true, ids);
  const auto base_only = zoo_logits(base(), /*merge=*/true, ids);
  EXPECT_LE((ours - ours_merged).abs().max().item<double>(), 1e-5);
  EXPECT_GT((ours - base_only).abs().max().item<double>(), 1e-3) << "the adapter changes the logits";

  const auto reference = python_logits("lora_reference.py", "logits " + hf_base + " " + adapter, t, ids);
  ASSERT_TRUE(reference.defined());
  EXPECT_LE((ours - reference).abs().max().item<double>(), 1e-4);
  const auto plain = python_logits("hf_gpt2.py", "logits " + merged, t, ids);
  ASSERT_TRUE(plain.defined());
  EXPECT_LE((ours - plain).abs().max().item<double>(), 1e-4);
}

TEST_F(Lora, AnExportedAdapterContinuesOnItsBaseAndResumes) {
  test::TempDir t;
  ASSERT_EQ(test::run_zoo("export --checkpoint " + lora() + " --out " + (t / "adapter") + " --adapter").exit_code, 0);
  auto r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / "more") +
                         " --init-from " + (t / "adapter") + " --set train.max_steps=2");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("zoo: LoRA r=4 alpha=8 on 2 linear layers"), std::string::npos) << r.output;
  // Before its first step the model is the adapter's: the same loss as the LoRA checkpoint's.
  const auto ids = torch::randint(0, 20, {2, 16}, torch::kLong);
  const auto a = zoo_logits(lora(), true, ids);
  // Resuming the LoRA run continues the adapters (and their optimizer state).
  r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (*dir_ / "lora") +
                    " --resume --set train.max_steps=17 --set 'train.lora={\"r\": 4, \"alpha\": 8}'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
  const auto base_before = safetensors::load(base() + "/model.safetensors").tensors;
  const auto base_after = safetensors::load(*dir_ / "lora/checkpoint-17/model.safetensors").tensors;
  for (const auto& [name, tensor] : base_before) EXPECT_TRUE(torch::equal(tensor, base_after.at(name))) << name;
  EXPECT_TRUE(a.defined());
}

// Gradient checkpointing recomputes the blocks from their inputs; with the embeddings frozen
// the first block's input needs no gradient, which must not leave the adapters untrained.
TEST_F(Lora, GradientCheckpointingTrainsTheSameAdapters) {
  test::TempDir t;
  for (const std::string on : {"false", "true"}) {
    auto r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / on) + " --init-from " +
                           base() + " --set train.max_steps=3 --set train.save_steps=3 --set train.learning_rate=0.02" +
                           " --set 'train.lora={\"r\": 4, \"alpha\": 8}' --set train.gradient_checkpointing=" + on);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto plain = safetensors::load(t / "false/checkpoint-3/" + kAdapterWeights).tensors;
  const auto recomputed = safetensors::load(t / "true/checkpoint-3/" + kAdapterWeights).tensors;
  ASSERT_EQ(plain.size(), recomputed.size());
  for (const auto& [name, tensor] : plain) {
    EXPECT_LE((tensor - recomputed.at(name)).abs().max().item<double>(), 1e-6) << name;
    if (name.find("lora_B") != std::string::npos) {
      EXPECT_GT(tensor.abs().max().item<double>(), 0.0) << name;
    }
  }
}

TEST_F(Lora, BadTargetsAndMismatchedAdaptersAreNamed) {
  test::TempDir t;
  auto r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / "x") + " --init-from " +
                         base() + " --set 'train.lora={\"target_modules\": [\"q_proj\"]}'");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("train.lora.target_modules [q_proj] names no linear layer of this model; its linear layers "
                          "end in: c_attn, c_fc, c_proj"),
            std::string::npos)
      << r.output;
  // A wrong key is refused before anything is read or written; adapters on a random model are warned of.
  r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / "y") +
                    " --set train.lora.rank=2");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("unknown key 'train.lora.rank'; valid keys: r, alpha"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(t / "y")) << r.output;
  r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / "z") +
                    " --set train.lora.r=2 --set train.max_steps=1");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("warning: train.lora without train.init_from"), std::string::npos) << r.output;
  r = test::run_zoo("train --config " + (*dir_ / "config.json") + " --output-dir " + (t / "huge") + " --init-from " +
                    base() + " --set train.lora.r=1000000000000 --set train.check_memory=false");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("train.lora.r (1000000000000) exceeds the rank of 'transformer.h.0.attn.c_attn' (96 x 32)"),
            std::string::npos)
      << r.output;
  fs::copy(lora(), t / "r8", fs::copy_options::recursive);
  json c = read_json_file(t / "r8/config.json");
  c["train"]["lora"]["r"] = 8;
  write_json_file(t / "r8/config.json", c);
  r = test::run_zoo("eval --checkpoint " + (t / "r8"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("adapter_model.safetensors: tensor 'base_model.model.transformer.h.0.attn.c_attn.lora_A.weight' "
                          "has shape [4, 32] but the adapter expects [8, 32]"),
            std::string::npos)
      << r.output;
}

}  // namespace
}  // namespace zoo
