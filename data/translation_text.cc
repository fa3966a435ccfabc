#include "data/translation_text.h"

#include <algorithm>
#include <filesystem>
#include <tuple>

#include "core/output_file.h"
#include "data/batch.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo::data {

namespace {


// Tokens of a preprocessed sentence without its <start>/<end> wrapper.
std::vector<std::string> inner_tokens(const std::string& preprocessed) {
  std::vector<std::string> tokens = split_tokens(preprocessed);
  if (!tokens.empty() && tokens.front() == kStartToken) tokens.erase(tokens.begin());
  if (!tokens.empty() && tokens.back() == kEndToken) tokens.pop_back();
  return tokens;
}

// The longest prefix of at most `bytes` bytes that ends on a character boundary.
std::string utf8_prefix(const std::string& s, size_t bytes) {
  if (s.size() <= bytes) return s;
  while (bytes > 0 && (static_cast<unsigned char>(s[bytes]) & 0xC0) == 0x80) --bytes;
  return s.substr(0, bytes);
}

// The subword-sampling keys against the rest of data (SentencePiece's own rules: SampleEncode
// takes nbest_size <= 512; with bpe, alpha is a probability and nbest_size is ignored).
void check_sampling(const TranslationDataOptions& data) {
  const double alpha = data.sentencepiece_sampling_alpha;
  const int64_t nbest = data.sentencepiece_sampling_nbest;
  const std::string key = cat("config: data.sentencepiece_sampling_alpha=", alpha);
  if (alpha == 0) {
    if (nbest != -1)
      throw Error(cat("config: data.sentencepiece_sampling_nbest=", nbest,
                      " has no effect without subword sampling; set data.sentencepiece_sampling_alpha (0.1 to 0.2 "
                      "with unigram) or leave sentencepiece_sampling_nbest at -1"));
    return;
  }
  const bool source = data.source_tokenizer == "sentencepiece", target = data.target_tokenizer == "sentencepiece";
  if (!source && !target)
    throw Error(cat(key, " samples SentencePiece segmentations, but data.source_tokenizer is ", data.source_tokenizer,
                    " and data.target_tokenizer is ", data.target_tokenizer,
                    "; set either (or both) to sentencepiece, or data.sentencepiece_sampling_alpha=0"));
  if (data.sentencepiece_model_type == "bpe") {
    if (alpha >= 1)
      throw Error(cat(key, " is BPE-dropout's probability of skipping a merge with data.sentencepiece_model_type=bpe; "
                           "it must be below 1 (1 skips every merge: single characters), 0.1 is usual"));
    if (nbest != -1)
      throw Error(cat("config: data.sentencepiece_sampling_nbest=", nbest,
                      " applies to unigram models; bpe samples by BPE-dropout and ignores it: leave it at -1"));
  }
  if (nbest == 0 || nbest == 1)
    throw Error(cat("config: data.sentencepiece_sampling_nbest=", nbest,
                    " leaves only the best segmentation to sample from; use -1 (every segmentation) or 2 to 512"));
  // A sample can draw any piece of the model: the vocabulary must keep them all.
  const auto limit = [&](bool subwords, const char* key_name, int64_t num_words) {
    if (subwords && num_words > 0)
      throw Error(cat(key, " needs every piece of the SentencePiece model in the vocabulary, but data.", key_name, "=",
                      num_words, " caps it; set data.", key_name, "=0"));
  };
  if (data.joint_vocabulary) {
    limit(source || target, "target_num_words", data.target_num_words);
  } else {
    limit(source, "source_num_words", data.source_num_words);
    limit(target, "target_num_words", data.target_num_words);
  }
}

// The seed of one side's draws for a batch: the sides of a pair draw apart.
uint32_t side_seed(uint64_t seed, bool source) {
  const uint64_t mixed = seed_mix(seed, source ? 1 : 2);
  return static_cast<uint32_t>(mixed ^ (mixed >> 32));
}

}  // namespace

TranslationText::TranslationText(const TranslationDataOptions& data)
    : data_(data), source_(data.source_tokenizer, true), target_(data.target_tokenizer, false) {
  check_sampling(data_);
}

void TranslationText::fit(const std::vector<SentencePair>& train) {
  train_tokenizers(train);
  fit_vocabularies(train);
}

void TranslationText::train_tokenizers(const std::vector<SentencePair>& train) {
  std::vector<std::string> sources, targets;
  for (const auto& p : train) {
    if (source_.subwords()) sources.push_back(source_.normalize(p.source));
    if (target_.subwords()) targets.push_back(target_.normalize(p.target));
  }
  const auto& type = data_.sentencepiece_model_type;
  const int64_t size = data_.sentencepiece_vocab_size;
  if (data_.joint_vocabulary && source_.subwords() && target_.subwords()) {
    sources.insert(sources.end(), targets.begin(), targets.end());
    source_.train(sources, type, size);
    target_.share(source_);
  } else {
    if (source_.subwords()) source_.train(sources, type, size);
    if (target_.subwords()) target_.train(targets, type, size);
  }
}

