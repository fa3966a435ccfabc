#pragma once
// Learning a WordPiece vocabulary (BERT's vocab.txt) from text files, as Hugging Face's
// WordPieceTrainer does: BERT's basic tokenizer splits the text into words, then byte-pair
// merges over the words' characters, with "##" marking a piece that continues a word, until
// the vocabulary has `vocab_size` tokens. The vocabulary is the specials [PAD] [UNK] [CLS]
// [SEP] [MASK], then every character as a word start and as a continuation ("##e"), in code
// point order, then the merged pieces in the order they were learnt.
#include <cstdint>
#include <string>
#include <vector>

namespace zoo::data {

struct WordPieceTrainOptions {
  int64_t vocab_size = 30522;  // BERT's
  int64_t min_frequency = 2;   // a pair seen fewer times is never merged
  bool lower_case = true;      // uncased: lower-case and strip accents first
};

/// The tokens of the vocabulary, in id order. Files are read line by line; invalid UTF-8 and
/// empty files are zoo::Errors naming the file, line and byte. Prints progress to stderr.
std::vector<std::string> learn_wordpiece(const std::vector<std::string>& files, const WordPieceTrainOptions& options);

}  // namespace zoo::data
