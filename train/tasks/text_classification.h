#pragma once
// Text classification with BERT (IMDB sentiment; any folder-per-label tree or two-column CSV):
// "[CLS] tokens [SEP]" cut to data.max_length -> BertForSequenceClassification -> the label.
// Tokens: document 000's basic_english words looked up in a vocab.txt (what
// bert_pretraining trains with), or BERT's WordPiece over a vocab.txt (a Hugging Face BERT).
// The vocabulary is saved as vocab.txt in every checkpoint; fine-tuning takes it, and the
// body's weights, from the pretrained checkpoint (train.init_from).
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/reviews.h"
#include "data/wordpiece.h"
#include "models/bert.h"
#include "train/capabilities.h"
#include "train/task.h"

namespace zoo {

struct TextClassificationDataOptions {
  std::string path;       // a folder with train/ and test/ label folders, or a training CSV
  std::string test_path;  // with a CSV: the test CSV
  std::vector<std::string> labels = {"neg", "pos"};
  std::string train_folder = "train", test_folder = "test";
  std::string text_column = "review", label_column = "sentiment";
  std::string tokenizer = "basic_english";
  std::string vocab;  // vocab.txt, or a directory holding one; "" = the init_from checkpoint's
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

class TextClassificationTask : public Task, public TextClassifier {
 public:
  TextClassificationTask(const json& config, const TaskContext& context, const std::string& checkpoint_dir = "");

  std::shared_ptr<torch::nn::Module> model() override { return model_.ptr(); }
  void prepare_training(const std::string& output_dir) override;
  int64_t num_train_examples() const override { return static_cast<int64_t>(train_.size()); }
  /// The default seeded permutation, or batches of similar lengths with data.group_by_length.
  std::vector<std::vector<int64_t>> epoch_plan(uint64_t seed, int64_t epoch, int64_t batch_size) const override;
  /// input_ids, attention_mask, labels.
  Batch make_train_batch(const std::vector<int64_t>& indices, uint64_t seed) const override;
  Loss loss(const Batch& batch) override;
  /// "valid" or "test", in batches of similar lengths.
  std::vector<std::vector<int64_t>> eval_plan(const std::string& split, int64_t batch_size) override;
  Batch make_eval_batch(const std::string& split, const std::vector<int64_t>& examples) const override;
  /// loss_sum, correct, examples.
  Metrics eval_sums(const std::string& split, const Batch& batch) override;
  /// loss, accuracy, examples.
  Metrics metrics_from_sums(const Metrics& sums) const override;
  std::string default_best_metric() const override { return "accuracy"; }
  void save_assets(const std::string& dir) const override;

  /// A text as the ids the model reads: [CLS] tokens [SEP], cut to data.max_length.
  std::vector<int64_t> encode(const std::string& text) const;
  // TextClassifier
  TextClassifier* text_classifier() override { return this; }
  std::vector<std::string> label_names() const override { return data_.labels; }
  torch::Tensor text_probabilities(const std::vector<std::string>& texts) override;

 private:
  struct Example {
    std::vector<int64_t> ids;
    int64_t label;
  };
  void load_vocab(const std::string& where);
  std::vector<data::LabeledText> read(const std::string& split) const;
  std::vector<Example> examples_of(const std::vector<data::LabeledText>& texts) const;
  Batch batch_of(const std::vector<Example>& examples, const std::vector<int64_t>& indices) const;
  TextClassificationDataOptions data_;
  std::unique_ptr<data::WordPiece> vocab_;  // the vocab.txt; also the tokenizer with data.tokenizer wordpiece
  int64_t cls_ = 0, sep_ = 0, pad_ = 0;
  std::vector<Example> train_, valid_;
  std::vector<Example> test_;                      // read by eval_plan("test")
  std::string eval_split_;                         // the split eval_plan() planned last,
  const std::vector<Example>* eval_examples_ = nullptr;  // and its examples (valid_ or test_)
  models::BertForSequenceClassification model_{nullptr};
};

}  // namespace zoo
