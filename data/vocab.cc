#include "data/vocab.h"
#include "core/output_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>
#include <unordered_set>

#include <nlohmann/json.hpp>

#include "data/text.h"
#include "core/error.h"

namespace zoo::data {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr const char* kFormat = "zoo-vocab";
constexpr int kVersion = 1;

const std::string& empty_word() {
  static const std::string empty;
  return empty;
}

// Keras text_to_word_sequence(text, filters='', lower=True, split=' ').
std::vector<std::string> words_of(const std::string& text) { return split_tokens(to_lower(text)); }

// Reads [[string, integer], ...]; `what` names the key for messages.
std::vector<std::pair<std::string, int64_t>> read_pairs(const ordered_json& j,
                                                        const std::string& path, const char* what) {
  if (!j.is_array()) throw Error(cat("vocab file '", path, "': \"", what, "\" must be an array"));
  std::vector<std::pair<std::string, int64_t>> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i) {
    const ordered_json& e = j[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number_integer()) {
      throw Error(cat("vocab file '", path, "': entry ", i, " of \"", what,
                      "\" must be [word, integer], got ", e.dump()));
    }
    out.emplace_back(e[0].get<std::string>(), e[1].get<int64_t>());
  }
  return out;
}

}  // namespace

Vocab::Vocab() : words_(1) {}

Vocab Vocab::fit(const std::vector<std::string>& texts, int64_t num_words, std::string oov_token) {
  if (num_words < 0)
    throw Error(cat("vocab: num_words must be >= 0 (0 = no limit), got ", num_words));
  Vocab v;
  v.num_words_ = num_words;
  v.oov_token_ = std::move(oov_token);

  // word_counts: an OrderedDict in first-appearance order.
  std::unordered_map<std::string, size_t> position;
  for (const std::string& text : texts) {
    for (std::string& w : words_of(text)) {
      const auto [it, inserted] = position.emplace(w, v.counts_.size());
      if (inserted) {
        v.counts_.emplace_back(std::move(w), 1);
      } else {
        ++v.counts_[it->second].second;
      }
    }
  }

  // sorted(..., key=count, reverse=True) is stable: ties keep first appearance.
  std::vector<size_t> order(v.counts_.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return v.counts_[a].second > v.counts_[b].second; });

  // dict(zip(sorted_voc, range(1, ...))): a repeated word (only the OOV token can repeat) keeps
  // its last index.
  std::vector<std::string> sorted_voc;
  sorted_voc.reserve(order.size() + 1);
  if (!v.oov_token_.empty()) sorted_voc.push_back(v.oov_token_);
  for (size_t i : order) sorted_voc.push_back(v.counts_[i].first);
  std::unordered_map<std::string, int64_t> last;
  for (size_t i = 0; i < sorted_voc.size(); ++i) last[sorted_voc[i]] = static_cast<int64_t>(i) + 1;
  std::vector<std::pair<std::string, int64_t>> word_index;
  word_index.reserve(last.size());
  for (size_t i = 0; i < sorted_voc.size(); ++i) {
    if (last[sorted_voc[i]] == static_cast<int64_t>(i) + 1) {
      word_index.emplace_back(sorted_voc[i], static_cast<int64_t>(i) + 1);
    }
  }
  v.build_index(word_index);
  return v;
}

Vocab Vocab::with_words(const std::vector<std::string>& words) const {
  if (num_words_ > 0) throw Error(cat("vocab: cannot add words beyond num_words (", num_words_, ")"));
  Vocab v = *this;
  for (const std::string& word : words)
    for (std::string& w : words_of(word))
      if (v.index_.emplace(w, static_cast<int64_t>(v.words_.size())).second) v.words_.push_back(std::move(w));
  return v;
}

void Vocab::build_index(const std::vector<std::pair<std::string, int64_t>>& word_index) {
  int64_t max_index = 0;
  for (const auto& [w, i] : word_index) max_index = std::max(max_index, i);
  words_.assign(static_cast<size_t>(max_index) + 1, std::string());
  index_.clear();
  index_.reserve(word_index.size());
  for (const auto& [w, i] : word_index) {
    words_[i] = w;
    index_.emplace(w, i);
  }
  const auto it = oov_token_.empty() ? index_.end() : index_.find(oov_token_);
  oov_index_ = it == index_.end() ? 0 : it->second;
}

std::vector<int64_t> Vocab::encode(const std::string& text) const {
  std::vector<int64_t> out;
  for (const std::string& w : words_of(text)) {
    const auto it = index_.find(w);
    if (it != index_.end()) {
      if (num_words_ > 0 && it->second >= num_words_) {
        if (oov_index_ > 0) out.push_back(oov_index_);
      } else {
        out.push_back(it->second);
      }
    } else if (oov_index_ > 0) {
      out.push_back(oov_index_);
    }
  }
  return out;
}

std::vector<std::vector<int64_t>> Vocab::encode_all(const std::vector<std::string>& texts) const {
  std::vector<std::vector<int64_t>> out;
  out.reserve(texts.size());
  for (const std::string& t : texts) out.push_back(encode(t));
  return out;
}

std::string Vocab::decode(const std::vector<int64_t>& ids) const {
  std::string out;
  const auto emit = [&out](const std::string& w) {
    if (!out.empty()) out += ' ';
    out += w;
  };
  for (int64_t id : ids) {
    if (id == 0) continue;
    const bool known = id > 0 && id < static_cast<int64_t>(words_.size()) && !words_[id].empty();
    if (known && !(num_words_ > 0 && id >= num_words_)) {
      emit(words_[id]);
    } else if (oov_index_ > 0) {
      emit(oov_token_);
    }
  }
  return out;
}