void TranslationText::fit_vocabularies(const std::vector<SentencePair>& train) {
  std::vector<std::string> sources, targets;
  sources.reserve(train.size());
  targets.reserve(train.size());
  for (const auto& p : train) {
    sources.push_back(source_.tokens(p.source));
    targets.push_back(target_.tokens(p.target));
  }
  // Sampled segmentations may hold pieces the best ones of the training split never showed.
  const std::vector<std::string> source_pieces = samples_source() ? source_.sampleable_pieces() : std::vector<std::string>();
  const std::vector<std::string> target_pieces = samples_target() ? target_.sampleable_pieces() : std::vector<std::string>();
  if (data_.joint_vocabulary) {
    std::vector<std::string> both = sources;
    both.insert(both.end(), targets.begin(), targets.end());
    Vocab joint = Vocab::fit(both, data_.target_num_words, data_.oov_token);
    if (sampling()) {
      std::vector<std::string> pieces = source_pieces;
      pieces.insert(pieces.end(), target_pieces.begin(), target_pieces.end());
      joint = joint.with_words(pieces);
    }
    source_.set_vocab(joint);
    target_.set_vocab(std::move(joint));
    return;
  }
  Vocab source_vocab = Vocab::fit(sources, data_.source_num_words, data_.oov_token);
  Vocab target_vocab = Vocab::fit(targets, data_.target_num_words, data_.oov_token);
  source_.set_vocab(samples_source() ? source_vocab.with_words(source_pieces) : std::move(source_vocab));
  target_.set_vocab(samples_target() ? target_vocab.with_words(target_pieces) : std::move(target_vocab));
}

void TranslationText::load(const std::string& dir, int64_t source_vocab_size, int64_t target_vocab_size) {
  const std::string config_path = (fs::path(dir) / "config.json").string();
  const std::tuple<SideTokenizer*, int64_t, const char*, const std::string*> sides[] = {
      {&source_, source_vocab_size, "source_vocab_size", &data_.source_tokenizer_fingerprint},
      {&target_, target_vocab_size, "target_vocab_size", &data_.target_tokenizer_fingerprint}};
  for (auto [side, expected, key, fingerprint] : sides) {
    side->load(dir);
    const std::string path = (fs::path(dir) / side->vocab_file()).string();
    if (side->vocab_size() != expected)
      throw Error(cat(path, ": the vocabulary has ", side->vocab_size(), " entries but model.", key, " in ", config_path,
                      " is ", expected, "; this vocabulary does not belong to this checkpoint"));
    // (A Hugging Face directory names no fingerprint: its files are taken as they are. An
    // older zoo recorded the SentencePiece model's alone.)
    if (*fingerprint != side->model_fingerprint())
      check_tokenizer_fingerprint(*side, *fingerprint,
                                  side->subwords() ? cat((fs::path(dir) / side->model_file()).string(), " with ", path) : path);
  }
}

void TranslationText::find_special_ids(const std::string& where) {
  // Special ids come from the target vocabulary; they must be ids the model can produce.
  const Vocab& vocab = target_.vocab();
  for (const char* token : {kStartToken, kEndToken}) {
    if (!vocab.contains(token)) throw Error(cat(where, ": the target vocabulary has no ", token, " token"));
    const int64_t id = vocab.index(token);
    if (id >= vocab.size())
      throw Error(cat("data.target_num_words (", vocab.num_words(), ") is too small: ", token, " has index ", id,
                      "; raise it or set it to 0"));
  }
  bos_id_ = vocab.index(kStartToken);
  eos_id_ = vocab.index(kEndToken);
}

DataFacts TranslationText::facts() const {
  DataFacts f;
  f.source_vocab_size = source_.vocab_size();
  f.target_vocab_size = target_.vocab_size();
  f.bos_id = bos_id_;
  f.eos_id = eos_id_;
  f.pad_id = kPadId;
  return f;
}

std::vector<int64_t> TranslationText::source_ids(const std::string& raw) const { return source_.encode(raw); }

std::vector<int64_t> TranslationText::target_ids(const std::string& raw) const { return target_.encode(raw); }

std::vector<std::vector<int64_t>> TranslationText::sample_source_ids(const std::vector<std::string>& raws,
                                                                     uint64_t seed) const {
  return source_.sample(raws, static_cast<int>(data_.sentencepiece_sampling_nbest),
                        static_cast<float>(data_.sentencepiece_sampling_alpha), side_seed(seed, true));
}

std::vector<std::vector<int64_t>> TranslationText::sample_target_ids(const std::vector<std::string>& raws,
                                                                     uint64_t seed) const {
  return target_.sample(raws, static_cast<int>(data_.sentencepiece_sampling_nbest),
                        static_cast<float>(data_.sentencepiece_sampling_alpha), side_seed(seed, false));
}

