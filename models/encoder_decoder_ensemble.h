#pragma once
// Several encoder-decoders decoded as one: at every step the next-token distribution is the
// mean of the members' (the ensembles of independently trained models that fairseq and Marian
// decode with), so the searches, the translation task and zoo translate take it as any other
// EncoderDecoder. The members must share the target vocabulary: the callers check that, by
// their tokenizers' fingerprints (train/tasks/translation.h, predict/translator.h).
#include <cstdint>
#include <memory>
#include <vector>

#include <torch/torch.h>

#include "models/encoder_decoder.h"

namespace zoo::models {

class EncoderDecoderEnsemble : public EncoderDecoder {
 public:
  /// Throws zoo::Error without members or when their padding ids differ.
  explicit EncoderDecoderEnsemble(std::vector<std::shared_ptr<EncoderDecoder>> members);

  /// Every member's start(src); member m's entries are named "m/" + the member's name.
  DecoderState start(const torch::Tensor& src) override;
  /// The log of the mean of the members' next-token distributions (N, V); with
  /// state.wants_attention(), the mean of the members' attention rows where they have them.
  /// Throws zoo::Error naming the members' origins when their vocabularies differ in size.
  torch::Tensor step(const torch::Tensor& prev_tokens, DecoderState& state) override;
  torch::Tensor attention(const DecoderState& state) const override;
  /// The log of the mean of the members' teacher-forced distributions (B, T, V): log-
  /// probabilities, which a cross-entropy takes as logits.
  torch::Tensor forward(const torch::Tensor& src, const torch::Tensor& tgt_in, double teacher_forcing_ratio = 1.0,
                        torch::Generator* generator = nullptr) override;
  /// A module holding the members' modules as "0", "1", ...: modes and devices reach them all.
  std::shared_ptr<torch::nn::Module> module() override { return module_; }
  int64_t pad_id() const override { return members_.front()->pad_id(); }
  bool random_only_in_dropout() const override;
  /// The fewest positions any member takes (0 when none has a limit).
  int64_t max_positions() const override;
  /// The members' heads when they have as many, else 0; a head is selected in every member.
  int64_t attention_heads() const override;
  void select_attention_head(int64_t head) override;

 private:
  std::vector<std::shared_ptr<EncoderDecoder>> members_;
  std::shared_ptr<torch::nn::Module> module_;
};

}  // namespace zoo::models
