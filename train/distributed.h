#pragma once
// Data-parallel processes on PyTorch's c10d: a TCPStore rendezvous at MASTER_ADDR:MASTER_PORT
// (rank 0 serves it), ProcessGroupGloo on CPU, ProcessGroupNCCL on CUDA, and gradients
// averaged by all-reduce in buckets launched from autograd hooks as backward produces them
// (as PyTorch's DistributedDataParallel does). Whether this build has c10d depends on the
// LibTorch it was built against (CMake says so); without it a distributed launch is refused
// with the reason.
#include <memory>
#include <string>

#include <torch/torch.h>

#include "train/collective.h"
#include "train/launch_env.h"

namespace zoo {

struct DistributedOptions {
  std::string backend = "auto";  // auto (nccl on CUDA, gloo on CPU) | gloo | nccl
  double timeout_s = 1800;       // rendezvous and every collective; then every rank stops
  double bucket_cap_mb = 25;     // gradient bucket size
};

/// The backends this build can use ("gloo", "nccl"), empty without c10d.
std::vector<std::string> distributed_backends();

/// Connects this process to the others of `env` (blocks until all have joined, at most the
/// timeout). Throws zoo::Error naming the rank and the fix when the address cannot be
/// resolved, the rendezvous times out or the backend is unavailable.
std::unique_ptr<Collective> connect_processes(const LaunchEnv& env, const torch::Device& device,
                                              const DistributedOptions& options);

}  // namespace zoo
