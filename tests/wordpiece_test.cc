// BERT's tokenizer (data/wordpiece.h) against Hugging Face's BertTokenizer algorithm re-written
// over Python's unicodedata (tests/py/bert_tokenizer_ref.py), and its vocab.txt errors.
#include "data/wordpiece.h"

#include <filesystem>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/tokenizer.h"
#include "data/wordpiece_tokenizer.h"
#include "data/wordpiece_trainer.h"
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

// zoo tokenizer train --model-type wordpiece: the same vocabulary as Hugging Face's trainer
// re-written naively in Python (tests/py/wordpiece_train_ref.py), through the command line.
TEST(WordPieceTraining, LearnsTheVocabularyOfTheReferenceTrainer) {
  test::TempDir dir;
  std::string a, b;
  const std::vector<std::string> words = {"unbelievable", "believe", "believer", "able", "table", "fable", "the",
                                          "then", "there", "film", "films", "filming", "café", "Movie", "movies",
                                          "我", "喜欢", "don't", "rewatch", "watching"};
  for (int i = 0; i < 300; ++i) {
    (i % 3 ? a : b) += words[(i * 7) % words.size()] + (i % 11 == 0 ? ".\n" : i % 5 == 0 ? ", " : " ");
  }
  test::write_file(dir / "a.txt", a + "\n");
  test::write_file(dir / "b.txt", b);
  for (int size : {50, 70, 400}) {
    const std::string out = dir / ("tok" + std::to_string(size));
    auto r = test::run_zoo("tokenizer train --model-type wordpiece --vocab-size " + std::to_string(size) + " --input " +
                           (dir / "a.txt") + " --input " + (dir / "b.txt") + " --out " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = test::run(std::string(ZOO_PYTHON) + " " + ZOO_TESTS_DIR + "/py/wordpiece_train_ref.py " + std::to_string(size) +
                  " 2 " + (dir / "a.txt") + " " + (dir / "b.txt"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> expected;
    std::istringstream lines(r.output);
    for (std::string line; std::getline(lines, line);) expected.push_back(line);
    const WordPiece learnt = WordPiece::load(out + "/vocab.txt");
    EXPECT_EQ(learnt.tokens(), expected) << "vocab size " << size;
    if (size == 400) {  // every pair seen twice is merged: frequent words are whole tokens
      EXPECT_LT(learnt.size(), 400);
      EXPECT_EQ(learnt.tokenize("Unbelievable films"), (std::vector<std::string>{"unbelievable", "films"}));
    } else {
      EXPECT_EQ(learnt.size(), size);
    }
  }
  // As a tokenizer directory: BertTokenizer's files, encode and decode through the CLI.
  const std::string tok = dir / "tok400";
  EXPECT_TRUE(std::filesystem::exists(tok + "/tokenizer_config.json"));
  auto loaded = load_tokenizer(tok);
  EXPECT_EQ(loaded->kind(), "wordpiece");
  const auto ids = loaded->encode("The films, unbelievable");
  EXPECT_EQ(loaded->decode(ids), "the films , unbelievable");
  auto r = test::run_zoo("tokenizer encode --tokenizer " + tok + " 'the film'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find(std::to_string(loaded->encode("the")[0]) + " "), std::string::npos) << r.output;
}

TEST(WordPieceTraining, BadInputIsNamed) {
  test::TempDir dir;
  test::write_file(dir / "ok.txt", "fine words here\n");
  test::write_file(dir / "bad.txt", "good line\nbad \xFF byte\n");
  test::write_file(dir / "empty.txt", "");
  WordPieceTrainOptions o;
  o.vocab_size = 100;
  try {
    learn_wordpiece({dir / "ok.txt", dir / "bad.txt"}, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.txt:2: invalid UTF-8 at byte 14"), std::string::npos) << e.what();
  }
  try {
    learn_wordpiece({dir / "empty.txt"}, o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty.txt: empty file"), std::string::npos) << e.what();
  }
  o.vocab_size = 10;  // fewer than the alphabet
  EXPECT_THROW(learn_wordpiece({dir / "ok.txt"}, o), Error);
}

// Hugging Face's tokenizer.json (BertTokenizerFast's): zoo writes it beside vocab.txt, and a
// directory holding it alone loads as the same WordPiece (vocabulary by id, the normalizer's
// lowercase), with the same ids; its template frames a text as [CLS] A [SEP].
TEST(WordPiece, TokenizerJsonIsWrittenAndReadAlone) {
  test::TempDir dir;
  for (bool lower : {true, false}) {
    const std::string out = dir / (lower ? "uncased" : "cased");
    std::filesystem::create_directories(out);
    WordPieceTokenizer(WordPiece(vocab(), lower)).save(out);
    const auto j = nlohmann::json::parse(test::read_file(out + "/tokenizer.json"));
    EXPECT_EQ(j["model"]["type"], "WordPiece");
    EXPECT_EQ(j["model"]["vocab"]["##believ"], 9);
    EXPECT_EQ(j["normalizer"]["lowercase"], lower);
    EXPECT_EQ(j["post_processor"]["single"][0]["SpecialToken"]["id"], "[CLS]");
    EXPECT_EQ(j["post_processor"]["special_tokens"]["[SEP]"]["ids"][0], 3);
    std::filesystem::remove(out + "/vocab.txt");
    std::filesystem::remove(out + "/tokenizer_config.json");
    auto back = load_tokenizer(out);
    ASSERT_EQ(back->kind(), "wordpiece");
    EXPECT_EQ(back->fingerprint(), WordPieceTokenizer(WordPiece(vocab(), lower)).fingerprint());
    const std::string text = "The film was unbelievable! 我喜欢 Café movies";
    EXPECT_EQ(back->encode(text), WordPieceTokenizer(WordPiece(vocab(), lower)).encode(text)) << lower;
  }
  auto broken = nlohmann::json::parse(test::read_file(dir / "cased/tokenizer.json"));
  broken["model"]["vocab"]["film"] = 5;  // "the" holds 5 too
  test::write_file(dir / "cased/tokenizer.json", broken.dump());
  EXPECT_THROW(load_tokenizer(dir / "cased"), Error);
}

}  // namespace
}  // namespace zoo::data
