#pragma once
// Mixed precision (train.precision): which devices can run bf16 autocast, and the guard that
// turns it on for a forward pass.
#include <string>

#include <torch/torch.h>

namespace zoo {

/// bf16 (or `dtype`, fp16 on CUDA) autocast for the forward pass while alive (when `enabled`):
/// on CUDA with LibTorch >= 2, on CPUs with native bf16 (cpu_bf16_support() in
/// train/device.h); check_precision() says which. Autocast is thread-local: every thread that
/// runs a forward pass (the per-core slices) needs its own guard.
class AutocastGuard {
 public:
  AutocastGuard(bool enabled, const torch::Device& device, torch::ScalarType dtype = torch::kBFloat16);
  ~AutocastGuard();
  AutocastGuard(const AutocastGuard&) = delete;
  AutocastGuard& operator=(const AutocastGuard&) = delete;

 private:
  void set(bool on) const;
  bool enabled_, cpu_;
  torch::ScalarType dtype_;
};

/// The CPU's matrix-product speed in fp32 and bf16 (GFLOP/s of a 1024^3 product, the best of
/// four, on the intra-op threads), measured once per process where the CPU has native bf16.
/// Native bf16 is not always the faster: on a Xeon with AVX512-BF16 but no AMX, oneDNN's
/// bf16 product ran at half of OpenBLAS's fp32 (docs/results.md).
struct CpuMatmulProbe {
  double fp32_gflops = 0, bf16_gflops = 0;
  /// Whether bf16 autocast pays here: its products at least 1.25x fp32's, as they must be to
  /// cover autocast's casts of the weights and activations.
  bool bf16_faster() const { return bf16_gflops >= 1.25 * fp32_gflops; }
};
/// Measured on the first call (0.3-0.4 s on the Xeon VM, oneDNN's start-up included); zeros on a CPU
/// without native bf16.
const CpuMatmulProbe& cpu_matmul_probe();

/// The autocast dtype of a resolved train.precision: fp16 for "fp16", else bf16 (whether to
/// autocast at all: precision != "fp32").
torch::ScalarType autocast_dtype(const std::string& precision);

/// Throws zoo::Error unless `precision` ("fp32" | "bf16" | "fp16") can run on `device`.
/// fp16 (with loss scaling, train/grad_scaler.h) runs on CUDA only.
void check_precision(const std::string& precision, const torch::Device& device);
/// "fp32", "bf16" or "fp16" for train.precision on `device`: "auto" is bf16 where check_precision
/// accepts it (on the CPU: and where cpu_matmul_probe() finds bf16 faster), else fp32; the
/// others are checked (zoo::Error when they cannot run).
std::string resolve_precision(const std::string& precision, const torch::Device& device);
/// Why "auto" resolved as it did on `device`, for the log: the probe's figures on a CPU that
/// measured them ("bf16 matrix products 173 GFLOP/s against fp32's 310 here"), else "".
std::string auto_precision_note(const torch::Device& device);
class Collective;
/// In a data-parallel run, rank 0's `resolved` precision, for every process (`resolved` is read
/// on rank 0 only): "auto" would probe each process's CPU apart, and where bf16 and fp32 are
/// close the processes could choose differently. One collective call (all processes make
/// it); throws zoo::Error where this process cannot run rank 0's choice.
std::string agree_on_precision(const std::string& resolved, Collective& collective, const torch::Device& device);
/// The precision to evaluate a checkpoint trained in `trained` (its train.precision) on
/// `device`: as trained, except that bf16 falls back to fp32 where bf16 cannot run (a
/// checkpoint trained on a bf16 machine stays readable everywhere).
std::string evaluation_precision(const std::string& trained, const torch::Device& device);

}  // namespace zoo
