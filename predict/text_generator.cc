#include "predict/text_generator.h"

#include <algorithm>
#include <filesystem>

#include "core/error.h"
#include "data/tokenizer.h"
#include "io/checkpoint.h"
#include "io/inference_model.h"
#include "models/gpt.h"
#include "models/registry.h"

namespace zoo {
namespace {

class GptTextGenerator : public TextGenerator {
 public:
  GptTextGenerator(models::GPT2LMHeadModel model, std::unique_ptr<data::Tokenizer> tokenizer, std::string dir)
      : model_(std::move(model)), tokenizer_(std::move(tokenizer)), dir_(std::move(dir)) {}

  std::vector<int64_t> encode(const std::string& text) const override { return tokenizer_->encode(text); }
  std::string decode(const std::vector<int64_t>& ids) const override { return tokenizer_->decode(ids); }
  int64_t context_size() const override { return model_->options().n_positions; }
  int64_t eos_id() const override { return model_->options().eos_token_id; }

  Decoding start_decoding(const std::vector<int64_t>& prompt, bool use_cache) override {
    auto decoder = std::make_shared<models::GPT2Decoder>(model_, use_cache);
    Decoding d;
    d.state = decoder->start(prompt);
    decoder->set_origin(dir_);  // named if its output is not finite
    d.first = prompt.back();
    d.model = decoder;
    return d;
  }

  Decoding start_decoding(const std::vector<std::vector<int64_t>>& prompts, bool use_cache) override {
    auto decoder = std::make_shared<models::GPT2Decoder>(model_, use_cache);
    Decoding d;
    d.state = decoder->start(prompts, std::max<int64_t>(eos_id(), 0));  // the padding's id is never read
    decoder->set_origin(dir_);
    d.first = 0;
    d.model = decoder;
    return d;
  }

  void join(models::DecoderState& running, models::DecoderState added) const override {
    models::GPT2Decoder::join(running, std::move(added));
  }
  void trim(models::DecoderState& state) const override { models::GPT2Decoder::trim(state); }

 private:
  models::GPT2LMHeadModel model_;
  std::unique_ptr<data::Tokenizer> tokenizer_;
  std::string dir_;  // where the weights come from
};

// The directory's tokenizer, the one the model was trained with.
std::unique_ptr<data::Tokenizer> checked_tokenizer(const std::string& dir, const json& config) {
  if (!data::has_tokenizer(dir))
    throw Error(cat(dir, ": no tokenizer files (tokenizer.json, vocab.json + merges.txt, char_vocab.json or a "
                         "SentencePiece model); copy the ones the model was trained with into it"));
  auto tokenizer = data::load_tokenizer(dir);
  data::check_tokenizer_fingerprint(
      *tokenizer, config.value("data", json::object()).value("tokenizer_fingerprint", std::string()), dir);
  return tokenizer;
}

}  // namespace

std::unique_ptr<TextGenerator> load_text_generator(const std::string& given, const torch::Device& device,
                                                   const std::string& quantize) {
  const auto [dir, config] = open_inference_source(given, "language_modeling", "zoo generate");
  const std::string source = (std::filesystem::path(dir) / "config.json").string();
  const std::string type = config.at("model").value("model_type", "");
  models::GPT2LMHeadModel model(
      std::dynamic_pointer_cast<models::GPT2LMHeadModelImpl>(load_inference_model(dir, config, device, quantize)));
  if (model.is_empty()) throw Error(cat(source, ": model_type '", type, "' is not a GPT-2"));
  auto tokenizer = checked_tokenizer(dir, config);
  DataFacts facts = data::language_model_facts(*tokenizer);
  facts.mismatch_hint = cat("this tokenizer does not belong to the model of ", source);
  models::complete_model_section(config.at("model"), facts);  // throws when they disagree
  return std::make_unique<GptTextGenerator>(std::move(model), std::move(tokenizer), dir);
}

}  // namespace zoo