int64_t Vocab::index(const std::string& word) const {
  const auto it = index_.find(word);
  if (it == index_.end()) throw Error(cat("vocab: the word '", word, "' is not in the vocabulary"));
  return it->second;
}

bool Vocab::contains(const std::string& word) const { return index_.count(word) > 0; }

const std::string& Vocab::word(int64_t index) const {
  if (index < 0 || index >= static_cast<int64_t>(words_.size())) {
    throw Error(cat("vocab: index ", index, " is out of range [0, ", words_.size(), ")"));
  }
  return index == 0 ? empty_word() : words_[index];
}

int64_t Vocab::size() const {
  int64_t n = static_cast<int64_t>(words_.size());
  if (num_words_ > 0) n = std::min(n, num_words_);
  return std::max(n, oov_index_ + 1);
}

void Vocab::save(const std::string& path) const {
  ordered_json j;
  j["format"] = kFormat;
  j["version"] = kVersion;
  j["lower"] = true;
  j["num_words"] = num_words_;
  j["oov_token"] = oov_token_;
  ordered_json wi = ordered_json::array();
  for (size_t i = 1; i < words_.size(); ++i) {
    if (!words_[i].empty()) wi.push_back(ordered_json::array({words_[i], i}));
  }
  j["word_index"] = std::move(wi);
  ordered_json wc = ordered_json::array();
  for (const auto& [w, c] : counts_) wc.push_back(ordered_json::array({w, c}));
  j["word_counts"] = std::move(wc);

  write_file_checked(path, j.dump(1) + "\n");
}

Vocab Vocab::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat("cannot open vocab file '", path, "': ", std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  ordered_json j;
  try {
    j = ordered_json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(cat("vocab file '", path, "' is not valid JSON: ", e.what()));
  }
  const auto bad = [&path](const std::string& what) {
    return Error(cat("vocab file '", path, "': ", what));
  };
  if (!j.is_object()) throw bad("expected a JSON object");
  if (j.value("format", std::string()) != kFormat) {
    throw bad(cat("\"format\" must be \"", kFormat, "\""));
  }
  if (!j.contains("version") || j["version"] != kVersion) {
    throw bad(cat("unsupported \"version\" (this build reads version ", kVersion, ")"));
  }
  if (!j.contains("lower") || j["lower"] != true) throw bad("\"lower\" must be true");
  if (!j.contains("num_words") || !j["num_words"].is_number_integer() ||
      j["num_words"].get<int64_t>() < 0) {
    throw bad("\"num_words\" must be an integer >= 0");
  }
  if (!j.contains("oov_token") || !j["oov_token"].is_string()) {
    throw bad("\"oov_token\" must be a string");
  }
  if (!j.contains("word_index")) throw bad("missing \"word_index\"");
  if (!j.contains("word_counts")) throw bad("missing \"word_counts\"");

  Vocab v;
  v.num_words_ = j["num_words"].get<int64_t>();
  v.oov_token_ = j["oov_token"].get<std::string>();
  const auto word_index = read_pairs(j["word_index"], path, "word_index");
  v.counts_ = read_pairs(j["word_counts"], path, "word_counts");

  std::unordered_set<std::string> seen_words;
  std::unordered_set<int64_t> seen_indices;
  const auto n = static_cast<int64_t>(word_index.size());
  for (const auto& [w, i] : word_index) {
    if (w.empty() || find_invalid_utf8(w) != std::string::npos) {
      throw bad(cat("word_index holds an empty or invalid UTF-8 word"));
    }
    // Indices are 1..n, or up to n + 1 when index 1 is the unused slot of the OOV quirk.
    if (i < 1 || i > n + 1) throw bad(cat("index ", i, " of '", w, "' is out of range"));
    if (!seen_words.insert(w).second) throw bad(cat("word '", w, "' appears twice"));
    if (!seen_indices.insert(i).second) throw bad(cat("index ", i, " appears twice"));
  }
  if (!v.oov_token_.empty() && !seen_words.count(v.oov_token_)) {
    throw bad(cat("oov_token '", v.oov_token_, "' has no index in word_index"));
  }
  std::unordered_set<std::string> counted;
  for (const auto& [w, c] : v.counts_) {
    if (c < 1) throw bad(cat("word_counts: count of '", w, "' must be >= 1"));
    if (!seen_words.count(w)) throw bad(cat("word_counts: '", w, "' is not in word_index"));
    if (!counted.insert(w).second) throw bad(cat("word_counts: '", w, "' appears twice"));
  }
  v.build_index(word_index);
  return v;
}

torch::Tensor pad_sequences(const std::vector<std::vector<int64_t>>& seqs, int64_t maxlen,
                            Truncate truncating) {
  int64_t len = maxlen;
  if (len < 0) {
    len = 0;
    for (const auto& s : seqs) len = std::max(len, static_cast<int64_t>(s.size()));
  }
  const auto n = static_cast<int64_t>(seqs.size());
  torch::Tensor out = torch::zeros({n, len}, torch::kInt64);
  int64_t* data = out.data_ptr<int64_t>();
  for (int64_t r = 0; r < n; ++r) {
    const auto& s = seqs[r];
    const int64_t size = static_cast<int64_t>(s.size());
    const int64_t keep = std::min(size, len);
    const int64_t from = truncating == Truncate::kPre ? size - keep : 0;
    std::copy(s.begin() + from, s.begin() + from + keep, data + r * len);
  }
  return out;
}

}  // namespace zoo::data
