#pragma once
// Text classification's data side: the "data" section (where the labelled texts are, how they
// are cut), and how a text becomes the ids a BERT sequence classifier reads: "[CLS] tokens
// [SEP]", cut to data.max_length, the tokens from one of data/tokenizer.h's tokenizers over a
// vocab.txt: document 000's basic_english words (word, what bert_pretraining trains with) or
// BERT's WordPiece (a Hugging Face BERT). Training and inference (predict/text_classifier.h)
// encode through the same class.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/data_facts.h"
#include "core/options.h"
#include "data/tokenizer.h"

namespace zoo::data {

struct TextClassificationDataOptions {
  std::string path;       // a folder with train/ and test/ label folders, or a training CSV
  std::string test_path;  // with a CSV: the test CSV
  std::vector<std::string> labels = {"neg", "pos"};
  std::string train_folder = "train", test_folder = "test";
  std::string text_column = "review", label_column = "sentiment";
  std::string tokenizer = "basic_english";
  std::string vocab;  // vocab.txt, or a directory holding one; "" = the init_from checkpoint's
  std::string tokenizer_fingerprint;  // filled in by training
  int64_t max_length = 256;
  std::string truncation = "head";
  int64_t valid_size = 1000;
  bool group_by_length = false;
  int64_t split_seed = 1234;
  int64_t max_train_samples = 0, max_eval_samples = 0;
  bool strict = false;
  bool replace_invalid_utf8 = false;

  template <class V>
  void fields(V& v) {
    v("path", path,
      "a folder with <train_folder>/<label>/*.txt and <test_folder>/<label>/*.txt (aclImdb), or a training CSV; "
      "looked up in the data home unless it starts with /, ./, ../ or ~/");
    v("test_path", test_path, "with a CSV path: the test CSV (\"\" = no test split)");
    v("labels", labels, "class names in index order: the label folders, or the label column's values");
    v("train_folder", train_folder, "with a folder path: the training sub-folder");
    v("test_folder", test_folder, "with a folder path: the test sub-folder");
    v("text_column", text_column, "with a CSV: the text column");
    v("label_column", label_column, "with a CSV: the label column (values from data.labels; IMDB: positive/negative)");
    v("tokenizer", tokenizer,
      "basic_english (document 000's words, what bert_pretraining uses) | wordpiece (BERT's, for a Hugging Face vocab.txt)",
      one_of({"basic_english", "wordpiece"}));
    v("vocab", vocab, "vocab.txt or a directory with one; \"\" = the train.init_from checkpoint's");
    v("tokenizer_fingerprint", tokenizer_fingerprint,
      "filled in by training: the tokenizer's fingerprint; a checkpoint refuses another vocabulary");
    v("max_length", max_length, "tokens per text, [CLS] and [SEP] included (longer texts are cut)", at_least(3));
    v("truncation", truncation,
      "how a longer text is cut: head keeps its beginning; head_tail keeps the first quarter of the room and the "
      "last three quarters (its end: where reviews give their verdict; Sun et al. 2019 found it best on IMDB)",
      one_of({"head", "head_tail"}));
    v("valid_size", valid_size, "training texts held out for validation", at_least(0));
    v("group_by_length", group_by_length,
      "training batches of texts of similar lengths (Hugging Face's group_by_length): the texts are shuffled, "
      "sorted by length within runs of 100 batches, cut into batches, and the batches shuffled; less padding, "
      "so faster steps when the lengths vary");
    v("split_seed", split_seed, "seed of the validation hold-out", at_least(0));
    v("max_train_samples", max_train_samples, "use N training texts; 0 = all", at_least(0));
    v("max_eval_samples", max_eval_samples, "evaluate on N texts; 0 = all", at_least(0));
    v("strict", strict, "a bad text or row stops the run instead of being skipped and counted");
    v("replace_invalid_utf8", replace_invalid_utf8, "replace invalid UTF-8 bytes with U+FFFD instead");
  }
};

class ClassificationTextEncoder {
 public:
  /// The vocab.txt at `where` (the file, or a directory holding one; a directory's
  /// tokenizer_config.json says whether WordPiece lower-cases), which must have [CLS], [SEP],
  /// [PAD] and [UNK], and whose fingerprint must be data.tokenizer_fingerprint when that is
  /// set; errors name the file.
  ClassificationTextEncoder(const std::string& where, const TextClassificationDataOptions& data);

  /// [CLS] tokens [SEP], cut to data.max_length as data.truncation says.
  std::vector<int64_t> encode(const std::string& text) const;
  /// Rows of ids -> input_ids (right-padded with [PAD]) and attention_mask, int64 (rows, longest).
  std::pair<torch::Tensor, torch::Tensor> pad(const std::vector<const std::vector<int64_t>*>& rows) const;
  int64_t vocab_size() const { return tokenizer_->vocab_size(); }
  int64_t pad_id() const { return pad_; }
  std::string fingerprint() const { return tokenizer_->fingerprint(); }
  /// What the vocabulary tells the model: its size and [PAD] id, and `labels`; messages name
  /// the vocab.txt.
  DataFacts facts(const std::vector<std::string>& labels) const;
  /// The tokenizer's files into `dir`: vocab.txt, tokenizer_config.json, and Hugging Face's
  /// tokenizer.json where it encodes alike (WordPiece; basic_english words have no such form).
  void save(const std::string& dir) const;

 private:
  std::string path_;
  std::unique_ptr<Tokenizer> tokenizer_;
  int64_t max_length_ = 0;
  bool head_tail_ = false;
  int64_t cls_ = 0, sep_ = 0, pad_ = 0;
};

}  // namespace zoo::data
