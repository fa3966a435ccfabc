#pragma once
// What a translation model offers: the interface between encoder-decoder models (the GRU
// Seq2Seq today, the Transformer next) and the code that trains and decodes them (the
// translation task, `zoo translate`, greedy/beam search). Neither side names the other's
// classes, so a new encoder-decoder plugs in with a model registry entry only.
//
// Decoding goes through DecoderState (models/generation.h): start() encodes the sources
// into kSentence entries (encoder memory, masks) and the initial kHypothesis entries (RNN
// state; a Transformer's key/value cache starts empty and grows step by step); step()
// reads and updates them. The searches reorder, repeat and drop rows, so a model never
// does beam bookkeeping.
//
// Construction goes through the model registry (models/registry.h, build_encoder_decoder):
// a translation model's section must accept source_vocab_size, target_vocab_size, bos_id,
// eos_id and pad_id, which the translation task fills in from its vocabularies.
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "models/generation.h"

namespace zoo::models {

/// An encoder-decoder over token ids; also a StepModel, so the searches drive it directly.
/// Implementations are torch::nn::Modules that inherit this interface as well.
class EncoderDecoder : public StepModel {
 public:
  /// Encodes src (B, S) int64, right-padded with pad_id(): the decoder state for B rows
  /// (one per sentence), ready for the first step().
  virtual DecoderState start(const torch::Tensor& src) = 0;
  // step(prev_tokens (N), state) -> next-token log-probabilities (N, V), updating `state`;
  // attention(state) -> the last step's source attention (N, S) or undefined. From StepModel.

  /// Teacher-forced logits for training and evaluation: src (B, S), tgt_in (B, T) (bos +
  /// the target without its last token) -> logits (B, T, V). With teacher_forcing_ratio < 1
  /// each step may feed back the model's own prediction instead, drawn from `generator`
  /// (the default generator when null); a model without that option throws zoo::Error for
  /// a ratio below 1 rather than ignore it.
  virtual torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in,
                                double teacher_forcing_ratio = 1.0,
                                torch::Generator* generator = nullptr) = 0;

  /// The module itself: parameters, state dict (the checkpoint), train/eval mode, device.
  virtual std::shared_ptr<torch::nn::Module> module() = 0;
  /// The id that right-pads sources and targets; the translation loss ignores it.
  virtual int64_t pad_id() const = 0;
  /// Whether forward() in training draws random numbers only through apply_dropout (whose
  /// seeds a batch slice can take from a stream of its own: train/slices.h).
  virtual bool random_only_in_dropout() const { return true; }
  /// The longest source, and the most target steps, the model can take (a Transformer's
  /// position table); 0 = no limit.
  virtual int64_t max_positions() const { return 0; }
  /// Heads of the attention that attention() reports (0: one attention without heads, as the
  /// GRU's); select_attention_head(h) makes attention() report head h alone, -1 their mean.
  /// Throws zoo::Error for a head the model does not have.
  virtual int64_t attention_heads() const { return 0; }
  virtual void select_attention_head(int64_t head);
};

/// Search settings for `model`: <start>/<end> ids `bos`/`eos`, at most `max_length` tokens
/// (<end> counted) and no more than its position table holds, one sequence per sentence,
/// validated.
GenerationOptions search_options(const EncoderDecoder& model, int64_t bos, int64_t eos, int64_t num_beams,
                                 int64_t max_length, double length_penalty = 1.0);

/// Decodes src (B, S) with `model` without gradients, in eval mode (the module's mode is
/// restored afterwards): greedy search when options.num_beams == 1, else beam search.
/// Returns per sentence the n-best (best first), each with its attention rows (tokens x S)
/// when the model has them.
std::vector<std::vector<Hypothesis>> generate(EncoderDecoder& model, const torch::Tensor& src,
                                              const GenerationOptions& options,
                                              const Constraint* constraint = nullptr);

}  // namespace zoo::models
