#pragma once
// Which process of a data-parallel run this is, read from the environment that the usual
// launchers set: torchrun / tools/launch.sh (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR,
// MASTER_PORT), Slurm's srun (SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID, the first host of
// SLURM_JOB_NODELIST) and Open MPI's mpirun (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK).
// Nothing here opens a socket: train/distributed.h connects the processes.
#include <functional>
#include <optional>
#include <string>

namespace zoo {

struct LaunchEnv {
  int rank = 0;
  int world_size = 1;
  int local_rank = 0;  // the process's index on its machine: picks cuda:LOCAL_RANK
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string launcher;  // "torchrun", "slurm" or "mpirun": where the numbers came from
  /// torchrun's agent already serves the store at MASTER_ADDR:MASTER_PORT
  /// (TORCHELASTIC_USE_AGENT_STORE=True): every process connects as a client.
  bool agent_store = false;
  /// torchrun's restart count (TORCHELASTIC_RESTART_COUNT): keys of a restart must not
  /// meet the keys of the attempt before it in the agent's store.
  int restart = 0;
};

/// Reads the environment through `getenv` (std::getenv by default). Returns nothing for a
/// single process (no launcher variables, or a world of one unless `keep_world_of_one`: a
/// one-process group, to check a backend). Throws zoo::Error naming the
/// variable when a value is malformed or inconsistent (RANK >= WORLD_SIZE, a port out of
/// range, a rank without WORLD_SIZE).
using GetEnv = std::function<const char*(const char*)>;
std::optional<LaunchEnv> detect_launch(const GetEnv& getenv = {}, bool keep_world_of_one = false);

/// The first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03".
std::string first_slurm_host(const std::string& nodelist);

}  // namespace zoo
