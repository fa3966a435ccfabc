#include "train/launch_env.h"

#include <cstdlib>

#include "core/error.h"

namespace zoo {

namespace {

int parse_int(const GetEnv& env, const char* name, int lo, int hi) {
  const char* v = env(name);
  const std::string s = v ? v : "";
  size_t used = 0;
  long value = 0;
  try {
    value = std::stol(s, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (s.empty() || used != s.size() || value < lo || value > hi)
    throw Error(cat("environment: ", name, "='", s, "' is not a whole number in [", lo, ", ", hi, "]"));
  return static_cast<int>(value);
}

bool has(const GetEnv& env, const char* name) {
  const char* v = env(name);
  return v && *v;
}

std::string value_or(const GetEnv& env, const char* name, const std::string& fallback) {
  return has(env, name) ? std::string(env(name)) : fallback;
}

constexpr int kMaxWorld = 1 << 20;

}  // namespace

std::string first_slurm_host(const std::string& nodelist) {
  const auto comma = nodelist.find(',');
  const auto bracket = nodelist.find('[');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket))
    return nodelist.substr(0, comma);
  // prefix[03-05,9]...: the prefix and the first number of the range, zero padding kept.
  const auto end = nodelist.find_first_of("-,]", bracket + 1);
  if (end == std::string::npos) throw Error(cat("environment: SLURM_JOB_NODELIST='", nodelist, "' is malformed"));
  return nodelist.substr(0, bracket) + nodelist.substr(bracket + 1, end - bracket - 1);
}

std::optional<LaunchEnv> detect_launch(const GetEnv& getenv_fn, bool keep_world_of_one) {
  const GetEnv env = getenv_fn ? getenv_fn : GetEnv([](const char* n) { return std::getenv(n); });
  LaunchEnv e;
  if (has(env, "RANK") || has(env, "WORLD_SIZE")) {
    if (!has(env, "RANK") || !has(env, "WORLD_SIZE"))
      throw Error(cat("environment: ", has(env, "RANK") ? "RANK" : "WORLD_SIZE", " is set but ",
                      has(env, "RANK") ? "WORLD_SIZE" : "RANK",
                      " is not; a distributed launch sets both (torchrun, tools/launch.sh)"));
    e.launcher = "torchrun";
    e.world_size = parse_int(env, "WORLD_SIZE", 1, kMaxWorld);
    e.rank = parse_int(env, "RANK", 0, e.world_size - 1);
    e.local_rank = has(env, "LOCAL_RANK") ? parse_int(env, "LOCAL_RANK", 0, e.world_size - 1) : e.rank;
    e.agent_store = value_or(env, "TORCHELASTIC_USE_AGENT_STORE", "") == "True";
    if (has(env, "TORCHELASTIC_RESTART_COUNT")) e.restart = parse_int(env, "TORCHELASTIC_RESTART_COUNT", 0, 1 << 30);
  } else if (has(env, "SLURM_PROCID") && has(env, "SLURM_NTASKS")) {
    e.launcher = "slurm";
    e.world_size = parse_int(env, "SLURM_NTASKS", 1, kMaxWorld);
    e.rank = parse_int(env, "SLURM_PROCID", 0, e.world_size - 1);
    e.local_rank = has(env, "SLURM_LOCALID") ? parse_int(env, "SLURM_LOCALID", 0, e.world_size - 1) : 0;
    if (!has(env, "MASTER_ADDR") && has(env, "SLURM_JOB_NODELIST"))
      e.master_addr = first_slurm_host(env("SLURM_JOB_NODELIST"));
  } else if (has(env, "OMPI_COMM_WORLD_RANK") && has(env, "OMPI_COMM_WORLD_SIZE")) {
    e.launcher = "mpirun";
    e.world_size = parse_int(env, "OMPI_COMM_WORLD_SIZE", 1, kMaxWorld);
    e.rank = parse_int(env, "OMPI_COMM_WORLD_RANK", 0, e.world_size - 1);
    e.local_rank =
        has(env, "OMPI_COMM_WORLD_LOCAL_RANK") ? parse_int(env, "OMPI_COMM_WORLD_LOCAL_RANK", 0, e.world_size - 1) : 0;
  } else {
    return std::nullopt;
  }
  if (e.world_size == 1 && !keep_world_of_one) return std::nullopt;
  e.master_addr = value_or(env, "MASTER_ADDR", e.master_addr);
  if (has(env, "MASTER_PORT")) e.master_port = parse_int(env, "MASTER_PORT", 1, 65535);
  return e;
}

}  // namespace zoo
