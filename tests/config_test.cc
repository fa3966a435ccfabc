// Config parsing/validation, --set overrides, presets, devices and schedules.
#include <cmath>
#include <filesystem>
#include <set>

#include <gtest/gtest.h>

#include "models/registry.h"
#include "test_util.h"
#include "io/config.h"
#include "train/device.h"
#include "train/task_registry.h"
#include "train/trainer.h"

namespace zoo {
namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(Config, DefaultsComeFromTheOptionsStruct) {
  auto o = read_options<TrainOptions>(json::object(), "train");
  EXPECT_EQ(o.per_device_train_batch_size, TrainOptions().per_device_train_batch_size);
  json j = to_json(o);
  EXPECT_EQ(j["learning_rate"], TrainOptions().learning_rate);
  EXPECT_EQ(j["lr_scheduler_type"], "linear");
}

TEST(Config, UnknownKeySuggestsTheNearest) {
  const auto msg = error_of([] { read_options<TrainOptions>(json{{"learning_rte", 0.1}}, "train"); });
  EXPECT_NE(msg.find("unknown key 'train.learning_rte'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'learning_rate'"), std::string::npos) << msg;
}

TEST(Config, UnknownKeyFarFromAnyListsValidKeys) {
  const auto msg = error_of([] { read_options<TrainOptions>(json{{"zzzzzzzzzzzz", 1}}, "train"); });
  EXPECT_NE(msg.find("valid keys: max_steps"), std::string::npos) << msg;
}

TEST(Config, WrongTypeAndRange) {
  EXPECT_NE(error_of([] { read_options<TrainOptions>(json{{"max_steps", "ten"}}, "train"); })
                .find("train.max_steps must be an integer, got \"ten\""),
            std::string::npos);
  EXPECT_NE(error_of([] { read_options<TrainOptions>(json{{"max_steps", 1.5}}, "train"); }).find("integer"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_options<TrainOptions>(json{{"adam_beta1", 2.0}}, "train"); })
                .find("train.adam_beta1 must be in [0, 1], got 2"),
            std::string::npos);
  EXPECT_NE(error_of([] { read_options<TrainOptions>(json{{"optim", "sgdd"}}, "train"); })
                .find("did you mean \"sgd\""),
            std::string::npos);
  EXPECT_NE(error_of([] { read_options<TrainOptions>(json{{"report_to_tensorboard", 1}}, "train"); })
                .find("true or false"),
            std::string::npos);
  // Integers written as floats are fine when whole.
  EXPECT_EQ(read_options<TrainOptions>(json{{"max_steps", 1e3}}, "train").max_steps, 1000);
}

TEST(Config, JsonSyntaxErrorNamesFileLineAndColumn) {
  test::TempDir dir;
  const std::string path = dir / "bad.json";
  test::write_file(path, "{\n  \"model\": {\n    \"hidden_size\": 12,,\n  }\n}\n");
  const auto msg = error_of([&] { read_json_file(path); });
  EXPECT_NE(msg.find(path + ":3:"), std::string::npos) << msg;
  EXPECT_NE(error_of([&] { read_json_file(dir / "missing.json"); }).find("missing.json: no such file"),
            std::string::npos);
}

TEST(Config, Overrides) {
  json c = {{"train", {{"max_steps", 1}}}};
  apply_override(c, "train.max_steps=300");
  apply_override(c, "train.optim=sgd");  // bare word: a string
  apply_override(c, "data.mean=[0.5]");
  EXPECT_EQ(c["train"]["max_steps"], 300);
  EXPECT_EQ(c["train"]["optim"], "sgd");
  EXPECT_EQ(c["data"]["mean"], json::array({0.5}));
  EXPECT_NE(error_of([&] { apply_override(c, "max_steps=3"); }).find("expected section.key=value"),
            std::string::npos);
  EXPECT_NE(error_of([&] { apply_override(c, "trian.max_steps=3"); }).find("did you mean 'train'"),
            std::string::npos);
}

