#pragma once
// Translation for inference (zoo translate), built from a checkpoint or a Hugging Face Marian
// directory alone: the encoder-decoder model and the text side it was trained with
// (data/translation_text.h), decoding batches of sentences of similar lengths.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "data/translation_text.h"
#include "models/encoder_decoder.h"

namespace zoo {

/// One translated sentence, with what an alignment heat map needs.
struct SentenceTranslation {
  std::string text;                        ///< target words joined by spaces; "" for no input
  std::vector<std::string> source_tokens;  ///< <start>, the source tokens (as typed), <end>
  std::vector<std::string> target_tokens;  ///< generated words, then <end> when finished
  torch::Tensor attention;  ///< (target_tokens, source_tokens) float on the CPU; undefined
                            ///< when the input was empty or GenerationOptions::attention is off
  double score = 0;         ///< length-normalised log-probability
  bool finished = false;    ///< false: cut at the length limit
};

class SentenceTranslator {
 public:
  SentenceTranslator(std::shared_ptr<models::EncoderDecoder> model, data::TranslationText text);
  /// Search settings with the model's <start>/<end> ids; `max_length` counts <end>.
  models::GenerationOptions generation_options(int64_t num_beams, int64_t max_length,
                                               double length_penalty = 1.0) const;
  /// Translates raw sentences (one SentenceTranslation per sentence, in order), in batches of
  /// similar source lengths on the model's device; on a CPU the batches run side by side, one
  /// per intra-op thread (run_side_by_side). Empty (all-space) sentences give an empty
  /// SentenceTranslation; characters outside the vocabulary become the OOV token.
  /// `truncate` cuts sources longer than the model reads (else the load's data.truncate_source
  /// decides).
  std::vector<SentenceTranslation> translate(const std::vector<std::string>& sentences,
                                     const models::GenerationOptions& options,
                                     const models::Constraint* constraint = nullptr, int64_t batch_size = 64,
                                     std::optional<bool> truncate = std::nullopt);
  /// A target sentence as the ids the model can produce (no <start>/<end>), for constrained
  /// decoding; std::nullopt with the reason in `why` when it cannot be produced.
  std::optional<std::vector<int64_t>> encode_target(const std::string& sentence, std::string* why = nullptr) const {
    return text_.encode_target(sentence, why);
  }
  /// The id that ends a generated sentence.
  int64_t eos_id() const { return text_.eos_id(); }
  /// Which attention head the translations' attention rows show (-1: the mean of the heads);
  /// throws zoo::Error naming the model's heads for one it does not have.
  void select_attention_head(int64_t head) { model_->select_attention_head(head); }

 private:
  // The sentences ids[batch] searched together; their translations go to out[where[...]].
  void translate_batch(const std::vector<std::vector<int64_t>>& ids, const std::vector<int64_t>& batch,
                       const models::GenerationOptions& options, const models::Constraint* constraint,
                       const torch::Device& device, const std::vector<size_t>& where,
                       std::vector<SentenceTranslation>& out) const;

  std::shared_ptr<models::EncoderDecoder> model_;
  data::TranslationText text_;
};

/// The translator of `dir` (a zoo checkpoint of task translation, or a Hugging Face Marian
/// directory with its SentencePiece files) on `device`: vocabularies and SentencePiece models
/// checked against the model section and the fingerprints they were saved with. With
/// `truncate`, sources longer than the model reads are cut (else they are errors naming the
/// limit). `quantize`: "" (fp32) or "int8" (models/quantize.h, CPU only). With `ensemble`
/// (more such directories, each loaded the same way, whose tokenizers' fingerprints must be
/// `dir`'s), the translator decodes with the mean of every member's next-token distribution
/// (models/encoder_decoder_ensemble.h).
std::unique_ptr<SentenceTranslator> load_translator(const std::string& dir, const torch::Device& device,
                                                    bool truncate = false, const std::string& quantize = "",
                                                    const std::vector<std::string>& ensemble = {});
/// The data side of a translation model directory: config's data section with both sides'
/// tokenizers and vocabularies loaded from `dir` (sized by config's model section).
data::TranslationText load_translation_text(const std::string& dir, const json& config);

}  // namespace zoo
