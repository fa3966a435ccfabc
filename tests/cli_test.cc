// The zoo command line as a user runs it: exit codes, one-line errors, and a tiny
// end-to-end train -> eval -> classify -> export on generated images, plus Ctrl-C.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <regex>
#include <thread>

#include <gtest/gtest.h>

#include "fixtures.h"
#include "core/threads.h"
#include "io/config.h"
#include "train/device.h"
#include "train/precision.h"

namespace fs = std::filesystem;

namespace zoo {
namespace {

using test::run_zoo;

// Every bad input: non-zero exit, one line naming the problem, no output directory work.
TEST(Cli, BadInputIsRejectedWithOneClearLine) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  const std::string good = dir / "good.json";
  test::write_file(good, test::tiny_vit_config(dir.path().string()));
  struct Case {
    std::string args, expect;
  };
  const std::string out = " --output-dir " + (dir / "out");
  std::vector<Case> cases = {
      {"train --config " + (dir / "nope.json") + out, "nope.json: no such file"},
      {"train --config " + good + " --set train.learning_rte=1" + out, "did you mean 'learning_rate'"},
      {"train --config " + good + " --set train.max_steps=-1" + out, "train.max_steps must be >= 0, got -1"},
      {"train --config " + good + " --set train.max_steps=lots" + out, "must be an integer"},
      {"train --config " + good + " --set model.model_type=bert2" + out, "unknown model_type 'bert2'"},
      {"train --config " + good + " --device tpu" + out, "unknown device 'tpu'"},
      {"train --config " + good + " --set data.path=" + (dir / "missing") + out, "missing"},
      {"train --config " + good + " --resume" + out, "no checkpoint in"},
      {"eval --checkpoint " + (dir / "nockpt"), "no such checkpoint directory"},
      {"classify --checkpoint " + (dir / "nockpt") + " " + good, "no such checkpoint directory"},
      {"export --checkpoint " + (dir / "nockpt") + " --out " + (dir / "x"), "no such checkpoint directory"},
      {"train" + out, "zoo train needs --config FILE.json"},
      {"train --help-config translaton", "unknown task 'translaton'; tasks: image_classification, translation, language_modeling, bert_pretraining, text_classification (did "
                                         "you mean 'translation'?)"},
      {"train --config " + good + " --init-from " + (dir / "nockpt") + out, "train.init_from: "},
  };
  if (!torch::cuda::is_available()) cases.push_back({"train --config " + good + " --device cuda" + out, "cuda"});
  if (cpu_bf16_support().empty())  // else bf16 trains on this CPU: Trainer.Bf16AutocastOnTheCpu
    cases.push_back({"train --config " + good + " --set train.precision=bf16 --device cpu" + out,
                     "train.precision=bf16 on the CPU needs native bfloat16"});
  test::write_file(dir / "syntax.json", "{\n \"train\": {\"max_steps\": 3,}\n}");
  cases.push_back({"train --config " + (dir / "syntax.json") + out, "syntax.json:2:"});
  for (const auto& c : cases) {
    auto r = run_zoo(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args;
    EXPECT_NE(r.output.find(c.expect), std::string::npos) << c.args << "\n" << r.output;
    EXPECT_NE(r.output.find("zoo: error: "), std::string::npos) << c.args << "\n" << r.output;
  }
  EXPECT_FALSE(fs::exists(fs::path(dir / "out") / "checkpoint-8"));
}

TEST(Cli, HelpConfigListsEveryKeyOfATaskWithItsDefault) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 64, 16);
  const std::string good = dir / "good.json";
  test::write_file(good, test::tiny_vit_config(dir.path().string()));
  auto r = run_zoo("train --help-config translation");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("data.teacher_forcing_ratio (float, default 1.0) in [0, 1]"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("model.units (int, default 1024)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train.init_from (string"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train.r_drop_alpha (float, default 0.0) in [0, 100]"), std::string::npos) << r.output;
  r = run_zoo("train --help-config --config " + good);  // the config's own task and model type
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("task: image_classification"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("data.teacher_forcing_ratio"), std::string::npos) << r.output;
  EXPECT_FALSE(fs::exists(dir / "runs"));  // nothing trained
}

TEST(Cli, DevicesListsCpuAndVersion) {
  auto r = run_zoo("devices");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("LibTorch "), std::string::npos);
  EXPECT_NE(r.output.find("cpu: available"), std::string::npos);
  const std::string bf16 = cpu_bf16_support();
  EXPECT_NE(r.output.find("cpu bf16 (train.precision=bf16): " + (bf16.empty() ? std::string("no") : bf16)),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("built with CUDA:"), std::string::npos);
  EXPECT_NE(r.output.find("mps:"), std::string::npos);
  // What auto picks, and why: zoo measures its products under its own OpenBLAS settings, which
  // this process does not share, so only the form is checked here (the choice: trainer_test).
  const std::regex auto_line(bf16.empty() ? "cpu train\\.precision=auto: fp32 \\(no native bf16\\)"
                                          : "cpu train\\.precision=auto: (fp32|bf16) \\(bf16 matrix products [0-9]+ "
                                            "GFLOP/s against fp32's [0-9]+ here\\)");
  EXPECT_TRUE(std::regex_search(r.output, auto_line)) << r.output;
}

// zoo re-executes itself with OMP_WAIT_POLICY=PASSIVE (use_startup_environment) unless the user
// chose a policy, and only then gives OpenBLAS more than one thread.
TEST(Cli, DevicesShowsThePassiveOpenMpPolicyUnlessTheUserSetsOne) {
  auto r = test::run("env -u OMP_WAIT_POLICY -u OPENBLAS_NUM_THREADS OMP_NUM_THREADS=2 " +
                     std::string(ZOO_BINARY) + " devices");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("OpenMP wait policy PASSIVE"), std::string::npos) << r.output;
  // The OpenBLAS lines appear where LibTorch uses OpenBLAS (Debian's); pip's uses MKL.
  const bool openblas = openblas_threads().get != nullptr;
  if (openblas) {
    EXPECT_NE(r.output.find("OpenBLAS 2 threads"), std::string::npos) << r.output;
  }
  auto a = test::run("env -u OPENBLAS_NUM_THREADS OMP_WAIT_POLICY=active OMP_NUM_THREADS=2 " +
                     std::string(ZOO_BINARY) + " devices");
  ASSERT_EQ(a.exit_code, 0) << a.output;
  EXPECT_NE(a.output.find("OpenMP wait policy active"), std::string::npos) << a.output;
  if (openblas) {
    EXPECT_NE(a.output.find("OpenBLAS 1 threads"), std::string::npos) << a.output;
  }
}

