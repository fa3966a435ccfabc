#pragma once
// A SentencePiece model (Kudo & Richardson 2018) as a Tokenizer: trained by `zoo tokenizer
// train --model-type bpe|unigram|word` and saved as tokenizer.model. The library runs in a
// helper process, zoo-spm (data/spm_bridge/protocol.h says why and how).
#include <cstdint>
#include <memory>
#include <mutex>
#include <string_view>
#include <string>
#include <vector>

#include "data/tokenizer.h"


namespace zoo::data {

class SentencePieceTokenizer : public Tokenizer {
 public:
  /// From a serialized model (the bytes of a .model file); `source` names it in errors.
  SentencePieceTokenizer(const std::string& model_proto, const std::string& source);
  ~SentencePieceTokenizer() override;
  static std::unique_ptr<SentencePieceTokenizer> load(const std::string& path);
  /// Trains on UTF-8 files: model_type bpe | unigram | word | char, vocab_size pieces,
  /// character_coverage 1.0 (every character of the text kept), no normalisation beyond
  /// SentencePiece's NFKC default, </s> as the end-of-text id.
  static std::unique_ptr<SentencePieceTokenizer> train(const std::vector<std::string>& files,
                                                       const std::string& model_type, int64_t vocab_size);

  std::string kind() const override { return "sentencepiece"; }
  std::vector<int64_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int64_t>& ids) const override;
  int64_t vocab_size() const override { return vocab_size_; }
  int64_t eos_id() const override { return eos_id_; }
  void save(const std::string& dir) const override;
  std::string fingerprint() const override { return fnv1a_hex("sentencepiece\n" + proto_); }
  /// Every piece, by id ("▁the", "s", "<unk>", ...).
  const std::vector<std::string>& pieces() const;
  /// UTF-8 text -> its pieces (SentencePiece's EncodeAsPieces).
  std::vector<std::string> encode_pieces(std::string_view text) const;
  /// Subword regularization (Kudo 2018): one segmentation of `text` drawn by SentencePiece's
  /// SampleEncode. unigram: nbest_size -1 samples from every segmentation, l >= 2 from the l
  /// best, alpha the smoothing (inverse temperature: larger is nearer the best one); bpe:
  /// BPE-dropout with alpha the probability of skipping a merge, nbest_size ignored. The same
  /// seed gives the same ids; decode() gives the text back.
  std::vector<int64_t> sample(std::string_view text, int nbest_size, float alpha, uint32_t seed) const;
  /// The same for many texts in one request to the helper (a pipe round trip costs more than a
  /// sentence's sampling), drawn one after the other from `seed`.
  std::vector<std::vector<int64_t>> sample(const std::vector<std::string>& texts, int nbest_size, float alpha,
                                           uint32_t seed) const;
  /// The ids an encoding or a sample can produce: every piece but the control (<s>, </s>),
  /// unknown, unused and byte ones.
  std::vector<int64_t> sampleable_ids() const;
  /// The serialized model (the bytes of a .model file).
  const std::string& proto() const { return proto_; }

 private:
  class Helper;
  std::string proto_;
  std::shared_ptr<Helper> helper_;  // shared by copies; requests are serialised
  int64_t vocab_size_ = 0, eos_id_ = 0;
  mutable std::vector<std::string> pieces_;  // filled on first use
  mutable std::mutex pieces_mu_;
};

/// Where the helper program zoo-spm is, for programs outside zoo's build and install folders
/// (<zoo/zoo.h> registers the installed package's; $ZOO_SPM still wins).
void set_spm_helper(const std::string& path);

}  // namespace zoo::data