TEST(Config, ResolveFillsEveryDefaultAndChecksModelType) {
  json c = {{"model", {{"preset", "vit-tiny"}}}, {"train", {{"max_steps", 5}}}};
  json r = resolve_config(c, "x.json");
  EXPECT_EQ(r["model"]["model_type"], "vit");
  EXPECT_EQ(r["model"]["image_size"], 28);
  EXPECT_EQ(r["train"]["max_steps"], 5);
  EXPECT_EQ(r["data"]["mean"], json::array({0.2860}));  // Fashion-MNIST statistics
  EXPECT_EQ(resolve_config(r, "again.json"), r);        // idempotent
  const auto msg = error_of([] { resolve_config(json{{"model", {{"model_type", "vitt"}}}}, "x.json"); });
  EXPECT_NE(msg.find("x.json: config: unknown model_type 'vitt'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'vit'"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { resolve_config(json{{"modle", json::object()}}, "x.json"); }).find("unknown section"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              resolve_config(json{{"model", {{"preset", "vit-tiny"}, {"num_attention_heads", 3}}}}, "x.json");
            }).find("divisible"),
            std::string::npos);
}

TEST(Device, Parsing) {
  EXPECT_EQ(resolve_device("cpu"), torch::Device(torch::kCPU));
  const auto a = resolve_device("auto");
  EXPECT_TRUE(a.is_cpu() || a.is_cuda() || a.is_mps());
  EXPECT_NE(error_of([] { resolve_device("gpu"); }).find("unknown device 'gpu'"), std::string::npos);
  EXPECT_NE(error_of([] { resolve_device("cuda:x"); }).find("cuda:N"), std::string::npos);
  if (!torch::cuda::is_available()) {
    EXPECT_NE(error_of([] { resolve_device("cuda"); }).find("not available"), std::string::npos);
    EXPECT_NE(error_of([] { resolve_device("cuda:1"); }).find("not available"), std::string::npos);
  } else {
    EXPECT_TRUE(resolve_device("cuda:0").is_cuda());
    EXPECT_NE(error_of([] { resolve_device("cuda:99"); }).find("has"), std::string::npos);
  }
  if (!mps_available()) {
    EXPECT_NE(error_of([] { resolve_device("mps"); }).find("not available"), std::string::npos);
  }
}