std::vector<int64_t> TranslationText::encode_source(const std::string& sentence, int64_t limit,
                                                    std::vector<std::string>* tokens, bool truncate) const {
  std::vector<int64_t> ids;
  for (const auto& token : split_tokens(source_.tokens(sentence))) {
    // One id per character; without an OOV token unknown characters are dropped (Keras).
    const std::vector<int64_t> id = source_.vocab().encode(token);
    if (id.empty()) continue;
    ids.push_back(id.front());
    if (tokens) tokens->push_back(token);
  }
  const bool table = limit > 0;  // a position table; else zoo's cap
  const auto most = static_cast<size_t>(table ? limit : kMaxSourceTokensWithoutPositions);
  if (most > 1 && ids.size() > most) {
    if (!truncate)
      throw Error(cat("a source sentence of ", ids.size(), " tokens (its <start>/<end> markers included) is longer than the ",
                      most, " this model reads (",
                      table ? "model.max_position_embeddings" : "zoo's cap for a model without a position table",
                      "): '", utf8_prefix(sentence, 60),
                      sentence.size() > 60 ? "...'" : "'",
                      "; set data.truncate_source=true (zoo translate --truncate) to cut it"));
    const int64_t end = ids.back();  // keep <end>
    ids.resize(most - 1);
    ids.push_back(end);
    if (tokens) {
      const std::string last = tokens->back();
      tokens->resize(most - 1);
      tokens->push_back(last);
    }
  }
  return ids;
}

std::optional<std::vector<int64_t>> TranslationText::encode_target(const std::string& sentence, std::string* why) const {
  const std::vector<std::string> words = inner_tokens(target_.tokens(sentence));
  if (words.empty()) {
    if (why) *why = "no words left after preprocessing (only digits or symbols?)";
    return std::nullopt;
  }
  const Vocab& vocab = target_.vocab();
  std::vector<int64_t> ids;
  for (const auto& w : words) {
    const bool usable = vocab.contains(w) && vocab.index(w) < vocab.size() &&
                        vocab.index(w) != vocab.oov_index();
    if (!usable) {
      if (why) *why = cat("the word '", w, "' is not in the target vocabulary");
      return std::nullopt;
    }
    ids.push_back(vocab.index(w));
  }
  return ids;
}

std::string TranslationText::reference_text(const std::string& english) {
  std::string out;
  for (const auto& w : inner_tokens(preprocess_eng(english))) {
    if (!out.empty()) out += ' ';
    out += w;
  }
  return out;
}

std::string TranslationText::detokenize(const std::vector<int64_t>& ids) const { return target_.decode(ids); }

std::vector<std::string> TranslationText::target_tokens(const std::vector<int64_t>& ids) const {
  const Vocab& vocab = target_.vocab();
  std::vector<std::string> out;
  for (int64_t id : ids) {
    const bool known = id > 0 && id < vocab.size();  // the model's output range
    const std::string word = known ? vocab.word(id) : std::string();
    out.push_back(word.empty() ? (id == kPadId ? "<pad>" : data_.oov_token) : word);
  }
  return out;
}

void TranslationText::save(const std::string& dir, int64_t max_positions) const {
  source_.save(dir);
  target_.save(dir);
  if (data_.joint_vocabulary && source_.subwords() && target_.subwords()) save_marian_tokenizer(dir, max_positions);
}

// Hugging Face's MarianTokenizer reads source.spm / target.spm (written above), vocab.json
// (piece -> id) and tokenizer_config.json. It encodes a source as its pieces' ids + </s>,
// which is how SideTokenizer frames SentencePiece sources; </s>, <unk> and <pad> name our
// <end>, OOV and padding ids.
void TranslationText::save_marian_tokenizer(const std::string& dir, int64_t max_positions) const {
  const Vocab& source_vocab = source_.vocab();
  json vocab = json::object();
  for (int64_t id = 1; id < source_vocab.size(); ++id)
    if (!source_vocab.word(id).empty()) vocab[source_vocab.word(id)] = id;
  vocab["</s>"] = eos_id_;
  vocab["<unk>"] = source_vocab.oov_index();
  vocab["<pad>"] = kPadId;
  const json config{{"tokenizer_class", "MarianTokenizer"}, {"source_lang", "zh"}, {"target_lang", "en"},
                    {"separate_vocabs", false}, {"eos_token", "</s>"}, {"unk_token", "<unk>"},
                    {"pad_token", "<pad>"}, {"model_max_length", std::max<int64_t>(max_positions, 1)}};
  write_file_checked((fs::path(dir) / "vocab.json").string(), vocab.dump(2) + "\n");
  write_file_checked((fs::path(dir) / "tokenizer_config.json").string(), config.dump(2) + "\n");
}

}  // namespace zoo::data
