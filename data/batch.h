#pragma once
// Named batches, and the plans that cut a split's examples into them. A dataset (data/) builds
// a Batch from a plan's list of example numbers; the trainer moves it to the device and hands
// it to the task's loss. Plans are deterministic in (seed, epoch), so a resumed run replays
// the same batches.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace zoo {

/// One batch: its tensors by name, all batch-first, under Hugging Face's names where it has
/// one (input_ids, attention_mask, token_type_ids, pixel_values, labels, ...).
struct Batch {
  std::map<std::string, torch::Tensor> tensors;
  int64_t size = 0;  // examples in the batch
  /// Per-batch seed (from make_train_batch) for randomness inside the loss, e.g. teacher
  /// forcing, so that it is reproducible across resume without touching global RNGs.
  uint64_t seed = 0;
  /// In evaluation, the split's example numbers of the rows (set by zoo::evaluation_sums).
  std::vector<int64_t> examples = {};
  /// The tensor `name`; a missing one is a bug in the task, and the message lists what is there.
  const torch::Tensor& operator[](const std::string& name) const {
    const auto it = tensors.find(name);
    if (it == tensors.end()) {
      std::string have;
      for (const auto& kv : tensors) have += " " + kv.first;
      throw std::logic_error("the batch has no tensor '" + name + "'; it has:" + have);
    }
    return it->second;
  }
  torch::Tensor& operator[](const std::string& name) {
    return const_cast<torch::Tensor&>(static_cast<const Batch&>(*this)[name]);
  }
  Batch to(const torch::Device& device) const {
    Batch b{{}, size, seed, examples};
    for (const auto& [name, t] : tensors) b.tensors[name] = t.to(device, /*non_blocking=*/true);
    return b;
  }
  /// Examples [start, start + length) of every tensor (all batch-first), same seed.
  Batch narrow(int64_t start, int64_t length) const {
    Batch b{{}, length, seed, {}};
    if (!examples.empty()) b.examples.assign(examples.begin() + start, examples.begin() + start + length);
    for (const auto& [name, t] : tensors) b.tensors[name] = t.narrow(0, start, length);
    return b;
  }
};

/// splitmix64 of a combination of two seeds.
uint64_t seed_mix(uint64_t a, uint64_t b);
/// The per-batch seed of batch `index` of `epoch`.
uint64_t batch_seed(uint64_t seed, int64_t epoch, int64_t index);

namespace data {

/// A seeded permutation of examples 0..n-1 cut into batches of `batch_size` (the last may be
/// short): the training plan of `epoch` unless a dataset orders its examples otherwise.
std::vector<std::vector<int64_t>> permuted_batches(int64_t n, int64_t batch_size, uint64_t seed, int64_t epoch);

/// Batches of consecutive examples 0..n-1, `batch_size` each (the last may be short): the
/// evaluation plan of a split whose examples need no ordering.
std::vector<std::vector<int64_t>> consecutive_batches(int64_t n, int64_t batch_size);

/// The seed of `epoch`'s plan for the datasets that shuffle through bucket_batches.
inline uint64_t plan_seed(uint64_t seed, int64_t epoch) { return seed * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch); }

}  // namespace data
}  // namespace zoo
