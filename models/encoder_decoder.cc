#include "models/encoder_decoder.h"

#include <algorithm>

#include "core/error.h"

namespace zoo::models {

void EncoderDecoder::select_attention_head(int64_t head) {
  if (head >= 0)
    throw Error(cat("attention head ", head, ": this model has one attention without heads; leave the head out"));
}

GenerationOptions search_options(const EncoderDecoder& model, int64_t bos, int64_t eos, int64_t num_beams,
                                 int64_t max_length, double length_penalty) {
  GenerationOptions g;
  g.bos_id = bos;
  g.eos_id = eos;
  // A model with a position table cannot take more steps than it has positions.
  const int64_t limit = model.max_positions();
  g.max_new_tokens = limit > 0 ? std::min(max_length, limit) : max_length;
  g.num_beams = num_beams;
  g.num_return_sequences = 1;
  g.length_penalty = length_penalty;
  g.validate();
  return g;
}

std::vector<std::vector<Hypothesis>> generate(EncoderDecoder& model, const torch::Tensor& src,
                                              const GenerationOptions& options,
                                              const Constraint* constraint) {
  // Decoding is inference: dropout off, whatever mode the caller (the trainer's evaluation,
  // a test) left the module in; restored however we leave.
  struct ModeGuard {
    std::shared_ptr<torch::nn::Module> m;
    bool training;
    ~ModeGuard() { m->train(training); }
  } guard{model.module(), model.module()->is_training()};
  torch::NoGradGuard no_grad;
  guard.m->eval();
  if (options.num_beams > 1) return beam_search(model, model.start(src), options, constraint);
  std::vector<std::vector<Hypothesis>> out;
  for (auto& h : greedy_decode(model, model.start(src), options, constraint))
    out.push_back({std::move(h)});
  return out;
}

}  // namespace zoo::models
