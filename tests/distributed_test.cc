// Data-parallel training (train/launch_env.h, train/distributed.h, tools/launch.sh): the
// launchers' environments, the per-rank shards, two processes on 127.0.0.1 against one
// process with the same global batch, exact resume, and the failures that must not hang (a
// rank killed, a wrong MASTER_ADDR, no rank 0).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <regex>

#include <gtest/gtest.h>

#include "distributed_util.h"
#include "test_util.h"
#include "train/batch_stream.h"
#include "io/config.h"
#include "train/distributed.h"
#include "train/launch_env.h"

namespace zoo {
namespace {

namespace fs = std::filesystem;

GetEnv env_of(std::map<std::string, std::string> vars) {
  auto held = std::make_shared<std::map<std::string, std::string>>(std::move(vars));
  return [held](const char* name) -> const char* {
    auto it = held->find(name);
    return it == held->end() ? nullptr : it->second.c_str();
  };
}

TEST(LaunchEnv, ReadsTorchrunSlurmAndMpirunVariables) {
  EXPECT_FALSE(detect_launch(env_of({})).has_value());
  EXPECT_FALSE(detect_launch(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}})).has_value());  // one process
  auto one = detect_launch(env_of({{"RANK", "0"}, {"WORLD_SIZE", "1"}}), /*keep_world_of_one=*/true);
  ASSERT_TRUE(one.has_value());  // train.ddp_backend named: a group of one
  EXPECT_EQ(one->world_size, 1);

  auto t = detect_launch(env_of({{"RANK", "3"}, {"WORLD_SIZE", "4"}, {"LOCAL_RANK", "1"},
                                 {"MASTER_ADDR", "10.0.0.7"}, {"MASTER_PORT", "1234"}}));
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->launcher, "torchrun");
  EXPECT_EQ(t->rank, 3);
  EXPECT_EQ(t->world_size, 4);
  EXPECT_EQ(t->local_rank, 1);
  EXPECT_EQ(t->master_addr, "10.0.0.7");
  EXPECT_EQ(t->master_port, 1234);
  EXPECT_FALSE(t->agent_store);
  auto agent = detect_launch(env_of({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"TORCHELASTIC_USE_AGENT_STORE", "True"},
                                     {"TORCHELASTIC_RESTART_COUNT", "2"}}));
  ASSERT_TRUE(agent.has_value());
  EXPECT_TRUE(agent->agent_store);  // torchrun's agent serves the store: rank 0 connects as a client
  EXPECT_EQ(agent->restart, 2);

  auto s = detect_launch(env_of({{"SLURM_PROCID", "5"}, {"SLURM_NTASKS", "8"}, {"SLURM_LOCALID", "1"},
                                 {"SLURM_JOB_NODELIST", "gpu[07-10,12],cpu1"}}));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->launcher, "slurm");
  EXPECT_EQ(s->rank, 5);
  EXPECT_EQ(s->world_size, 8);
  EXPECT_EQ(s->local_rank, 1);
  EXPECT_EQ(s->master_addr, "gpu07");
  EXPECT_EQ(s->master_port, 29500);

  auto m = detect_launch(env_of({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_SIZE", "2"},
                                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}, {"MASTER_ADDR", "head"}}));
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->launcher, "mpirun");
  EXPECT_EQ(m->rank, 1);
  EXPECT_EQ(m->master_addr, "head");
  EXPECT_EQ(first_slurm_host("node1,node2"), "node1");
  EXPECT_EQ(first_slurm_host("n[3]"), "n3");
}

