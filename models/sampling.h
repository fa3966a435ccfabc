#pragma once
// Sampling decoders of document 002 ("随机采样", "top-k采样", "核采样", "惩罚重复"): temperature
// sampling, top-k, top-p (nucleus; Holtzman et al. 2019) and the repetition penalty of CTRL
// (Keskar et al. 2019), for any StepModel (models/generation.h). Draws come from a CPU
// generator seeded by the caller, so a seed gives the same text on every device.
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <torch/torch.h>

#include "core/options.h"
#include "models/generation.h"

namespace zoo::models {

/// Document 002's top_k_top_p_filtering (Hugging Face's classic function) on logits (N, V),
/// in place and returned: top-k keeps the max(top_k, min_tokens_to_keep) best (ties with the
/// k-th kept too); top-p keeps the smallest set of best tokens whose probability reaches
/// top_p (the first token above the threshold included), at least min_tokens_to_keep; the
/// rest become filter_value. top_k 0 and top_p 1 switch each off.
torch::Tensor top_k_top_p_filtering(torch::Tensor logits, int64_t top_k = 0, double top_p = 1.0,
                                    double filter_value = -std::numeric_limits<double>::infinity(),
                                    int64_t min_tokens_to_keep = 1);

/// CTRL's repetition penalty on scores (N, V) in place: for every token in `context` or in
/// the row's own `generated` tokens, a score s becomes s * penalty when s < 0, else
/// s / penalty (penalty > 1 discourages repeats). On log-probabilities (all <= 0, as the
/// searches hand them) it multiplies: the same ranking effect as on the logits' negative side.
void apply_repetition_penalty(torch::Tensor& scores, const std::vector<int64_t>& context,
                              const std::vector<std::vector<int64_t>>& generated, double penalty);

/// The repetition penalty as a Constraint, so greedy and beam search apply it too.
class RepetitionPenalty : public Constraint {
 public:
  RepetitionPenalty(double penalty, std::vector<int64_t> context) : penalty_(penalty), context_(std::move(context)) {}
  void apply(const std::vector<std::vector<int64_t>>& prefixes, torch::Tensor& log_probs) const override {
    apply_repetition_penalty(log_probs, context_, prefixes, penalty_);
  }

 private:
  double penalty_;
  std::vector<int64_t> context_;
};

struct SamplingOptions {
  bool do_sample = true;  // false: the most likely token (greedy) after the same processors
  double temperature = 1.0;
  int64_t top_k = 0;
  double top_p = 1.0;
  int64_t min_tokens_to_keep = 1;
  double repetition_penalty = 1.0;
  uint64_t seed = 0;

  template <class V>
  void fields(V& v) {
    v("do_sample", do_sample, "draw the next token; false: take the most likely");
    v("temperature", temperature, "divide the scores by T before drawing (< 1 sharper, > 1 flatter)",
      between(1e-6, 100));
    v("top_k", top_k, "draw among the K most likely tokens; 0 = all", at_least(0));
    v("top_p", top_p, "draw among the most likely tokens up to probability P (nucleus); 1 = all", between(1e-9, 1));
    v("min_tokens_to_keep", min_tokens_to_keep, "top-k/top-p keep at least this many tokens", at_least(1));
    v("repetition_penalty", repetition_penalty, "CTRL's penalty on tokens already in the text; 1 = off",
      between(1e-6, 100));
    v("seed", seed, "seed of the draws");
  }
  /// Throws zoo::Error naming the option and its range.
  void validate() const;
};

/// The next token of every row from its processed scores (N, V) (repetition penalty and
/// constraints applied): the best, or with do_sample a draw from `gen` after the temperature
/// and the top-k/top-p filter.
torch::Tensor choose_next(torch::Tensor scores, const SamplingOptions& o, at::Generator& gen);

/// Decodes every row of `state` on its own: each step the model's log-probabilities (as
/// logits: a row's shift leaves temperature, top-k and top-p unchanged) get the repetition
/// penalty (over `context` and the row's tokens), the constraint, the temperature and the
/// top-k/top-p filter, then a token is drawn (or the best taken). A row ends at eos, at
/// max_new_tokens, or when `on_token(row, token)` (called for every token as it is produced,
/// for streaming) returns false. Hypotheses hold the model's own log-probabilities.
std::vector<Hypothesis> sample_decode(StepModel& model, DecoderState state, const GenerationOptions& generation,
                                      const SamplingOptions& sampling, const std::vector<int64_t>& context = {},
                                      const Constraint* constraint = nullptr,
                                      const std::function<bool(int64_t row, int64_t token)>& on_token = {});

}  // namespace zoo::models
