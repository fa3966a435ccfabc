// BERT's tokenizer (data/wordpiece.h) against Hugging Face's BertTokenizer algorithm re-written
// over Python's unicodedata (tests/py/bert_tokenizer_ref.py), and its vocab.txt errors.
#include "data/wordpiece.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "test_util.h"

namespace zoo::data {
namespace {

std::vector<std::string> vocab() {
  return {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "un", "##believ", "##able",
          "great", "!", ",", ".", "'", "s", "cafe", "movie", "##s", "我", "喜", "欢", "a", "##b", "##c", "don", "t"};
}

TEST(WordPiece, TokensMatchTheBertTokenizerAlgorithm) {
  test::TempDir dir;
  const WordPiece wp(vocab());
  wp.save(dir / "vocab.txt");
  const std::vector<std::string> lines = {
      "The film was unbelievable!",
      "CAFÉ movies, the film's great.",
      "我喜欢 the film\t\tdon't",
      "abc abcd xyz unbelievablex",
      std::string("zero\xE2\x80\x8Bwidth and\xC2\xA0nbsp"),
      std::string(120, 'a'),
      "",
  };
  std::string input;
  for (const auto& l : lines) input += l + "\n";
  test::write_file(dir / "in.txt", input);
  auto r = test::run(std::string(ZOO_PYTHON) + " " + ZOO_TESTS_DIR + "/py/bert_tokenizer_ref.py " + (dir / "vocab.txt") +
                     " < " + (dir / "in.txt"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> expected;
  std::string line;
  std::istringstream out(r.output);
  while (std::getline(out, line)) expected.push_back(line);
  for (size_t i = 0; i < lines.size(); ++i) {
    std::string ours;
    for (const auto& t : wp.tokenize(lines[i])) ours += (ours.empty() ? "" : " ") + t;
    ASSERT_LT(i, expected.size());
    EXPECT_EQ(ours, expected[i]) << lines[i];
  }
  EXPECT_EQ(wp.tokenize("unbelievable"), (std::vector<std::string>{"un", "##believ", "##able"}));
  EXPECT_EQ(wp.encode("the xyz"), (std::vector<int64_t>{5, 1}));
}

TEST(WordPiece, VocabularyFilesRoundTripAndBadOnesAreNamed) {
  test::TempDir dir;
  WordPiece(vocab()).save(dir / "vocab.txt");
  const WordPiece back = WordPiece::load(dir / "vocab.txt");
  EXPECT_EQ(back.size(), static_cast<int64_t>(vocab().size()));
  EXPECT_EQ(back.token(9), "##believ");
  test::write_file(dir / "bad.txt", "[PAD]\nthe\nthe\n[UNK]\n");
  try {
    WordPiece::load(dir / "bad.txt");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt: WordPiece vocabulary: 'the' appears twice"), std::string::npos)
        << e.what();
  }
  test::write_file(dir / "nounk.txt", "[PAD]\nthe\n");
  EXPECT_THROW(WordPiece::load(dir / "nounk.txt"), Error);
  EXPECT_THROW(WordPiece::load(dir / "missing.txt"), Error);
}

}  // namespace
}  // namespace zoo::data
