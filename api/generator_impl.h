#pragma once
// zoo::Generator's insides, shared by api/generator.cc (whole prompts) and
// api/generation_batch.cc (continuous batching).
#include <string>
#include <vector>

#include "models/generation.h"
#include "models/sampling.h"
#include "predict/text_generator.h"
#include "zoo/zoo.h"

namespace zoo::api {

/// Throws zoo::Error naming the first option out of its range.
void check_options(const GenerationOptions& o);
/// The sampling settings of `o` (greedy: the best token after the same processors).
models::SamplingOptions sampling_of(const GenerationOptions& o);

}  // namespace zoo::api

namespace zoo {

struct Generator::Impl {
  std::unique_ptr<TextGenerator> model;
  torch::Device device{torch::kCPU};  // where the model is

  /// The prompt's ids, at most the context: a longer prompt keeps its end, and `warning` (when
  /// given) receives the warning, else it goes to stderr.
  std::vector<int64_t> prompt_ids(const std::string& text, size_t index, std::string* warning = nullptr) const;
  models::GenerationOptions search_options(const GenerationOptions& o, int64_t first) const;
  /// One batch of prompts (their indices `which` into `ids`), decoded together.
  void decode(const std::vector<std::vector<int64_t>>& ids, const std::vector<size_t>& which,
              const GenerationOptions& o, const GenerationCallback& on_text, std::vector<Generation>& out) const;
};

}  // namespace zoo