void write_pgm(const std::string& path, int size, int band, int classes) {
  std::ofstream out(path, std::ios::binary);
  out << "P5\n" << size << " " << size << "\n255\n";
  for (int y = 0; y < size; ++y)
    for (int x = 0; x < size; ++x) out.put(static_cast<char>(y * classes / size == band ? 210 : 40));
}

TEST(Cli, TinyEndToEndTrainEvalClassifyExport) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 320, 64);
  const std::string cfg = dir / "tiny.json";
  test::write_file(cfg, test::tiny_vit_config(dir.path().string()));
  const std::string out = dir / "run";
  auto r = run_zoo("train --config " + cfg + " --output-dir " + out +
                   " --set train.max_steps=60 --set train.logging_steps=20 --set data.random_crop_padding=0"
                   " --set data.horizontal_flip_prob=0 --set model.hidden_dropout_prob=0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(out + "/config.json"));
  EXPECT_TRUE(fs::exists(out + "/checkpoint-60/model.safetensors"));
  EXPECT_TRUE(fs::exists(out + "/checkpoint-60/optimizer.pt"));
  EXPECT_TRUE(fs::exists(out + "/checkpoint-60/trainer_state.json"));
  bool has_tb = false;
  for (auto& e : fs::directory_iterator(out)) has_tb |= e.path().filename().string().rfind("events.out.tfevents", 0) == 0;
  EXPECT_TRUE(has_tb);

  r = run_zoo("eval --checkpoint " + out + "/checkpoint-60 --split test --device cpu");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json metrics = json::parse(r.output.substr(r.output.rfind('{')));
  EXPECT_EQ(metrics["examples"], 64);
  EXPECT_GT(metrics["accuracy"].get<double>(), 0.9) << r.output;  // the bands are easy
  EXPECT_TRUE(metrics.contains("loss"));

  write_pgm(dir / "c.pgm", 8, 2, 4);
  r = run_zoo("classify --checkpoint " + out + "/checkpoint-60 " + (dir / "c.pgm"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("c.pgm\tc\t"), std::string::npos) << r.output;
  test::write_file(dir / "broken.png", "\x89PNG\r\n\x1a\n garbage");
  r = run_zoo("classify --checkpoint " + out + "/checkpoint-60 " + (dir / "broken.png"));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("broken.png"), std::string::npos) << r.output;

  r = run_zoo("export --checkpoint " + out + "/checkpoint-60 --out " + (dir / "export"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json hf = read_json_file(dir / "export/config.json");
  EXPECT_EQ(hf["model_type"], "vit");
  EXPECT_EQ(hf["architectures"][0], "ViTForImageClassification");
  EXPECT_EQ(hf["id2label"]["2"], "c");
  // The export evaluates like the checkpoint it came from (same weights, normalisation).
  r = run_zoo("eval --checkpoint " + (dir / "export") + " --split test --set data.path=" + dir.path().string() +
              " --set data.dataset=mnist");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_DOUBLE_EQ(json::parse(r.output.substr(r.output.rfind('{')))["accuracy"].get<double>(),
                   metrics["accuracy"].get<double>());
  // Training again into the same directory without --resume is refused.
  r = run_zoo("train --config " + cfg + " --output-dir " + out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.output.find("--resume"), std::string::npos) << r.output;
}

// SIGINT: finish the step, write a checkpoint, print a resume hint and exit 130 (as a shell
// reports a process Ctrl-C ended, so `zoo train && zoo eval` stops); --resume finishes.
TEST(Cli, InterruptWritesACheckpointAndResumes) {
  test::TempDir dir;
  test::write_tiny_mnist(dir.path().string(), 320, 64);
  const std::string cfg = dir / "tiny.json";
  test::write_file(cfg, test::tiny_vit_config(dir.path().string()));
  const std::string out = dir / "run";
  const std::string log = dir / "log.txt";
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (!freopen(log.c_str(), "w", stderr)) _exit(126);
    execl(ZOO_BINARY, ZOO_BINARY, "train", "--config", cfg.c_str(), "--output-dir", out.c_str(), "--set",
          "train.max_steps=100000", "--set", "train.save_steps=0", "--set", "train.weight_decay_exclude=[]",
          (char*)nullptr);
    _exit(127);
  }
  // Wait for training to be under way (a few logged steps), then interrupt.
  for (int i = 0; i < 600 && test::read_file(out + "/metrics.jsonl").size() < 300; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  kill(pid, SIGINT);
  int status = 0;
  waitpid(pid, &status, 0);
  const std::string text = test::read_file(log);
  ASSERT_TRUE(WIFEXITED(status)) << text;
  EXPECT_EQ(WEXITSTATUS(status), 130) << text;
  EXPECT_NE(text.find("interrupted at step"), std::string::npos) << text;
  // The hint repeats the overrides (quoted for the shell where needed), so that a resume
  // following it keeps the run's settings.
  EXPECT_NE(text.find("Resume with: zoo train --config " + cfg +
                      " --set train.max_steps=100000 --set train.save_steps=0 --set 'train.weight_decay_exclude=[]'"
                      " --output-dir " + out + " --resume"),
            std::string::npos)
      << text;
  int64_t step = 0;
  for (auto& e : fs::directory_iterator(out)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("checkpoint-", 0) == 0) step = std::stoll(name.substr(11));
  }
  ASSERT_GT(step, 0) << text;
  EXPECT_LT(step, 100000);
  auto r = run_zoo("train --config " + cfg + " --output-dir " + out + " --resume --set train.max_steps=" +
                   std::to_string(step + 3) + " --set train.save_steps=0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("resuming from"), std::string::npos) << r.output;
  EXPECT_TRUE(fs::exists(out + "/checkpoint-" + std::to_string(step + 3)));
}

// OpenBLAS 0.3.21 (Debian 12) detects some newer CPUs as decades-old cores ("Prescott" on a
// Sapphire Rapids VM, 4.5x slower matrix products): zoo then forces a core the CPU has, and
// leaves a user's own OPENBLAS_CORETYPE alone.
TEST(Cli, OpenBlasRunsKernelsThisCpuSupports) {
  if (openblas_core().empty()) GTEST_SKIP() << "LibTorch's BLAS is not OpenBLAS here";
  auto r = test::run("env -u OPENBLAS_CORETYPE " + std::string(ZOO_BINARY) + " devices");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("OpenBLAS core ([A-Za-z0-9]+)"))) << r.output;
  std::string core = m[1];
  for (auto& c : core) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
#if defined(__x86_64__)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    const std::vector<std::string> good{"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids"};
    EXPECT_NE(std::find(good.begin(), good.end(), core), good.end()) << r.output;
  }
#endif
  auto own = test::run("OPENBLAS_CORETYPE=Haswell " + std::string(ZOO_BINARY) + " devices");
  EXPECT_NE(own.output.find("OpenBLAS core Haswell (OPENBLAS_CORETYPE=Haswell"), std::string::npos) << own.output;
  // On an AVX-512 CPU a user's AVX2 core is named as such, with the way back to OpenBLAS's own.
  EXPECT_EQ(own.output.find("without OPENBLAS_CORETYPE, OpenBLAS picks its own") != std::string::npos,
            weaker_openblas_core("Haswell"))
      << own.output;
  EXPECT_FALSE(weaker_openblas_core("SkylakeX"));
  EXPECT_FALSE(weaker_openblas_core("Cooperlake"));
}

}  // namespace
}  // namespace zoo
