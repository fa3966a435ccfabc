#include "data/classification_text.h"

#include <algorithm>

#include "data/basic_english_tokenizer.h"
#include "data/wordpiece_tokenizer.h"

namespace zoo::data {

ClassificationTextEncoder::ClassificationTextEncoder(const std::string& where, const TextClassificationDataOptions& data)
    : max_length_(data.max_length), head_tail_(data.truncation == "head_tail") {
  const bool wordpiece = data.tokenizer == "wordpiece";
  path_ = wordpiece ? WordPieceTokenizer::file(where) : WordPiece::vocab_file(where);
  tokenizer_ = wordpiece ? std::unique_ptr<Tokenizer>(WordPieceTokenizer::load(where)) : BasicEnglishTokenizer::load(where);
  for (auto [token, id] : {std::pair{"[CLS]", &cls_}, {"[SEP]", &sep_}, {"[PAD]", &pad_}}) {
    *id = tokenizer_->token_id(token);
    if (*id < 0) throw Error(cat(path_, ": the vocabulary has no ", token, " token"));
  }
  check_tokenizer_fingerprint(*tokenizer_, data.tokenizer_fingerprint, path_);
}

std::vector<int64_t> ClassificationTextEncoder::encode(const std::string& text) const {
  std::vector<int64_t> ids{cls_};
  for (int64_t id : tokenizer_->encode(text)) ids.push_back(id);
  const auto room = static_cast<size_t>(max_length_ - 2), words = ids.size() - 1;
  if (words > room && head_tail_) {
    const size_t head = room / 4;  // ids[1 .. 1 + head) and the last room - head
    ids.erase(ids.begin() + 1 + static_cast<std::ptrdiff_t>(head), ids.end() - static_cast<std::ptrdiff_t>(room - head));
  } else if (words > room) {
    ids.resize(room + 1);
  }
  ids.push_back(sep_);
  return ids;
}

std::pair<torch::Tensor, torch::Tensor> ClassificationTextEncoder::pad(
    const std::vector<const std::vector<int64_t>*>& rows) const {
  int64_t width = 1;
  for (const auto* r : rows) width = std::max<int64_t>(width, static_cast<int64_t>(r->size()));
  const auto n = static_cast<int64_t>(rows.size());
  auto ids = torch::full({n, width}, pad_, torch::kLong), mask = torch::zeros({n, width}, torch::kLong);
  for (int64_t r = 0; r < n; ++r) {
    const auto len = static_cast<int64_t>(rows[r]->size());
    ids[r].narrow(0, 0, len).copy_(torch::tensor(*rows[r], torch::kLong));
    mask[r].narrow(0, 0, len).fill_(1);
  }
  return {ids, mask};
}

DataFacts ClassificationTextEncoder::facts(const std::vector<std::string>& labels) const {
  DataFacts f;
  f.origin = path_;
  f.vocab_size = tokenizer_->vocab_size();
  f.pad_id = pad_;
  f.labels = labels;
  return f;
}

// model_max_length is the length this model was trained to read: Hugging Face's pipelines cut
// to it, and so does zoo when it reads the directory back (io/checkpoint_assets.cc).
void ClassificationTextEncoder::save(const std::string& dir) const {
  tokenizer_->save(dir);
  nlohmann::json fields{{"model_max_length", max_length_}};
  if (head_tail_) fields["zoo_truncation"] = "head_tail";  // Hugging Face has no head-and-tail cut
  add_to_tokenizer_config(dir, fields);
}

}  // namespace zoo::data
