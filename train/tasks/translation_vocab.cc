// The translation task's vocabularies and tokenizers: fitting them on the training split
// or loading them from a checkpoint (checked against the model section), encoding sources
// and targets, detokenizing, and writing them as checkpoint assets (with the files Hugging
// Face's MarianTokenizer reads).
#include "train/tasks/translation.h"

#include <filesystem>

#include "core/output_file.h"
#include "core/paths.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo {

namespace {

constexpr const char* kStart = "<start>";
constexpr const char* kEnd = "<end>";

// Tokens of a preprocessed sentence without its <start>/<end> wrapper.
std::vector<std::string> inner_tokens(const std::string& preprocessed) {
  std::vector<std::string> tokens = data::split_tokens(preprocessed);
  if (!tokens.empty() && tokens.front() == kStart) tokens.erase(tokens.begin());
  if (!tokens.empty() && tokens.back() == kEnd) tokens.pop_back();
  return tokens;
}

// The longest prefix of at most `bytes` bytes that ends on a character boundary.
std::string utf8_prefix(const std::string& s, size_t bytes) {
  if (s.size() <= bytes) return s;
  while (bytes > 0 && (static_cast<unsigned char>(s[bytes]) & 0xC0) == 0x80) --bytes;
  return s.substr(0, bytes);
}

}  // namespace

void TranslationTask::check_vocabulary_sizes() {
  // Sizes given in the config must agree with the data (0 / absent: filled in).
  auto fill = [&](const char* key, int64_t& field, int64_t actual, const char* limit_key) {
    if (field != 0 && field != actual)
      throw Error(cat("config: model.", key, " is ", field, " but the vocabulary built from ",
                      data_.path, " has ", actual, " entries; remove model.", key,
                      " (it is filled from the data) or set data.", limit_key));
    field = actual;
  };
  fill("source_vocab_size", source_vocab_size_, source_vocab_.size(), "source_num_words");
  fill("target_vocab_size", target_vocab_size_, target_vocab_.size(), "target_num_words");
}

void TranslationTask::find_special_ids(const std::string& where) {
  // Special ids come from the target vocabulary; they must be ids the model can produce.
  for (const char* token : {kStart, kEnd}) {
    if (!target_vocab_.contains(token))
      throw Error(cat(where, ": the target vocabulary has no ", token, " token"));
    const int64_t id = target_vocab_.index(token);
    if (id >= target_vocab_.size())
      throw Error(cat("data.target_num_words (", target_vocab_.num_words(),
                      ") is too small: ", token, " has index ", id, "; raise it or set it to 0"));
  }
  bos_id_ = target_vocab_.index(kStart);
  eos_id_ = target_vocab_.index(kEnd);
  if ((config_bos_ >= 0 && config_bos_ != bos_id_) || (config_eos_ >= 0 && config_eos_ != eos_id_))
    throw Error(cat(where, ": <start>/<end> have ids ", bos_id_, "/", eos_id_,
                    " but the model section says bos_id ", config_bos_, ", eos_id ", config_eos_,
                    "; the vocabulary does not belong to this model"));
}

void TranslationTask::train_tokenizers() {
  std::vector<std::string> sources, targets;
  for (const auto& p : split_.train) {
    if (source_text_.subwords()) sources.push_back(source_text_.normalize(p.source));
    if (target_text_.subwords()) targets.push_back(target_text_.normalize(p.target));
  }
  const auto& type = data_.sentencepiece_model_type;
  const int64_t size = data_.sentencepiece_vocab_size;
  if (data_.joint_vocabulary && source_text_.subwords() && target_text_.subwords()) {
    sources.insert(sources.end(), targets.begin(), targets.end());
    source_text_.train(sources, type, size);
    target_text_.share(source_text_);
  } else {
    if (source_text_.subwords()) source_text_.train(sources, type, size);
    if (target_text_.subwords()) target_text_.train(targets, type, size);
  }
  // The checkpoint's config says which models its source.spm / target.spm must be.
  config_["data"]["source_tokenizer_fingerprint"] = data_.source_tokenizer_fingerprint = source_text_.fingerprint();
  config_["data"]["target_tokenizer_fingerprint"] = data_.target_tokenizer_fingerprint = target_text_.fingerprint();
}

void TranslationTask::load_tokenizers(const std::string& dir) {
  const std::pair<SideTokenizer*, const char*> sides[] = {{&source_text_, "source"}, {&target_text_, "target"}};
  for (auto [side, name] : sides) {
    const std::string file = cat(name, ".spm");
    side->load(dir, file);
    const std::string& expected = side == &source_text_ ? data_.source_tokenizer_fingerprint
                                                        : data_.target_tokenizer_fingerprint;
    // (A Hugging Face directory names no fingerprint: its files are taken as they are.)
    if (side->subwords() && !expected.empty() && side->fingerprint() != expected)
      throw Error(cat((fs::path(dir) / file).string(), ": this SentencePiece model does not belong to this checkpoint ",
                      "(its fingerprint is ", side->fingerprint(), "; the checkpoint was trained with ", expected,
                      "); put back the ", file, " it was saved with"));
  }
}

void TranslationTask::fit_vocabularies() {
  std::vector<std::string> sources, targets;
  sources.reserve(split_.train.size());
  targets.reserve(split_.train.size());
  for (const auto& p : split_.train) {
    sources.push_back(source_text_.tokens(p.source));
    targets.push_back(target_text_.tokens(p.target));
  }
  if (data_.joint_vocabulary) {
    std::vector<std::string> both = sources;
    both.insert(both.end(), targets.begin(), targets.end());
    source_vocab_ = target_vocab_ = data::Vocab::fit(both, data_.target_num_words, data_.oov_token);
    return;
  }
  source_vocab_ = data::Vocab::fit(sources, data_.source_num_words, data_.oov_token);
  target_vocab_ = data::Vocab::fit(targets, data_.target_num_words, data_.oov_token);
}

