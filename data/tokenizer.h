#pragma once
// Tokenizers: text <-> ids, saved beside every checkpoint of the language models, BERT
// pretraining and text classification.
//
//   char           nanoGPT's character level: the sorted code points of the training text
//   gpt2           GPT-2's byte-level BPE from the standard vocab.json + merges.txt
//                  (data/gpt2_bpe.h); a Hugging Face GPT-2 directory loads as it is
//   sentencepiece  a SentencePiece model (bpe, unigram, word or char), tokenizer.model
//   wordpiece      BERT's WordPiece over vocab.txt (data/wordpiece_tokenizer.h); a Hugging Face
//                  BERT directory loads as it is
//   basic_english  document 000's basic_english words over vocab.txt
//                  (data/basic_english_tokenizer.h): BERT pretraining's and text classification's
//
// A directory holds one tokenizer; tokenizer_config.json names its kind ("zoo_kind", with
// "tokenizer_class" as Hugging Face expects it). fingerprint() identifies the vocabulary, so a
// checkpoint refuses a tokenizer it was not trained with.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/data_facts.h"

namespace zoo::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;
  /// "char", "gpt2", "sentencepiece", "wordpiece" or "basic_english".
  virtual std::string kind() const = 0;
  /// UTF-8 text -> ids. Invalid UTF-8 is a zoo::Error naming the byte offset; so is a
  /// character the vocabulary cannot express (char).
  virtual std::vector<int64_t> encode(std::string_view text) const = 0;
  /// ids -> bytes (a byte-level tokenizer may end inside a UTF-8 character). An id outside
  /// the vocabulary is a zoo::Error naming it.
  virtual std::string decode(const std::vector<int64_t>& ids) const = 0;
  virtual int64_t vocab_size() const = 0;
  /// The end-of-text id, -1 if none.
  virtual int64_t eos_id() const { return -1; }
  /// The id of one whole token of the vocabulary ("[CLS]"), -1 when it holds no such token.
  virtual int64_t token_id(std::string_view /*token*/) const { return -1; }
  /// Writes its files (and tokenizer_config.json) into the existing directory `dir`.
  virtual void save(const std::string& dir) const = 0;
  /// A digest of the kind and the whole vocabulary: equal exactly when two tokenizers encode
  /// alike.
  virtual std::string fingerprint() const = 0;
};

/// What a language model's tokenizer tells the model (models::complete_model_section): its
/// ids (the model's table may have more rows: GPT-2 pads 50,257 to 50,304) and its
/// end-of-text id as both bos and eos, as GPT-2 starts and ends texts with <|endoftext|>.
DataFacts language_model_facts(const Tokenizer& tokenizer);

/// Throws a zoo::Error naming `source` when `tokenizer` is not the one a model was trained with,
/// whose fingerprint is `expected` ("": not recorded, any tokenizer passes).
void check_tokenizer_fingerprint(const Tokenizer& tokenizer, const std::string& expected, const std::string& source);

/// Whether `dir` holds a tokenizer load_tokenizer() reads.
bool has_tokenizer(const std::string& dir);
/// The tokenizer in `dir` (tokenizer_config.json's kind; else vocab.json + merges.txt as GPT-2;
/// else tokenizer.model as SentencePiece; else vocab.txt as WordPiece). Missing or malformed files are zoo::Errors naming
/// the file.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& dir);
/// DIR/tokenizer_config.json, read under the text cap and parsed ({} when there is none).
nlohmann::json read_tokenizer_config(const std::string& dir);
/// Adds `fields` (Hugging Face's keys: model_max_length, …) to DIR/tokenizer_config.json.
void add_to_tokenizer_config(const std::string& dir, const nlohmann::json& fields);
/// Hugging Face's tokenizer.json at `path`, read under the text cap and parsed; errors name it.
nlohmann::json read_tokenizer_json(const std::string& path);

struct TokenizerTrainOptions {
  std::string model_type = "char";  // char (native) | bpe | unigram | word (SentencePiece) | wordpiece (native)
  int64_t vocab_size = 8000;        // SentencePiece and WordPiece
};
/// Learns a tokenizer from UTF-8 text files (read in pieces: files larger than memory work
/// for char). Invalid UTF-8 and empty files are zoo::Errors naming the file (and byte).
std::unique_ptr<Tokenizer> train_tokenizer(const std::vector<std::string>& files, const TokenizerTrainOptions& options);

/// 64-bit FNV-1a of `bytes`, as 16 hex digits (the fingerprints).
std::string fnv1a_hex(std::string_view bytes);

}  // namespace zoo::data
