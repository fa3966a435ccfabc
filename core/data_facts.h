#pragma once
// What a data set tells the model it feeds, typed: vocabulary sizes, special ids, class names.
// The data side reports them; models::complete_model_section (models/registry.h) writes them
// into a model section under the family's own keys by one rule, so that no task edits model
// keys by hand and every task checks a vocabulary against its model alike.
#include <cstdint>
#include <string>
#include <vector>

namespace zoo {

struct DataFacts {
  /// Where the facts come from, for messages ("the training split of data.path", "DIR/vocab.txt").
  std::string origin;
  /// What a mismatch with a size the config gives means ("" : the config should leave the key
  /// out, it is filled in from the data).
  std::string mismatch_hint;

  /// Ids of the one vocabulary (0: none). The model's table must have exactly as many rows, or
  /// at least as many with vocab_size_at_least (a language model's table may be padded, as
  /// GPT-2's 50,257 ids to 50,304 rows).
  int64_t vocab_size = 0;
  bool vocab_size_at_least = false;
  /// Translation's two vocabularies (0: none).
  int64_t source_vocab_size = 0, target_vocab_size = 0;
  /// Special ids (-1: the data has none). A section that gives one must agree.
  int64_t bos_id = -1, eos_id = -1;
  /// The vocabulary's padding id and the class names (empty: none): the data decides them,
  /// the section gets them as they are.
  int64_t pad_id = -1;
  std::vector<std::string> labels;
};

}  // namespace zoo
