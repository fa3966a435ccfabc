#pragma once
// Text generation for inference (zoo generate), built from a checkpoint or a Hugging Face
// GPT-2 directory alone: the model, its tokenizer and the decoders of models/generation.h,
// without the trainer or the training task.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "models/generation.h"

namespace zoo {

/// A model that continues text.
class TextGenerator {
 public:
  virtual ~TextGenerator() = default;
  /// Text -> ids with the model's tokenizer, and back (bytes: a piece of a UTF-8 character may
  /// end the text of a byte-level tokenizer).
  virtual std::vector<int64_t> encode(const std::string& text) const = 0;
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  /// Longest context the model sees (tokens).
  virtual int64_t context_size() const = 0;
  /// The id that ends a text, -1 if none.
  virtual int64_t eos_id() const = 0;
  /// A decoder holding `prompt` (at most context_size() ids, at least one), ready for the
  /// searches of models/generation.h and models/sampling.h: `first` is the previous token of
  /// the first step (GenerationOptions::bos_id). use_cache false recomputes every step.
  struct Decoding {
    std::shared_ptr<models::StepModel> model;
    models::DecoderState state;
    int64_t first = -1;
  };
  virtual Decoding start_decoding(const std::vector<int64_t>& prompt, bool use_cache) = 0;
  /// Several prompts in one decoder, one row each in order: left-padded and masked, so that each
  /// row decodes as it would alone (greedy and beam search give the same tokens). Each row's
  /// own last token is fed first; `first` is only the placeholder the searches need.
  virtual Decoding start_decoding(const std::vector<std::vector<int64_t>>& prompts, bool use_cache) = 0;
  /// Continuous batching (zoo::GenerationBatch), on states of start_decoding with the key/value
  /// cache whose "first" entries were taken out: appends `added`'s rows to `running`'s, each row
  /// decoding on as it would alone; and drops the history only padding fills (after rows left).
  virtual void join(models::DecoderState& running, models::DecoderState added) const = 0;
  virtual void trim(models::DecoderState& state) const = 0;
};

/// The language model of `dir` (a zoo checkpoint of task language_modeling, or a Hugging Face
/// GPT-2 directory, sharded or in a Hub cache folder) on `device`, in eval mode: checked against
/// the memory budget before it is built (unless its train.check_memory is false), weights loaded
/// strictly, LoRA adapters merged, the tokenizer from the directory's files (each file the one
/// the checkpoint was saved with) and checked against the fingerprint the model was trained with. Errors name the directory and the fix.
/// `quantize`: "" (fp32) or "int8" (models/quantize.h, CPU only).
std::unique_ptr<TextGenerator> load_text_generator(const std::string& dir, const torch::Device& device,
                                                   const std::string& quantize = "");

}  // namespace zoo