TEST(LaunchEnv, MalformedVariablesAreErrorsNamingThem) {
  auto message = [](std::map<std::string, std::string> vars) {
    try {
      detect_launch(env_of(std::move(vars)));
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message({{"RANK", "2"}, {"WORLD_SIZE", "2"}}).find("RANK='2'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "x"}, {"WORLD_SIZE", "2"}}).find("RANK='x'"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}}).find("WORLD_SIZE is not"), std::string::npos);
  EXPECT_NE(message({{"RANK", "0"}, {"WORLD_SIZE", "2"}, {"MASTER_PORT", "70000"}}).find("MASTER_PORT"),
            std::string::npos);
}

TEST(Shards, EveryRankGetsAnEqualContiguousPartPaddedFromTheStart) {
  const std::vector<int64_t> batch{10, 11, 12, 13, 14, 15};
  EXPECT_EQ(shard_of(batch, 0, 2), (std::vector<int64_t>{10, 11, 12}));
  EXPECT_EQ(shard_of(batch, 1, 2), (std::vector<int64_t>{13, 14, 15}));
  EXPECT_EQ(shard_of(batch, 0, 1), batch);
  const std::vector<int64_t> odd{1, 2, 3, 4, 5};
  EXPECT_EQ(shard_of(odd, 1, 2), (std::vector<int64_t>{4, 5, 1}));
  EXPECT_EQ(shard_of(odd, 3, 4), (std::vector<int64_t>{2, 3}));  // positions 6, 7 of the padded batch
}


// A port per test and process, so that parallel ctest runs do not collide.
int port(int offset) { return test::port(20000, offset); }

std::string corpus() {
  std::string text;
  const char* lines[] = {"the cat sat on the mat.\n", "a dog ran in the park!\n", "we sing, you dance.\n"};
  for (int i = 0; i < 200; ++i) text += lines[i % 3];
  return text;
}

// A tiny GPT on a small text; every step logged; a constant learning rate (so that a run cut
// in two and resumed is the same run).
std::string config(const test::TempDir& dir, int64_t batch, int64_t accumulation, int64_t steps,
                   double timeout = 60) {
  test::write_file(dir / "text.txt", corpus());
  json c = {{"task", "language_modeling"},
            {"model", {{"preset", "gpt-nano-char"}, {"n_positions", 16}, {"n_layer", 1}, {"n_embd", 16}}},
            {"data", {{"files", {dir / "text.txt"}}, {"tokenizer", "char"}, {"max_eval_windows", 20}}},
            {"train",
             {{"max_steps", steps}, {"per_device_train_batch_size", batch},
              {"gradient_accumulation_steps", accumulation}, {"learning_rate", 3e-3},
              {"lr_scheduler_type", "constant"}, {"logging_steps", 1}, {"save_steps", 3},
              {"save_total_limit", 0}, {"report_to_tensorboard", false}, {"ddp_timeout", timeout}}}};
  const std::string path = dir / ("config_" + std::to_string(batch) + "_" + std::to_string(accumulation) + ".json");
  write_json_file(path, c);
  return path;
}

std::vector<double> losses(const std::string& metrics_jsonl) {
  std::vector<double> out;
  std::istringstream in(test::read_file(metrics_jsonl));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j.value("type", "") == "train") out.push_back(j.at("loss"));
  }
  return out;
}

// The last evaluation's metrics in a metrics.jsonl.
json last_eval(const std::string& metrics_jsonl) {
  json found;
  std::istringstream in(test::read_file(metrics_jsonl));
  for (std::string line; std::getline(in, line);) {
    const json j = json::parse(line);
    if (j.value("type", "") == "eval") found = j;
  }
  return found;
}

std::string launch(int nproc, int port_offset, const std::string& args) {
  return "OMP_NUM_THREADS=1 " + std::string(ZOO_TESTS_DIR) + "/../tools/launch.sh --nproc " + std::to_string(nproc) +
         " --master-port " + std::to_string(port(port_offset)) + " -- " + ZOO_BINARY + " " + args;
}

TEST(DataParallel, TwoProcessesTrainAsOneWithTheSameGlobalBatch) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";  // reported, not passed
  test::TempDir dir;
  for (const auto& [per_rank, accumulation] : std::vector<std::pair<int64_t, int64_t>>{{4, 1}, {2, 2}}) {
    SCOPED_TRACE(cat("per-rank batch ", per_rank, ", accumulation ", accumulation));
    const std::string tag = std::to_string(per_rank);
    auto one = test::run("OMP_NUM_THREADS=1 " + std::string(ZOO_BINARY) + " train --device cpu --config " +
                         config(dir, 2 * per_rank, accumulation, 6) + " --output-dir " + dir / ("one" + tag));
    ASSERT_EQ(one.exit_code, 0) << one.output;
    // Small buckets: several all-reduces per step, started from the gradient hooks.
    auto two = test::run(launch(2, 0, "train --device cpu --config " + config(dir, per_rank, accumulation, 6) +
                                          " --set train.ddp_bucket_cap_mb=0.002 --output-dir " + dir / ("two" + tag)));
    ASSERT_EQ(two.exit_code, 0) << two.output;
    EXPECT_NE(two.output.find("x2 processes (gloo)"), std::string::npos) << two.output;
    EXPECT_NE(two.output.find("identical on all 2 processes"), std::string::npos) << two.output;
    // Every bucket of every step but the last of each is launched during backward.
    std::smatch m;
    ASSERT_TRUE(std::regex_search(two.output, m, std::regex(R"((\d+) gradient bucket\(s\).* (\d+) of (\d+) bucket)")))
        << two.output;
    EXPECT_GT(std::stoi(m[1]), 3);
    EXPECT_EQ(std::stoi(m[3]), 6 * std::stoi(m[1]));
    EXPECT_GE(std::stoi(m[2]), 6 * (std::stoi(m[1]) - 1));
    const auto a = losses(dir / ("one" + tag + "/metrics.jsonl")), b = losses(dir / ("two" + tag + "/metrics.jsonl"));
    ASSERT_EQ(a.size(), 6u);
    ASSERT_EQ(b.size(), 6u);
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5) << "step " << i + 1;
    EXPECT_GT(a.front() - a.back(), 0.05);  // it trained
    // Evaluation: each process its half of the windows, the sums added up.
    const json ea = last_eval(dir / ("one" + tag + "/metrics.jsonl")), eb = last_eval(dir / ("two" + tag + "/metrics.jsonl"));
    ASSERT_FALSE(ea.is_null());
    ASSERT_FALSE(eb.is_null());
    EXPECT_EQ(ea.at("tokens"), eb.at("tokens"));
    EXPECT_NEAR(ea.at("loss").get<double>(), eb.at("loss").get<double>(), 1e-5);
  }
}

