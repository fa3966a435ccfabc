// The tokenizers (data/tokenizer.h): nanoGPT's character level, GPT-2's byte-level BPE on
// fixtures written here (pre-tokenisation pattern, merge ranks, bytes outside the merges,
// <|endoftext|>), SentencePiece (its helper process against the library's own Python binding),
// saving and loading with fingerprints, `zoo tokenizer`, and bad input.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/char_tokenizer.h"
#include "data/gpt2_bpe.h"
#include "data/sentencepiece_tokenizer.h"
#include "data/tokenizer.h"
#include "data/text.h"
#include "data/basic_english_tokenizer.h"
#include "test_util.h"

namespace zoo::data {
namespace {

// The printable stand-in of byte b (encoder.py's bytes_to_unicode).
std::string byte_symbol(int b) {
  const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
  if (printable) return utf32_to_utf8(std::u32string(1, static_cast<char32_t>(b)));
  int n = 0;
  for (int x = 0; x < b; ++x)
    if (!((x >= '!' && x <= '~') || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) ++n;
  return utf32_to_utf8(std::u32string(1, static_cast<char32_t>(256 + n)));
}

// Bytes are ids 0..255; then the merged tokens, then <|endoftext|>.
std::unique_ptr<Gpt2Bpe> fixture(std::vector<std::pair<std::string, std::string>> merges) {
  std::map<std::string, int64_t> vocab;
  for (int b = 0; b < 256; ++b) vocab[byte_symbol(b)] = b;
  for (const auto& [a, b] : merges) vocab.emplace(a + b, static_cast<int64_t>(vocab.size()));
  vocab["<|endoftext|>"] = static_cast<int64_t>(vocab.size());
  return std::make_unique<Gpt2Bpe>(vocab, merges);
}

const std::vector<std::pair<std::string, std::string>> kMerges{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"},
                                                               {"e", "l"}};

TEST(Gpt2Bpe, PreTokenisesAsGpt2sPattern) {
  EXPECT_EQ(gpt2_pretokenize("Hello world's  3.5 foo\n\nbar"),
            (std::vector<std::string>{"Hello", " world", "'s", " ", " 3", ".", "5", " foo", "\n", "\n", "bar"}));
  EXPECT_EQ(gpt2_pretokenize("I'LL we're  "), (std::vector<std::string>{"I", "'", "LL", " we", "'re", "  "}));
  EXPECT_EQ(gpt2_pretokenize("déjà vu 東京!!"), (std::vector<std::string>{"déjà", " vu", " 東京", "!!"}));
}

TEST(Gpt2Bpe, MergesByRankAndFallsBackToBytes) {
  auto tok = fixture(kMerges);
  const int64_t hello = 256 + 3, space = ' ';  // ' ' is byte 32 -> its own id
  EXPECT_EQ(tok->encode("hello hello"), (std::vector<int64_t>{hello, space, hello}));
  // "e l" ranks last: "hel" is h+e first. With it first, "hello" splits differently.
  auto reranked = fixture({{"e", "l"}, {"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}});
  EXPECT_NE(reranked->encode("hello"), tok->encode("hello"));
  EXPECT_EQ(reranked->decode(reranked->encode("hello")), "hello");
  // Characters outside every merge are their UTF-8 bytes.
  EXPECT_EQ(tok->encode("é"), (std::vector<int64_t>{0xC3, 0xA9}));
  EXPECT_EQ(tok->decode({0xC3}), "\xC3");  // a piece of a character: the caller streams whole ones
  const std::string text = "hello <|endoftext|>héllo\n\n  東京 😀";
  auto ids = tok->encode(text);
  EXPECT_EQ(std::count(ids.begin(), ids.end(), tok->eos_id()), 1);
  EXPECT_EQ(tok->decode(ids), text);
  EXPECT_THROW(tok->decode({tok->vocab_size()}), Error);
}

TEST(Gpt2Bpe, SavesAsHuggingFaceFilesAndLoadsBack) {
  test::TempDir dir;
  auto tok = fixture(kMerges);
  tok->save(dir.path().string());
  EXPECT_TRUE(has_tokenizer(dir.path().string()));
  auto back = load_tokenizer(dir.path().string());
  EXPECT_EQ(back->kind(), "gpt2");
  EXPECT_EQ(back->fingerprint(), tok->fingerprint());
  EXPECT_EQ(back->encode("hello world"), tok->encode("hello world"));
  EXPECT_NE(fixture({{"l", "l"}})->fingerprint(), tok->fingerprint());
  const auto config = nlohmann::json::parse(test::read_file(dir / "tokenizer_config.json"));
  EXPECT_EQ(config["tokenizer_class"], "GPT2Tokenizer");
}

TEST(Gpt2Bpe, BadFilesAreErrorsNamingFileAndLine) {
  test::TempDir dir;
  fixture(kMerges)->save(dir.path().string());
  test::write_file(dir / "merges.txt", "#version: 0.2\nh e\nbroken-line\n");
  try {
    Gpt2Bpe::load(dir.path().string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("merges.txt:3"), std::string::npos) << e.what();
  }
  std::filesystem::remove(dir / "merges.txt");
  EXPECT_THROW(Gpt2Bpe::load(dir.path().string()), Error);
  test::write_file(dir / "merges.txt", "h e\n");
  test::write_file(dir / "vocab.json", "{\"a\": 0,");
  try {
    Gpt2Bpe::load(dir.path().string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab.json"), std::string::npos) << e.what();
  }
}

TEST(CharTokenizer, VocabularyIsTheSortedCharactersAsNanoGpt) {
  test::TempDir dir;
  test::write_file(dir / "a.txt", "ba\nc");
  test::write_file(dir / "b.txt", "é a");
  auto tok = CharTokenizer::learn({dir / "a.txt", dir / "b.txt"});
  EXPECT_EQ(tok->vocab_size(), 6);  // \n, ' ', a, b, c, é
  EXPECT_EQ(tok->encode("abcé\n "), (std::vector<int64_t>{2, 3, 4, 5, 0, 1}));
  EXPECT_EQ(tok->decode({5, 1, 2}), "é a");
  tok->save(dir.path().string());
  auto back = load_tokenizer(dir.path().string());
  EXPECT_EQ(back->fingerprint(), tok->fingerprint());
  try {
    tok->encode("abz");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("U+007A at byte 2"), std::string::npos) << e.what();
  }
}

TEST(CharTokenizer, LearningNamesTheFileOfBadText) {
  test::TempDir dir;
  test::write_file(dir / "empty.txt", "");
  test::write_file(dir / "bad.txt", std::string("abc") + '\xff' + "def");
  try {
    CharTokenizer::learn({dir / "bad.txt"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "bad.txt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("byte 3"), std::string::npos) << e.what();
  }
  try {
    CharTokenizer::learn({dir / "empty.txt"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("empty"), std::string::npos) << e.what();
  }
}

// Document 000's basic_english words over a vocab.txt (BERT pretraining's and text
// classification's vocabulary) are one of the tokenizers: saved as the others are, loaded by
// kind, and checked by fingerprint, so a vocabulary with two words trading ids is refused.
TEST(BasicEnglishTokenizer, EncodesBasicEnglishWordsAndIsRefusedWhenShuffled) {
  test::TempDir dir;
  const std::vector<std::string> tokens = {"[CLS]", "[PAD]", "[MASK]", "[SEP]", "[UNK]", "don", "'", "t", "stop", "."};
  for (const char* d : {"ok", "shuffled"}) std::filesystem::create_directories(dir / d);
  BasicEnglishTokenizer(tokens).save(dir / "ok");
  EXPECT_TRUE(has_tokenizer(dir / "ok"));
  auto tok = load_tokenizer(dir / "ok");
  EXPECT_EQ(tok->kind(), "basic_english");
  EXPECT_EQ(tok->vocab_size(), 10);
  EXPECT_EQ(tok->encode("Don't STOP, please."), (std::vector<int64_t>{5, 6, 7, 8, 4, 4, 9}));  // , please: [UNK]
  EXPECT_EQ(tok->decode({5, 6, 7, 8, 9}), "don ' t stop .");
  EXPECT_EQ(tok->token_id("[PAD]"), 1);
  EXPECT_EQ(tok->token_id("please"), -1);
  EXPECT_THROW(tok->decode({10}), Error);
  EXPECT_THROW(tok->encode("bad \xff byte"), Error);

  std::vector<std::string> shuffled = tokens;
  std::swap(shuffled[5], shuffled[8]);
  BasicEnglishTokenizer(shuffled).save(dir / "shuffled");
  auto other = load_tokenizer(dir / "shuffled");
  EXPECT_EQ(other->vocab_size(), tok->vocab_size());
  EXPECT_NE(other->fingerprint(), tok->fingerprint());
  check_tokenizer_fingerprint(*tok, tok->fingerprint(), "ok");  // its own passes
  try {
    check_tokenizer_fingerprint(*other, tok->fingerprint(), dir / "shuffled/vocab.txt");
    FAIL() << "a shuffled vocabulary was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shuffled/vocab.txt: this tokenizer (basic_english, 10 ids"), std::string::npos) << e.what();
  }
  test::write_file(dir / "nounk.txt", "[CLS]\nstop\n");
  try {
    BasicEnglishTokenizer::load(dir / "nounk.txt");
    FAIL() << "a vocabulary without [UNK] was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nounk.txt: WordPiece vocabulary: no [UNK] token"), std::string::npos) << e.what();
  }
}

TEST(TokenizerCli, TrainsEncodesAndDecodes) {
  test::TempDir dir;
  test::write_file(dir / "t.txt", "the cat sat\n");
  auto r = test::run_zoo("tokenizer train --input " + (dir / "t.txt") + " --model-type char --out " + (dir / "tok"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto e = test::run_zoo("tokenizer encode --tokenizer " + (dir / "tok") + " 'sat'");
  ASSERT_EQ(e.exit_code, 0) << e.output;
  EXPECT_EQ(e.output, "6 2 7\n");  // \n, space, a, c, e, h, s, t
}

// Sentences of words drawn from a fixed list by a fixed generator: enough distinct pieces
// for vocabularies of a few hundred.
std::string spm_corpus() {
  const std::vector<std::string> words = {
      "the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "colourless", "green", "ideas", "sleep",
      "furiously", "Tom", "est\u00e1", "en", "la", "caf\u00e9", "\u6211", "\u559c\u6b22", "\u5403", "\u82f9\u679c",
      "river", "mountain", "yesterday", "tomorrow", "beautiful", "language", "model", "transformer", "attention",
      "window", "keyboard", "elephant", "umbrella", "whisper", "thunder", "silver", "golden", "journey", "kingdom"};
  std::string text;
  uint64_t x = 12345;
  for (int line = 0; line < 600; ++line) {
    for (int w = 0; w < 9; ++w) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;
      text += (w ? " " : "") + words[(x >> 33) % words.size()];
    }
    text += line % 3 ? ".\n" : "!\n";
  }
  return text;
}

// Trained through the helper process (Debian's LibTorch and libsentencepiece cannot share one
// process, see data/spm_bridge/protocol.h), a model encodes as the library's Python binding.
TEST(SentencePiece, TrainsAndEncodesAsTheLibrarysOwnBinding) {
  test::TempDir dir;
  test::write_file(dir / "corpus.txt", spm_corpus());
  const std::string probe = "The lazy fox est\u00e1 en la caf\u00e9.\n\u6211\u559c\u6b22 green dogs\nunseen \u00fc\u00df \u2603 text";
  test::write_file(dir / "probe.txt", probe);
  for (const std::string type : {"bpe", "unigram", "word"}) {
    SCOPED_TRACE(type);
    auto tok = SentencePieceTokenizer::train({dir / "corpus.txt"}, type, 70);
    ASSERT_EQ(tok->vocab_size(), 70);
    tok->save(dir.path().string());
    auto ref = test::run_python("spm_ref.py", (dir / "tokenizer.model") + " " + (dir / "probe.txt"));
    ASSERT_EQ(ref.exit_code, 0) << ref.output;
    std::istringstream lines(ref.output);
    size_t start = 0;
    for (std::string line; std::getline(lines, line);) {
      const size_t end = probe.find('\n', start);
      const std::string text = probe.substr(start, end == std::string::npos ? std::string::npos : end - start);
      start = end == std::string::npos ? probe.size() : end + 1;
      const auto j = nlohmann::json::parse(line);
      const auto ids = tok->encode(text);
      EXPECT_EQ(ids, j.at("ids").get<std::vector<int64_t>>()) << text;
      EXPECT_EQ(tok->decode(ids), j.at("text").get<std::string>()) << text;
    }
    auto loaded = load_tokenizer(dir.path().string());  // as a checkpoint's tokenizer
    EXPECT_EQ(loaded->kind(), "sentencepiece");
    EXPECT_EQ(loaded->fingerprint(), tok->fingerprint());
    EXPECT_EQ(loaded->encode("green ideas"), tok->encode("green ideas"));
  }
}

// The same text trains the same model whichever file holds it: the model records no path (the
// translation task trains from temporary files named by its process id), so that two runs on
// the same data share their tokenizers' fingerprints (an ensemble's members must).
TEST(SentencePiece, TheSameTextTrainsTheSameModelFromAnyFile) {
  test::TempDir dir;
  test::write_file(dir / "one.txt", spm_corpus());
  test::write_file(dir / "two.txt", spm_corpus());
  auto one = SentencePieceTokenizer::train({dir / "one.txt"}, "unigram", 70);
  auto two = SentencePieceTokenizer::train({dir / "two.txt"}, "unigram", 70);
  EXPECT_EQ(one->fingerprint(), two->fingerprint());
  one->save(dir.path().string());
  const std::string model = test::read_file(dir / "tokenizer.model");
  EXPECT_EQ(model.find("one.txt"), std::string::npos);
  EXPECT_EQ(model.find(dir.path().string()), std::string::npos);
}

TEST(SentencePiece, BadModelsAndVocabularySizesAreErrors) {
  test::TempDir dir;
  test::write_file(dir / "corpus.txt", spm_corpus());
  try {
    SentencePieceTokenizer::train({dir / "corpus.txt"}, "bpe", 100000);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("vocab_size 100000) failed"), std::string::npos) << e.what();
  }
  test::write_file(dir / "tokenizer.model", "not a model");
  try {
    SentencePieceTokenizer::load(dir / "tokenizer.model");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.model: not a SentencePiece model"), std::string::npos) << e.what();
  }
  auto tok = SentencePieceTokenizer::train({dir / "corpus.txt"}, "bpe", 120);
  EXPECT_THROW(tok->decode({120}), Error);
  EXPECT_THROW(tok->encode("bad \xff byte"), Error);
}

// Words of prefixes, stems and suffixes: a unigram model of them has pieces that overlap (unthink
// + able, un + think + able), so a word has several segmentations to sample from (spm_corpus()'s
// whole words have hardly any).
std::string morpheme_corpus() {
  const std::vector<std::string> prefixes = {"", "", "un", "re", "over", "pre"};
  const std::vector<std::string> stems = {"play", "work", "think", "build", "read", "walk", "talk", "paint",
                                          "clean", "open", "turn", "help", "kind", "light", "dark", "cook"};
  const std::vector<std::string> suffixes = {"", "", "s", "ed", "ing", "er", "ers", "ness", "able"};
  std::string text;
  uint64_t x = 12345;
  const auto pick = [&x](const std::vector<std::string>& v) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return v[(x >> 33) % v.size()];
  };
  for (int line = 0; line < 600; ++line) {
    for (int w = 0; w < 8; ++w) {
      const std::string prefix = pick(prefixes), stem = pick(stems);
      text += (w ? " " : "") + prefix + stem + pick(suffixes);
    }
    text += line % 3 ? ".\n" : "!\n";
  }
  return text;
}

// Subword regularization through the helper (SampleEncode): every sample decodes to the text, 50
// seeds give several segmentations and one seed always the same one; many texts in one request
// are drawn one after the other from its seed (the first as a request of its own would be).
TEST(SentencePiece, SamplesSegmentationsThatDecodeToTheText) {
  test::TempDir dir;
  test::write_file(dir / "corpus.txt", morpheme_corpus());
  const std::vector<std::string> texts = {"the unthinkable workers repainted overcooked lights.",
                                          "rebuilding kindness!", "preopened darkness overplays"};
  for (const auto& [type, nbest, alpha] : {std::tuple<std::string, int, float>{"unigram", -1, 0.2f},
                                           {"unigram", 8, 0.2f}, {"bpe", -1, 0.1f}}) {
    SCOPED_TRACE(type + " nbest " + std::to_string(nbest));
    auto tok = SentencePieceTokenizer::train({dir / "corpus.txt"}, type, 150);
    for (const auto& text : texts) {
      SCOPED_TRACE(text);
      ASSERT_EQ(tok->decode(tok->encode(text)), text);
      std::set<std::vector<int64_t>> seen;
      for (uint32_t seed = 1; seed <= 50; ++seed) {
        const auto ids = tok->sample(text, nbest, alpha, seed);
        EXPECT_EQ(tok->decode(ids), text);
        for (int64_t id : ids) EXPECT_TRUE(id >= 0 && id < tok->vocab_size()) << id;
        seen.insert(ids);
      }
      EXPECT_GE(seen.size(), 2u) << "50 draws gave one segmentation";
      EXPECT_EQ(tok->sample(text, nbest, alpha, 7), tok->sample(text, nbest, alpha, 7));
    }
    const auto batch = tok->sample(texts, nbest, alpha, 11);
    ASSERT_EQ(batch.size(), texts.size());
    for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(tok->decode(batch[i]), texts[i]);
    EXPECT_EQ(tok->sample(texts, nbest, alpha, 11), batch);
    EXPECT_EQ(batch[0], tok->sample(texts[0], nbest, alpha, 11));  // the first draw of that seed
    // Every sampled id is a piece sampleable_ids() lists (no control piece, no <unk>).
    const auto sampleable = tok->sampleable_ids();
    const std::set<int64_t> allowed(sampleable.begin(), sampleable.end());
    EXPECT_EQ(allowed.count(tok->eos_id()), 0u);
    for (const auto& ids : batch)
      for (int64_t id : ids) EXPECT_EQ(allowed.count(id), 1u) << id;
  }
  auto tok = SentencePieceTokenizer::train({dir / "corpus.txt"}, "unigram", 150);
  EXPECT_THROW(tok->sample("bad \xff byte", -1, 0.2f, 1), Error);
  try {
    tok->sample("unkind ideas", 1000, 0.2f, 1);
    ADD_FAILURE() << "nbest_size 1000 was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("512"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tok->decode(tok->sample("unkind ideas", -1, 0.2f, 1)), "unkind ideas");  // the helper still serves
}

// A language model on a SentencePiece vocabulary, through the CLI: train, generate.
TEST(SentencePiece, ALanguageModelTrainsAndGeneratesOnIt) {
  test::TempDir dir;
  test::write_file(dir / "corpus.txt", spm_corpus());
  auto t = test::run_zoo("tokenizer train --input " + (dir / "corpus.txt") + " --model-type unigram --vocab-size 60 --out " +
                         (dir / "tok"));
  ASSERT_EQ(t.exit_code, 0) << t.output;
  nlohmann::json config = {
      {"task", "language_modeling"},
      {"model", {{"preset", "gpt-nano-char"}, {"n_positions", 16}, {"n_layer", 1}, {"n_embd", 16}}},
      {"data", {{"files", {dir / "corpus.txt"}}, {"tokenizer", dir / "tok"}, {"max_eval_windows", 10}}},
      {"train", {{"max_steps", 5}, {"per_device_train_batch_size", 4}, {"report_to_tensorboard", false}}}};
  test::write_file(dir / "c.json", config.dump());
  auto r = test::run_zoo("train --config " + (dir / "c.json") + " --output-dir " + (dir / "out"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto g = test::run_zoo("generate --checkpoint " + (dir / "out/checkpoint-5") + " --prompt 'The quick' --max-new-tokens 5 --greedy");
  ASSERT_EQ(g.exit_code, 0) << g.output;
  EXPECT_EQ(g.output.rfind("The quick", 0), 0u) << g.output;
}

// Hugging Face's tokenizer.json: a byte-level BPE learned and written by a reference written
// from the format (tests/py/tokenizer_json_ref.py) loads into zoo from that file alone and gives
// the reference's ids on every line of real text (the repository's README and docs, with
// Chinese, emoji and <|endoftext|> lines added); the tokenizer.json zoo writes gives the
// reference the same ids again.
TEST(Gpt2Bpe, TokenizerJsonBothWaysMatchesAReferenceOnRealText) {
  test::TempDir dir;
  std::string text;
  const std::filesystem::path root = std::filesystem::path(ZOO_TESTS_DIR).parent_path();
  std::vector<std::filesystem::path> sources{root / "README.md"};
  for (const auto& e : std::filesystem::directory_iterator(root / "docs"))
    if (e.path().extension() == ".md") sources.push_back(e.path());
  std::sort(sources.begin(), sources.end());
  for (const auto& f : sources) text += test::read_file(f.string());
  text += "我喜欢猫。三只红猫。\nemoji 😀 and <|endoftext|> inside\n  leading spaces\tand tabs   \n";
  test::write_file(dir / "text.txt", text);
  auto r = test::run_python("tokenizer_json_ref.py", "learn " + (dir / "text.txt") + " 300 " + (dir / "py"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ASSERT_FALSE(std::filesystem::exists(dir / "py/vocab.json"));
  ASSERT_TRUE(has_tokenizer(dir / "py"));
  auto ours = load_tokenizer(dir / "py");  // from tokenizer.json alone
  ASSERT_EQ(ours->kind(), "gpt2");
  EXPECT_EQ(ours->vocab_size(), 256 + 300 + 1);

  auto compare = [&](const std::string& tokenizer_dir) {
    r = test::run_python("tokenizer_json_ref.py", "encode " + tokenizer_dir + " " + (dir / "text.txt") + " " +
                                                      (dir / "ids.json"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    const auto reference = nlohmann::json::parse(test::read_file(dir / "ids.json"));
    std::istringstream lines(text);
    size_t n = 0, tokens = 0;
    for (std::string line; std::getline(lines, line); ++n) {
      ASSERT_LT(n, reference.size());
      const auto ids = ours->encode(line);
      EXPECT_EQ(nlohmann::json(ids), reference[n]) << "line " << n + 1 << ": " << line;
      tokens += ids.size();
    }
    EXPECT_EQ(n, reference.size());
    EXPECT_GT(n, 1000u) << "a few thousand lines of real text";
    EXPECT_LT(tokens, text.size() * 2 / 3) << "the merges apply (one token per byte without them)";
  };
  compare(dir / "py");
  std::filesystem::create_directories(dir / "zoo");
  ours->save(dir / "zoo");  // tokenizer.json beside vocab.json and merges.txt
  std::filesystem::remove(dir / "zoo/vocab.json");
  std::filesystem::remove(dir / "zoo/merges.txt");
  compare(dir / "zoo");
  EXPECT_EQ(load_tokenizer(dir / "zoo")->fingerprint(), ours->fingerprint());

  // Another kind of model in tokenizer.json is named, not misread.
  auto other = nlohmann::json::parse(test::read_file(dir / "py/tokenizer.json"));
  other["model"]["type"] = "Unigram";
  test::write_file(dir / "py/tokenizer.json", other.dump());
  try {
    load_tokenizer(dir / "py");
    FAIL() << "a Unigram tokenizer.json was read as BPE";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("zoo reads byte-level BPE (GPT-2's) from tokenizer.json"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace zoo::data
