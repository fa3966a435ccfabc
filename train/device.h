#pragma once
// Device choice: parsed and checked once (by the CLI), then passed down explicitly.
// There are no global device variables anywhere in zoo.
#include <string>

#include <torch/types.h>

namespace zoo {

/// Parses "auto" | "cpu" | "cuda" | "cuda:N" | "mps" and checks that this machine and
/// this LibTorch build can provide it; "auto" picks CUDA, else MPS, else CPU.
/// Throws zoo::Error with the reason (e.g. "this LibTorch was built without CUDA").
torch::Device resolve_device(const std::string& spec);

/// Human-readable report for `zoo devices`.
std::string describe_devices();

/// True when this LibTorch has MPS support compiled in and an MPS device is usable.
bool mps_available();

}  // namespace zoo
