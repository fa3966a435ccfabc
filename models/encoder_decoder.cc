#include "models/encoder_decoder.h"

#include "core/error.h"

namespace zoo::models {

void EncoderDecoder::select_attention_head(int64_t head) {
  if (head >= 0)
    throw Error(cat("attention head ", head, ": this model has one attention without heads; leave the head out"));
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
