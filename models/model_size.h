#pragma once
// The size of a model from its config section alone, before anything is built: the
// parameter count and the shape that sets its activation memory. The memory budget
// (train/memory_budget.h) refuses a run that cannot fit from these figures.
#include <cstdint>
#include <string>

#include "core/options.h"

namespace zoo::models {

struct ModelSize {
  int64_t parameters = 0;  // trainable tensors' elements, as the built model holds them (within a few %)
  int64_t layers = 0;      // blocks that keep activations for every token (encoder and decoder)
  int64_t width = 0;       // width of the token vectors
  int64_t heads = 0;       // attention heads (0: no attention matrix per layer)
  int64_t outputs = 0;     // predictions per token (vocabulary) for token-level heads; 0 otherwise
  int64_t image_tokens = 0;  // tokens of one image (ViT); 0 for text models
  std::string keys;        // the section's fields that set the size: "n_layer=12, n_embd=768, ..."
};

/// The size of the model a (merged or resolved) model section builds; vocabulary sizes of 0
/// ("from the data") count as 0. Throws zoo::Error for an unknown model_type.
ModelSize model_size(const json& section);

}  // namespace zoo::models
