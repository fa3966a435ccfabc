#include "models/sampling.h"

#include <set>

namespace zoo::models {

torch::Tensor top_k_top_p_filtering(torch::Tensor logits, int64_t top_k, double top_p, double filter_value,
                                    int64_t min_tokens_to_keep) {
  if (top_k > 0) {
    const int64_t k = std::min(std::max(top_k, min_tokens_to_keep), logits.size(-1));
    auto kth = std::get<0>(torch::topk(logits, k)).select(-1, k - 1).unsqueeze(-1);
    logits.masked_fill_(logits < kth, filter_value);
  }
  if (top_p < 1.0) {
    auto [sorted, order] = torch::sort(logits, /*dim=*/-1, /*descending=*/true);
    auto cumulative = torch::softmax(sorted, -1).cumsum(-1);
    auto remove = cumulative > top_p;
    if (min_tokens_to_keep > 1) remove.narrow(-1, 0, std::min(min_tokens_to_keep, remove.size(-1))).fill_(false);
    // Shift right: the first token above the threshold stays.
    remove = torch::cat({torch::zeros_like(remove.narrow(-1, 0, 1)), remove.narrow(-1, 0, remove.size(-1) - 1)}, -1);
    logits.masked_fill_(remove.scatter(-1, order, remove), filter_value);
  }
  return logits;
}

void apply_repetition_penalty(torch::Tensor& scores, const std::vector<int64_t>& context,
                              const std::vector<std::vector<int64_t>>& generated, double penalty) {
  if (penalty == 1.0) return;
  for (int64_t r = 0; r < scores.size(0); ++r) {
    std::set<int64_t> seen(context.begin(), context.end());
    if (r < static_cast<int64_t>(generated.size())) seen.insert(generated[r].begin(), generated[r].end());
    seen.erase(seen.lower_bound(scores.size(1)), seen.end());
    if (seen.empty()) continue;
    auto idx = torch::tensor(std::vector<int64_t>(seen.begin(), seen.end()), torch::kLong).to(scores.device());
    auto row = scores[r];
    auto s = row.index_select(0, idx);
    row.index_copy_(0, idx, torch::where(s < 0, s * penalty, s / penalty));
  }
}

void SamplingOptions::validate() const {
  if (!(temperature > 0)) throw Error(cat("sampling: temperature must be > 0, got ", temperature));
  if (!(top_p > 0 && top_p <= 1)) throw Error(cat("sampling: top_p must be in (0, 1], got ", top_p));
  if (top_k < 0) throw Error(cat("sampling: top_k must be >= 0 (0 = off), got ", top_k));
  if (min_tokens_to_keep < 1) throw Error(cat("sampling: min_tokens_to_keep must be >= 1, got ", min_tokens_to_keep));
  if (!(repetition_penalty > 0))
    throw Error(cat("sampling: repetition_penalty must be > 0 (1 = off), got ", repetition_penalty));
}

torch::Tensor choose_next(torch::Tensor scores, const SamplingOptions& o, at::Generator& gen) {
  if (!o.do_sample) return scores.argmax(-1);
  scores = top_k_top_p_filtering(scores / o.temperature, o.top_k, o.top_p,
                                 -std::numeric_limits<double>::infinity(), o.min_tokens_to_keep);
  auto probs = torch::softmax(scores.to(torch::kCPU, torch::kDouble), -1);
  return torch::multinomial(probs, 1, /*replacement=*/false, gen).squeeze(1).to(scores.device());
}

std::vector<Hypothesis> sample_decode(StepModel& model, DecoderState state, const GenerationOptions& g,
                                      const SamplingOptions& o, const std::vector<int64_t>& context,
                                      const Constraint* constraint,
                                      const std::function<bool(int64_t, int64_t)>& on_token) {
  o.validate();
  if (g.bos_id < 0) throw Error("generation: bos_id (the first input token) is required");
  const int64_t n = state.rows();
  std::vector<Hypothesis> out(n);
  std::vector<int64_t> alive(n);  // row of the state -> sentence
  for (int64_t i = 0; i < n; ++i) alive[i] = i;
  auto gen = at::detail::createCPUGenerator(o.seed);
  auto prev = torch::full({n}, g.bos_id, torch::TensorOptions(torch::kLong).device(state.device()));
  for (int64_t step = 0; step < g.max_new_tokens && !alive.empty(); ++step) {
    auto log_probs = checked_step(model, prev, state, step);  // (rows, V)
    auto scores = log_probs.clone();
    std::vector<std::vector<int64_t>> prefixes;
    for (int64_t s : alive) prefixes.push_back(out[s].tokens);
    apply_repetition_penalty(scores, context, prefixes, o.repetition_penalty);
    if (constraint) constraint->apply(prefixes, scores);
    auto next = choose_next(scores, o, gen);
    auto chosen = log_probs.gather(1, next.unsqueeze(1)).squeeze(1).to(torch::kCPU);
    auto next_cpu = next.to(torch::kCPU);
    std::vector<int64_t> keep;
    std::vector<int64_t> still;
    for (size_t r = 0; r < alive.size(); ++r) {
      Hypothesis& h = out[alive[r]];
      const int64_t token = next_cpu[r].item<int64_t>();
      h.tokens.push_back(token);
      h.log_prob += chosen[r].item<double>();
      const bool more = on_token ? on_token(alive[r], token) : true;
      if (token == g.eos_id) h.finished = true;
      if (token != g.eos_id && more) keep.push_back(static_cast<int64_t>(r)), still.push_back(alive[r]);
    }
    if (keep.size() != alive.size()) {
      if (keep.empty()) break;
      auto idx = torch::tensor(keep, torch::kLong).to(state.device());
      state.select(idx);
      next = next.index_select(0, idx);
    }
    alive = std::move(still);
    prev = next;
  }
  for (auto& h : out) h.score = h.log_prob;
  return out;
}

}  // namespace zoo::models
