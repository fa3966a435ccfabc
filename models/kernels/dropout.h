#pragma once
// Dropout for every model: one pass over the tensor on the CPU, with the mask recomputed in
// the backward pass instead of stored.
#include <torch/torch.h>

namespace zoo::models {

/// Inverted dropout, as torch::dropout: while `training`, each element is zeroed with
/// probability p and the others are scaled by 1 / (1 - p); otherwise x itself. On the CPU the
/// mask is a counter-based hash (SplitMix64) of the element's index and a seed drawn from
/// LibTorch's default CPU generator, so torch::manual_seed and the saved generator state
/// reproduce it, and the backward pass recomputes it rather than keeping it. LibTorch's
/// bernoulli_ draws the mask element by element from the generator, and was an eighth of a
/// GPT training step with nanoGPT's dropout 0.2 (docs/results.md, Benchmarks). Elsewhere,
/// torch::dropout.
torch::Tensor apply_dropout(const torch::Tensor& x, double p, bool training);

/// A seed from LibTorch's default CPU generator, as apply_dropout draws one.
uint64_t draw_dropout_seed();

/// While alive, apply_dropout on this thread takes its seeds from a stream of its own (the
/// SplitMix64 sequence of `base`) instead of the shared default generator: a batch slice
/// forwarded on its own thread then gets the same masks whatever the other threads do. Give
/// each slice a base drawn in slice order (draw_dropout_seed) and the step is reproducible.
class DropoutSeedStream {
 public:
  explicit DropoutSeedStream(uint64_t base);
  ~DropoutSeedStream();
  DropoutSeedStream(const DropoutSeedStream&) = delete;
  DropoutSeedStream& operator=(const DropoutSeedStream&) = delete;

 private:
  bool had_;
  uint64_t base_, next_;
};

}  // namespace zoo::models