void TranslationTask::load_vocabularies(const std::string& dir) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  auto load = [&](const char* file, int64_t expected, const char* key) {
    const std::string path = (fs::path(dir) / file).string();
    std::error_code ec;
    if (!fs::exists(path, ec))
      throw Error(cat(path,
                      ": missing; a translation checkpoint needs the vocabularies it was trained "
                      "with (zoo train writes ",
                      kSourceVocabFile, " and ", kTargetVocabFile, " into every checkpoint)"));
    data::Vocab v = data::Vocab::load(path);
    if (v.size() != expected)
      throw Error(cat(path, ": the vocabulary has ", v.size(), " entries but model.", key, " in ",
                      config_path, " is ", expected,
                      "; this vocabulary does not belong to this checkpoint"));
    return v;
  };
  source_vocab_ = load(kSourceVocabFile, source_vocab_size_, "source_vocab_size");
  target_vocab_ = load(kTargetVocabFile, target_vocab_size_, "target_vocab_size");
}

std::optional<std::vector<int64_t>> TranslationTask::encode_target(const std::string& sentence,
                                                                   std::string* why) const {
  const std::vector<std::string> words = inner_tokens(target_text_.tokens(sentence));
  if (words.empty()) {
    if (why) *why = "no words left after preprocessing (only digits or symbols?)";
    return std::nullopt;
  }
  std::vector<int64_t> ids;
  for (const auto& w : words) {
    const bool usable = target_vocab_.contains(w) &&
                        target_vocab_.index(w) < target_vocab_.size() &&
                        target_vocab_.index(w) != target_vocab_.oov_index();
    if (!usable) {
      if (why) *why = cat("the word '", w, "' is not in the target vocabulary");
      return std::nullopt;
    }
    ids.push_back(target_vocab_.index(w));
  }
  return ids;
}

std::string TranslationTask::reference_text(const std::string& english) {
  std::string out;
  for (const auto& w : inner_tokens(data::preprocess_eng(english))) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::vector<int64_t> TranslationTask::encode_source(const std::string& sentence,
                                                    std::vector<std::string>* tokens) const {
  std::vector<int64_t> ids;
  for (const auto& token : data::split_tokens(source_text_.tokens(sentence))) {
    // One id per character; without an OOV token unknown characters are dropped (Keras).
    const std::vector<int64_t> id = source_vocab_.encode(token);
    if (id.empty()) continue;
    ids.push_back(id.front());
    if (tokens) tokens->push_back(token);
  }
  const auto limit = static_cast<size_t>(model_->max_positions());
  if (limit > 1 && ids.size() > limit) {
    if (!data_.truncate_source)
      throw Error(cat("a source sentence of ", ids.size(), " tokens (its <start>/<end> markers included) is longer than the ",
                      limit, " this model reads (model.max_position_embeddings): '", utf8_prefix(sentence, 60),
                      sentence.size() > 60 ? "...'" : "'",
                      "; set data.truncate_source=true (zoo translate --truncate) to cut it"));
    const int64_t end = ids.back();  // keep <end>
    ids.resize(limit - 1);
    ids.push_back(end);
    if (tokens) {
      const std::string last = tokens->back();
      tokens->resize(limit - 1);
      tokens->push_back(last);
    }
  }
  return ids;
}

std::string TranslationTask::detokenize(const std::vector<int64_t>& ids) const {
  std::vector<int64_t> words;
  for (int64_t id : ids)
    if (id != eos_id_ && id != bos_id_ && id != model_->pad_id()) words.push_back(id);
  if (!target_text_.subwords()) return target_vocab_.decode(words);
  std::vector<std::string> pieces;
  for (int64_t id : words) {
    const bool known = id > 0 && id < target_vocab_.size();
    pieces.push_back(known ? target_vocab_.word(id) : data_.oov_token);
  }
  return target_text_.detokenize(pieces);
}

void TranslationTask::save_assets(const std::string& dir) const {
  source_text_.save(dir, "source.spm");
  target_text_.save(dir, "target.spm");
  source_vocab_.save((fs::path(dir) / kSourceVocabFile).string());
  target_vocab_.save((fs::path(dir) / kTargetVocabFile).string());
  if (data_.joint_vocabulary && source_text_.subwords() && target_text_.subwords()) save_marian_tokenizer(dir);
}

// Hugging Face's MarianTokenizer reads source.spm / target.spm (written above), vocab.json
// (piece -> id) and tokenizer_config.json. It encodes a source as its pieces' ids + </s>,
// which is how SideTokenizer frames SentencePiece sources; </s>, <unk> and <pad> name our
// <end>, OOV and padding ids.
void TranslationTask::save_marian_tokenizer(const std::string& dir) const {
  json vocab = json::object();
  for (int64_t id = 1; id < source_vocab_.size(); ++id)
    if (!source_vocab_.word(id).empty()) vocab[source_vocab_.word(id)] = id;
  vocab["</s>"] = eos_id_;
  vocab["<unk>"] = source_vocab_.oov_index();
  vocab["<pad>"] = kPadId;
  write_json_file((fs::path(dir) / "vocab.json").string(), vocab);
  write_json_file((fs::path(dir) / "tokenizer_config.json").string(),
                  json{{"tokenizer_class", "MarianTokenizer"}, {"source_lang", "zh"}, {"target_lang", "en"},
                       {"separate_vocabs", false}, {"eos_token", "</s>"}, {"unk_token", "<unk>"},
                       {"pad_token", "<pad>"}, {"model_max_length", std::max<int64_t>(model_->max_positions(), 1)}});
}

}  // namespace zoo
