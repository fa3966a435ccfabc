#pragma once
// Mixed precision (train.precision): which devices can run bf16 autocast, and the guard that
// turns it on for a forward pass.
#include <string>

#include <torch/torch.h>

namespace zoo {

/// bf16 autocast for the forward pass while alive (when `enabled`): on CUDA with LibTorch >= 2,
/// on CPUs with native bf16 (cpu_bf16_support() in train/device.h); check_precision() says
/// which. Autocast is thread-local: every thread that runs a forward pass (the per-core
/// slices) needs its own guard.
class AutocastGuard {
 public:
  AutocastGuard(bool enabled, const torch::Device& device);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  void set(bool on) const;
  bool enabled_, cpu_;
};

/// Throws zoo::Error unless `precision` ("fp32" | "bf16") can run on `device`.
void check_precision(const std::string& precision, const torch::Device& device);
/// "fp32" or "bf16" for train.precision on `device`: "auto" is bf16 where check_precision
/// accepts it, else fp32; the others are checked (zoo::Error when they cannot run).
std::string resolve_precision(const std::string& precision, const torch::Device& device);
/// The precision to evaluate a checkpoint trained in `trained` (its train.precision) on
/// `device`: as trained, except that bf16 falls back to fp32 where bf16 cannot run (a
/// checkpoint trained on a bf16 machine stays readable everywhere).
std::string evaluation_precision(const std::string& trained, const torch::Device& device);

}  // namespace zoo