TEST(Schedule, Shapes) {
  EXPECT_DOUBLE_EQ(lr_factor("constant", 5, 10, 100), 1.0);
  EXPECT_DOUBLE_EQ(lr_factor("linear", 5, 10, 100), 0.5);  // warmup
  EXPECT_DOUBLE_EQ(lr_factor("linear", 10, 10, 110), 1.0);
  EXPECT_DOUBLE_EQ(lr_factor("linear", 60, 10, 110), 0.5);
  EXPECT_NEAR(lr_factor("cosine", 60, 10, 110), 0.5, 1e-12);
  EXPECT_NEAR(lr_factor("cosine", 110, 10, 110), 0.0, 1e-12);
  EXPECT_NEAR(lr_factor("cosine_with_min_lr", 110, 10, 110, 0.1), 0.1, 1e-12);  // nanoGPT: min_lr = lr / 10
  EXPECT_NEAR(lr_factor("cosine_with_min_lr", 60, 10, 110, 0.1), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(lr_factor("constant_with_warmup", 50, 10, 100), 1.0);
  // Noam: peak 1 at step == warmup, 1/sqrt decay after.
  EXPECT_NEAR(lr_factor("inverse_sqrt", 99, 100, 1000), 1.0, 1e-12);
  EXPECT_NEAR(lr_factor("inverse_sqrt", 399, 100, 1000), 0.5, 1e-12);
  EXPECT_LT(lr_factor("inverse_sqrt", 9, 100, 1000), 0.11);
}


TEST(Config, TheTaskDefaultsByModelTypeAndIsCheckedByName) {
  const json vit = {{"model", {{"preset", "vit-tiny"}}}};
  EXPECT_EQ(resolve_config(vit, "a.json").at("task"), "image_classification");
  json named = vit;
  named["task"] = "image_classification";
  EXPECT_EQ(resolve_config(named, "a.json").at("task"), "image_classification");
  named["task"] = "image_clasification";
  auto msg = error_of([&] { resolve_config(named, "a.json"); });
  EXPECT_NE(msg.find("a.json: config: unknown task 'image_clasification'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'image_classification'"), std::string::npos) << msg;
  named["task"] = "translation";
  msg = error_of([&] { resolve_config(named, "a.json"); });
  EXPECT_NE(msg.find("the task 'translation' cannot train model_type 'vit'; it trains seq2seq"), std::string::npos)
      << msg;
  json overridden = vit;
  apply_override(overridden, "task=translation");
  EXPECT_EQ(overridden.at("task"), "translation");
}

// train.r_drop_alpha: in [0, 100], documented, carried to the task, and refused when the
// task's loss has no R-Drop (language modelling, BERT pretraining), naming the tasks that do.
TEST(Config, RDropAlphaReachesTheTaskOrIsRefusedByTasksWithoutIt) {
  EXPECT_NE(error_of([] { read_options<TrainOptions>(json{{"r_drop_alpha", -1}}, "train"); })
                .find("train.r_drop_alpha must be in [0, 100], got -1"),
            std::string::npos);
  EXPECT_NE(describe_config("translation").find("train.r_drop_alpha (float, default 0.0) in [0, 100]"),
            std::string::npos);
  EXPECT_EQ(task_context(json{{"train", {{"r_drop_alpha", 4}}}}).r_drop_alpha, 4.0);
  EXPECT_EQ(task_context(json::object()).r_drop_alpha, 0.0);
  for (const std::string preset : {"gpt-nano-char", "bert-tiny-imdb"}) {
    json raw{{"model", {{"preset", preset}}}, {"train", {{"r_drop_alpha", 1}}}};
    if (preset == "bert-tiny-imdb") raw["task"] = "bert_pretraining";
    const json config = resolve_config(raw, "a.json");
    const auto msg = error_of([&] { make_task(config); });
    EXPECT_NE(msg.find("train.r_drop_alpha=1: R-Drop is implemented for the tasks translation, text_classification, "
                       "image_classification, not '" + config.at("task").get<std::string>() + "'"),
              std::string::npos)
        << msg;
  }
}

TEST(Config, RegistriesAreTablesThatAgreeWithEachOther) {
  for (const auto& task : task_registry()) {
    EXPECT_FALSE(task.model_types.empty()) << task.name;
    for (const auto& type : task.model_types) {
      const auto& model = models::model_entry(type);  // throws for a type the model table lacks
      EXPECT_EQ(model.architectures.count(task.name), 1u) << type << " has no Hugging Face head for " << task.name;
    }
    EXPECT_NE(describe_config(task.name).find("train.learning_rate"), std::string::npos) << task.name;
  }
  for (const auto& model : models::model_registry()) {
    EXPECT_NO_THROW(task_entry(model.default_task)) << model.model_type;
    // What a fine-tuning takes from its checkpoint's config.json: keys of the section.
    EXPECT_FALSE(model.architecture_keys.empty()) << model.model_type;
    std::set<std::string> keys;
    for (const auto& doc : model.describe()) keys.insert(doc.key);
    for (const auto& key : model.architecture_keys) EXPECT_EQ(keys.count(key), 1u) << model.model_type << "." << key;
  }
  const auto msg = error_of([] { models::model_entry("vitt"); });
  EXPECT_NE(msg.find("did you mean 'vit'"), std::string::npos) << msg;
  const std::string help = describe_config("image_classification");
  EXPECT_NE(help.find("model.patch_size (int, default 16) >= 1"), std::string::npos) << help;
  EXPECT_NE(help.find("data.random_erasing_prob (float, default 0.0) in [0, 1]"), std::string::npos) << help;
  EXPECT_EQ(models::to_hf_config(resolve_config(json{{"model", {{"preset", "vit-tiny"}}}}, "a").at("model"))
                .at("architectures")[0],
            "ViTForImageClassification");
}


// The recipes under tools/recipes are what users run first: each must resolve (known sections,
// keys, presets and task) as `zoo train --config` would read it, before any data is needed.
TEST(Config, EveryShippedRecipeResolves) {
  const auto dir = std::filesystem::path(ZOO_TESTS_DIR) / ".." / "tools" / "recipes";
  int recipes = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    ++recipes;
    const std::string path = entry.path().string();
    EXPECT_EQ(error_of([&] { resolve_config(read_json_file(path), path); }), "<no error>") << path;
  }
  EXPECT_GE(recipes, 8) << "recipes under " << dir;
}
// One rule completes a model section from what the data says (models::complete_model_section):
// each family under its own keys, sizes filled or checked (exactly, or at least for a language
// model's padded table), special ids filled or checked, padding and labels the data's.
TEST(DataFacts, CompleteAModelSectionByOneRuleUnderEachFamilysKeys) {
  DataFacts lm;
  lm.origin = "the gpt2 tokenizer";
  lm.vocab_size = 50257;
  lm.vocab_size_at_least = true;
  lm.bos_id = lm.eos_id = 50256;
  json gpt = models::complete_model_section(json{{"model_type", "gpt2"}}, lm);
  EXPECT_EQ(gpt["vocab_size"], 50257);
  EXPECT_EQ(gpt["eos_token_id"], 50256);
  EXPECT_EQ(gpt["bos_token_id"], 50256);
  EXPECT_FALSE(gpt.contains("labels"));
  gpt = models::complete_model_section(json{{"model_type", "gpt2"}, {"vocab_size", 50304}}, lm);
  EXPECT_EQ(gpt["vocab_size"], 50304) << "a padded table keeps its rows";
  std::string msg = error_of([&] { models::complete_model_section(json{{"model_type", "gpt2"}, {"vocab_size", 100}}, lm); });
  EXPECT_EQ(msg, "the gpt2 tokenizer has 50257 ids, more than the model's rows, but model.vocab_size is 100; "
                 "remove model.vocab_size (it is filled in from the data)");
  msg = error_of([&] { models::complete_model_section(json{{"model_type", "gpt2"}, {"eos_token_id", 0}}, lm); });
  EXPECT_NE(msg.find("has the end id 50256 but model.eos_token_id is 0"), std::string::npos) << msg;

  DataFacts cls;
  cls.origin = "run/vocab.txt";
  cls.mismatch_hint = "this vocabulary does not belong to this checkpoint";
  cls.vocab_size = 30;
  cls.pad_id = 1;
  cls.labels = {"neg", "neu", "pos"};
  json bert = models::complete_model_section(json{{"model_type", "bert"}, {"pad_token_id", 0}}, cls);
  EXPECT_EQ(bert["vocab_size"], 30);
  EXPECT_EQ(bert["pad_token_id"], 1) << "the vocabulary's [PAD]";
  EXPECT_EQ(bert["num_labels"], 3);
  EXPECT_EQ(bert["labels"], (json{"neg", "neu", "pos"}));
  msg = error_of([&] { models::complete_model_section(json{{"model_type", "bert"}, {"vocab_size", 31}}, cls); });
  EXPECT_EQ(msg, "run/vocab.txt has 30 entries but model.vocab_size is 31; this vocabulary does not belong to this checkpoint");

  DataFacts pairs;
  pairs.origin = "the vocabulary built from cmn.txt";
  pairs.source_vocab_size = 40;
  pairs.target_vocab_size = 50;
  pairs.bos_id = 1;
  pairs.eos_id = 2;
  pairs.pad_id = 0;
  json tf = models::complete_model_section(json{{"model_type", "transformer"}, {"target_vocab_size", 0}}, pairs);
  EXPECT_EQ(tf["source_vocab_size"], 40);
  EXPECT_EQ(tf["target_vocab_size"], 50);
  EXPECT_EQ(tf["bos_id"], 1);
  EXPECT_EQ(tf["pad_id"], 0);
  msg = error_of([&] { models::complete_model_section(json{{"model_type", "seq2seq"}, {"target_vocab_size", 9}}, pairs); });
  EXPECT_EQ(msg.rfind("the vocabulary built from cmn.txt has 50 entries but model.target_vocab_size is 9", 0), 0u) << msg;
  // A fact the family has no key for is not written (ViT takes labels only).
  json vit = models::complete_model_section(json{{"model_type", "vit"}}, pairs);
  EXPECT_FALSE(vit.contains("source_vocab_size"));
  EXPECT_FALSE(vit.contains("pad_id"));
}

}  // namespace
}  // namespace zoo