TEST(DataParallel, EveryRankResumesExactly) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";
  test::TempDir dir;
  const std::string c = config(dir, 4, 1, 6);
  auto straight = test::run(launch(2, 1, "train --device cpu --config " + c + " --output-dir " + dir / "straight"));
  ASSERT_EQ(straight.exit_code, 0) << straight.output;
  auto first = test::run(launch(2, 2, "train --device cpu --config " + c + " --set train.max_steps=3 --output-dir " +
                                          dir / "cut"));
  ASSERT_EQ(first.exit_code, 0) << first.output;
  auto second = test::run(launch(2, 3, "train --device cpu --config " + c + " --output-dir " + dir / "cut" +
                                           " --resume"));
  ASSERT_EQ(second.exit_code, 0) << second.output;
  EXPECT_EQ(test::read_file(dir / "straight/checkpoint-6/model.safetensors"),
            test::read_file(dir / "cut/checkpoint-6/model.safetensors"));
  const json st = read_json_file(dir / "cut/checkpoint-6/trainer_state.json");
  EXPECT_EQ(st.at("rng_state_per_rank").size(), 2u);
}

// train.precision=auto: every process takes rank 0's choice (one more collective call at the
// start), and the run ends with the same weights on both.
TEST(DataParallel, AutoPrecisionIsRankZerosChoiceOnEveryProcess) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";
  test::TempDir dir;
  auto r = test::run(launch(2, 6, "train --device cpu --config " + config(dir, 4, 1, 3) +
                                      " --set train.precision=auto --output-dir " + dir / "auto"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::regex_search(r.output, std::regex(R"(on cpu, (fp32|bf16) \(train\.precision=auto)"))) << r.output;
  EXPECT_NE(r.output.find("identical on all 2 processes"), std::string::npos) << r.output;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

TEST(DataParallel, KillingOneRankStopsTheOtherWithAnError) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";
  test::TempDir dir;
  const std::string c = config(dir, 4, 1, 1000000, /*timeout=*/30);
  const std::string env = "OMP_NUM_THREADS=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port(4));
  const std::string zoo = std::string(ZOO_BINARY) + " train --device cpu --config " + c + " --output-dir " + dir / "out";
  // Rank 0 in the background; rank 1 killed once training runs; rank 0's status and time.
  const std::string script = "(RANK=0 " + env + " " + zoo + " > " + dir / "r0.log" + " 2>&1; echo $? > " +
                             dir / "r0.rc" + ") & RANK=1 " + env + " " + zoo + " > " + dir / "r1.log" +
                             " 2>&1 & p1=$!; for i in $(seq 600); do [ -s " + dir / "out/metrics.jsonl" +
                             " ] && break; sleep 0.1; done; kill -9 $p1; wait";
  const auto start = std::chrono::steady_clock::now();
  auto r = test::run("bash -c '" + script + "'");
  const double took = seconds_since(start);
  const std::string log = test::read_file(dir / "r0.log");
  ASSERT_TRUE(fs::exists(dir / "out/metrics.jsonl")) << log << test::read_file(dir / "r1.log");
  EXPECT_NE(std::stoi(test::read_file(dir / "r0.rc")), 0) << log;
  EXPECT_NE(log.find("rank 0 of 2"), std::string::npos) << log;
  EXPECT_LT(took, 60 + 40) << log;  // training start + at most the timeout
}

TEST(DataParallel, AWrongMasterAddressOrNoRankZeroIsAClearErrorNotAHang) {
  if (!test::have_gloo()) GTEST_SKIP() << "this LibTorch build has no c10d Gloo";
  test::TempDir dir;
  const std::string c = config(dir, 4, 1, 3, /*timeout=*/3);
  const std::string zoo = std::string(ZOO_BINARY) + " train --device cpu --config " + c + " --output-dir " + dir / "out";
  auto start = std::chrono::steady_clock::now();
  auto bad = test::run("RANK=1 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid MASTER_PORT=29999 " + zoo);
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.output.find("MASTER_ADDR='no-such-host.invalid' does not resolve"), std::string::npos) << bad.output;
  EXPECT_LT(seconds_since(start), 20);
  start = std::chrono::steady_clock::now();
  auto alone = test::run("RANK=1 WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + std::to_string(port(5)) + " " + zoo);
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.output.find("rank 1 of 2: no rendezvous"), std::string::npos) << alone.output;
  EXPECT_LT(seconds_since(start), 30);
}

}  // namespace
}  // namespace zoo
