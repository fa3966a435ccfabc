// Tests of data/text (normalisation, the tutorial's preprocessing), data/pairs (pair files,
// split, bucketing) and data/vocab (Keras Tokenizer semantics). The Python references in
// tests/py/keras_tokenizer_ref.py hold the tutorial's own functions and an independent Keras
// Tokenizer; every fixture sentence here is invented.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>
#include <unicode/uchar.h>

#include "data/pairs.h"
#include "data/text.h"
#include "data/vocab.h"
#include "tests/test_util.h"
#include "core/error.h"

namespace zoo::data {
namespace {

using json = nlohmann::json;
using test::TempDir;

// Runs a reference script on a JSON input and parses its JSON output.
json run_reference(const std::string& script, const std::string& mode, const json& input,
                   const TempDir& dir) {
  const std::string in = dir / "in.json";
  test::write_file(in, input.dump());
  const test::RunResult r = test::run_python(script, mode + " " + in);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  return json::parse(r.output);
}

// Expects `fn` to throw zoo::Error whose message contains `part`.
template <class Fn>
void expect_error(Fn fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no zoo::Error thrown, expected one containing: " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message: " << e.what() << "\nexpected to contain: " << part;
  }
}

// --- text ------------------------------------------------------------------------------------

TEST(Text, Utf8Validation) {
  EXPECT_EQ(find_invalid_utf8("plain"), std::string::npos);
  EXPECT_EQ(find_invalid_utf8("中文 é 🗽"), std::string::npos);
  EXPECT_EQ(find_invalid_utf8("ab\xff"), 2u);
  EXPECT_EQ(find_invalid_utf8("\xc0\xaf"), 0u);          // overlong '/'
  EXPECT_EQ(find_invalid_utf8("x\xed\xa0\x80"), 1u);     // surrogate U+D800
  EXPECT_EQ(find_invalid_utf8("\xf4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("\xe4\xb8"), 0u);          // truncated
  EXPECT_EQ(find_invalid_utf8("\x80"), 0u);              // lone continuation byte
  EXPECT_EQ(utf32_to_utf8(utf8_to_utf32("a中🗽")), "a中🗽");
  EXPECT_EQ(utf8_to_utf32("a中🗽").size(), 3u);
  expect_error([] { preprocess_eng("bad \xff"); }, "invalid UTF-8 at byte 4");
  expect_error([] { preprocess_chinese("\xe4\xb8"); }, "invalid UTF-8");
  expect_error([] { unicode_to_ascii("\xed\xa0\x80"); }, "invalid UTF-8");
}

TEST(Text, PythonWhitespace) {
  EXPECT_EQ(python_strip(" \t\r\n\u3000\u00a0x y\u2029\x1c\u0085"), "x y");
  EXPECT_EQ(python_strip("\u200bx"), "\u200bx");  // ZERO WIDTH SPACE is not whitespace
  EXPECT_EQ(python_strip(""), "");
  EXPECT_EQ(python_split(" a\tb\u3000c  "), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(split_tokens("  a b\tc  d "), (std::vector<std::string>{"a", "b\tc", "d"}));
  EXPECT_TRUE(split_tokens("   ").empty());
}

TEST(Text, LowerAndMarks) {
  EXPECT_EQ(to_lower("ÀÉÎ ABC"), "àéî abc");
  EXPECT_EQ(to_lower("ΟΔΟΣ ΣΑΣ"), "οδος σας");  // Final_Sigma
  EXPECT_EQ(to_lower("İ"), "i\u0307");          // SpecialCasing, language-independent
  EXPECT_EQ(unicode_to_ascii("Crème brûlée"), "Creme brulee");
  EXPECT_EQ(unicode_to_ascii("Straße øre 中文"), "Straße øre 中文");
  EXPECT_EQ(unicode_to_ascii("e\u0301\u0308"), "e");
  EXPECT_EQ(unicode_to_ascii("❤\ufe0f"), "❤");  // variation selectors are Mn
}

TEST(Text, PreprocessExamples) {
  EXPECT_EQ(preprocess_eng("He said \"Stop!\""), "<start> he said stop ! <end>");
  EXPECT_EQ(preprocess_eng("  Café, s'il vous plaît?  "), "<start> cafe , s il vous plait ? <end>");
  EXPECT_EQ(preprocess_eng("It costs 5 dollars."), "<start> it costs dollars . <end>");
  EXPECT_EQ(preprocess_eng(""), "<start>  <end>");
  EXPECT_EQ(preprocess_chinese("我爱你。"), "<start> 我 爱 你 。 <end>");
  EXPECT_EQ(preprocess_chinese(" 他 说 \"好\" "), "<start> 他 说 好 <end>");
  EXPECT_EQ(preprocess_chinese("Tom喜欢Café"), "<start> t o m 喜 欢 c a f e <end>");
  EXPECT_EQ(preprocess_chinese(""), "<start>  <end>");
}

// Sentences exercising every step of the tutorial's functions.
std::vector<std::string> preprocess_fixture() {
  return {
      "Hello, World!",
      "  Café au lait?  ",
      "He said \"Stop!\" and left.",
      "\u201cCurly quotes\u201d and \u2018single\u2019 ones.",
      "It's 5 o'clock... really?!",
      "\uff26\uff55\uff4c\uff4c\uff0d\uff57\uff49\uff44\uff54\uff48 \uff21\uff22\uff23 "
      "\uff11\uff12\uff13",
      "Na\u00efve r\u00e9sum\u00e9, fa\u00e7ade, \u00c5ngstr\u00f6m.",
      "Stra\u00dfe \u00d8re \u0152uvre \u01c5emal",
      "Line one\r\nline two\r\n",
      "\t Tabs\tand\u00a0nbsp\u3000ideographic \u3000",
      "\u03a3\u039f\u03a6\u039f\u03a3 \u039f\u0394\u03a5\u03a3\u03a3\u0395\u03a5\u03a3",
      "\u0130stanbul KELVIN \u212a",
      "",
      "   ",
      "!!!",
      "\"\"\"",
      "a\"b\" \"c",
      "e\u0301 a\u0308\u0301 n\u0303",
      "I \u2764\ufe0f NY \U0001f5fd 1,000.50 km/h",
      "我爱你。",
      "他说：\u201c你好！\u201d",
      "  这是 一个 测试  ",
      "你好\"世界\"",
      "\uff11\uff12\uff13\uff21\uff22\uff23",
      "10 块钱。",
      "Tom 喜欢 caf\u00e9。",
      "한국어 텍스트",
      "\u3000你好\u3000",
      "\uff34\uff4f\uff4d是学生。",
      "tab\tinside\u00a0nbsp",
      "CRLF end\r",
      "\u00bd \u2460 \u00b2 \ufb01",
      "\u0345\u0391\u0345",
      "zero\u200bwidth\u200djoiner",
  };
}

TEST(Text, PreprocessMatchesPythonTutorial) {
  TempDir dir;
  const std::vector<std::string> sentences = preprocess_fixture();
  const json ref = run_reference("keras_tokenizer_ref.py", "preprocess", sentences, dir);
  ASSERT_EQ(ref["eng"].size(), sentences.size());
  for (size_t i = 0; i < sentences.size(); ++i) {
    SCOPED_TRACE("sentence " + std::to_string(i) + ": " + json(sentences[i]).dump());
    EXPECT_EQ(preprocess_eng(sentences[i]), ref["eng"][i].get<std::string>());
    EXPECT_EQ(preprocess_chinese(sentences[i]), ref["chinese"][i].get<std::string>());
  }
}

// Lower-casing and unicode_to_ascii against Python for every code point assigned in Python's
// Unicode version; code points new in ICU's later Unicode version are the documented exception.
TEST(Text, EveryCodePointMatchesPython) {
  TempDir dir;
  const json ref = run_reference("keras_tokenizer_ref.py", "codepoints", json::object(), dir);
  const std::string version = ref["unidata"].get<std::string>();
  int major = 0, minor = 0;
  ASSERT_EQ(std::sscanf(version.c_str(), "%d.%d", &major, &minor), 2) << version;
  std::map<char32_t, std::pair<std::string, std::string>> changed;
  for (const json& e : ref["map"]) {
    changed[static_cast<char32_t>(e[0].get<uint32_t>())] = {e[1].get<std::string>(),
                                                            e[2].get<std::string>()};
  }
  int64_t checked = 0, mismatches = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) continue;
    if (u_charType(static_cast<UChar32>(cp)) == U_UNASSIGNED) continue;
    UVersionInfo age;
    u_charAge(static_cast<UChar32>(cp), age);
    if (age[0] > major || (age[0] == major && age[1] > minor)) continue;  // newer than Python's
    const std::string c = utf32_to_utf8(std::u32string(1, cp));
    const auto it = changed.find(cp);
    const std::string want_lower = it == changed.end() ? c : it->second.first;
    const std::string want_folded = it == changed.end() ? c : it->second.second;
    const std::string lower = to_lower(c);
    const std::string folded = unicode_to_ascii(lower);
    ++checked;
    if (lower != want_lower || folded != want_folded) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << "U+" << std::hex << static_cast<uint32_t>(cp) << ": lower "
                      << json(lower).dump() << " vs " << json(want_lower).dump() << ", folded "
                      << json(folded).dump() << " vs " << json(want_folded).dump();
      }
    }
  }
  EXPECT_EQ(mismatches, 0) << "of " << checked << " code points";
  EXPECT_GT(checked, 140000);
}

// --- vocab -----------------------------------------------------------------------------------

std::vector<std::string> vocab_texts() {
  return {
      "<start> the cat sat on the mat <end>",
      "<start> a dog ran <end>",
      "<start> The DOG sat   down <end>",
      "<start> 猫 在 这 里 <end>",
      "<start> tab\tword and the <unk> <end>",
      "<start> mat dog cat zebra <end>",
      "",
      "   ",
  };
}

TEST(Vocab, MatchesKerasReference) {
  TempDir dir;
  json spec;
  spec["texts"] = vocab_texts();
  spec["probes"] = {"<start> the dog sat <end>",
                    "THE CAT  and   unicorn",
                    "猫 狗 在",
                    "",
                    "tab\tword zebra <unk>",
                    "<UNK> mat"};
  spec["id_seqs"] = {{1, 2, 3}, {5, 100, 2, -1}, {7, 1, 9, 12, 14}, json::array(), {4, 4, 3}};
  const std::vector<std::pair<int64_t, std::string>> configs = {
      {0, ""},      {5, ""}, {0, "<oov>"}, {4, "<oov>"},   {0, "<unk>"},
      {6, "<unk>"}, {1, ""}, {3, "<UNK>"}, {1000, "<oov>"}};
  for (const auto& [num_words, oov] : configs) {
    spec["configs"].push_back({{"num_words", num_words == 0 ? json(nullptr) : json(num_words)},
                               {"oov_token", oov.empty() ? json(nullptr) : json(oov)}});
  }
  const json ref = run_reference("keras_tokenizer_ref.py", "tokenizer", spec, dir);
  ASSERT_EQ(ref.size(), configs.size());

  for (size_t c = 0; c < configs.size(); ++c) {
    SCOPED_TRACE("num_words=" + std::to_string(configs[c].first) + " oov='" + configs[c].second +
                 "'");
    const Vocab fitted = Vocab::fit(vocab_texts(), configs[c].first, configs[c].second);
    fitted.save(dir / "vocab.json");
    const Vocab loaded = Vocab::load(dir / "vocab.json");
    for (const Vocab* v : {&fitted, &loaded}) {
      const json& r = ref[c];
      // word_index in index order.
      std::vector<std::pair<std::string, int64_t>> ours;
      int64_t max_index = 0;
      for (int64_t i = 1; i < 1000; ++i) {
        try {
          const std::string& w = v->word(i);
          if (!w.empty()) ours.emplace_back(w, i);
          max_index = i;
        } catch (const Error&) {
          break;
        }
      }
      std::vector<std::pair<std::string, int64_t>> want;
      for (const json& e : r["word_index"]) {
        want.emplace_back(e[0].get<std::string>(), e[1].get<int64_t>());
        EXPECT_EQ(v->index(want.back().first), want.back().second);
      }
      EXPECT_EQ(ours, want);
      EXPECT_EQ(v->num_indexed(), static_cast<int64_t>(want.size()));
      std::vector<std::pair<std::string, int64_t>> counts;
      for (const json& e : r["word_counts"]) {
        counts.emplace_back(e[0].get<std::string>(), e[1].get<int64_t>());
      }
      EXPECT_EQ(v->word_counts(), counts);
      for (size_t p = 0; p < spec["probes"].size(); ++p) {
        const auto seq = v->encode(spec["probes"][p].get<std::string>());
        EXPECT_EQ(seq, r["sequences"][p].get<std::vector<int64_t>>()) << "probe " << p;
        for (int64_t id : seq) EXPECT_LT(id, v->size());
      }
      for (size_t s = 0; s < spec["id_seqs"].size(); ++s) {
        EXPECT_EQ(v->decode(spec["id_seqs"][s].get<std::vector<int64_t>>()),
                  r["texts"][s].get<std::string>())
            << "id_seq " << s;
      }
      // Embedding size: len(word_index) + 1 without a limit (max index + 1 in the OOV quirk).
      int64_t want_size = max_index + 1;
      if (configs[c].first > 0) want_size = std::min(want_size, configs[c].first);
      EXPECT_EQ(v->size(), std::max(want_size, v->oov_index() + 1));
    }
  }
}

TEST(Vocab, TiesKeepFirstAppearance) {
  const Vocab v = Vocab::fit({"b a c", "c a b d", "D e"});
  // counts: b2 a2 c2 d2 e1 (first appearance b, a, c, d) -> b a c d e
  EXPECT_EQ(v.index("b"), 1);
  EXPECT_EQ(v.index("a"), 2);
  EXPECT_EQ(v.index("c"), 3);
  EXPECT_EQ(v.index("d"), 4);
  EXPECT_EQ(v.index("e"), 5);
  EXPECT_EQ(v.size(), 6);
  EXPECT_EQ(v.word(0), "");
  EXPECT_EQ(v.word(5), "e");
  EXPECT_FALSE(v.contains("D"));
  expect_error([&] { v.index("zebra"); }, "'zebra' is not in the vocabulary");
  expect_error([&] { v.word(6); }, "index 6 is out of range");
  expect_error([&] { v.word(-1); }, "out of range");
  EXPECT_EQ(v.decode({1, 0, 2, 0, 0}), "b a");
  EXPECT_EQ(v.encode("E  x B"), (std::vector<int64_t>{5, 1}));
  const Vocab with_oov = Vocab::fit({"b a c", "c a b d", "D e"}, 0, "<oov>");
  EXPECT_EQ(with_oov.index("<oov>"), 1);
  EXPECT_EQ(with_oov.index("b"), 2);
  EXPECT_EQ(with_oov.encode("x b"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(with_oov.size(), 7);
  expect_error([] { Vocab::fit({"a"}, -1); }, "num_words");
  EXPECT_EQ(Vocab().size(), 1);
}

TEST(Vocab, LoadErrorsNameTheFile) {
  TempDir dir;
  const std::string path = dir / "v.json";
  expect_error([&] { Vocab::load(path); }, "cannot open vocab file '" + path + "'");
  const auto check = [&](const std::string& content, const std::string& part) {
    test::write_file(path, content);
    expect_error([&] { Vocab::load(path); }, "vocab file '" + path + "'");
    expect_error([&] { Vocab::load(path); }, part);
  };
  check("{not json", "not valid JSON");
  const json good = {{"format", "zoo-vocab"},
                     {"version", 1},
                     {"lower", true},
                     {"num_words", 0},
                     {"oov_token", ""},
                     {"word_index", json::array({json::array({"a", 1})})},
                     {"word_counts", json::array({json::array({"a", 3})})}};
  test::write_file(path, good.dump());
  EXPECT_EQ(Vocab::load(path).index("a"), 1);
  json j = good;
  j["format"] = "keras";
  check(j.dump(), "\"format\"");
  j = good;
  j["word_index"] = json::array({json::array({"a", 1}), json::array({"a", 2})});
  check(j.dump(), "'a' appears twice");
  j = good;
  j["word_index"] = json::array({json::array({"a", 1}), json::array({"b", 1})});
  check(j.dump(), "index 1 appears twice");
  j = good;
  j["word_index"] = json::array({json::array({"a", 7})});
  check(j.dump(), "index 7 of 'a' is out of range");
  j = good;
  j["word_index"] = json::array({json::array({"a", "1"})});
  check(j.dump(), "entry 0 of \"word_index\"");
  j = good;
  j["oov_token"] = "<oov>";
  check(j.dump(), "oov_token '<oov>' has no index");
  j = good;
  j["word_counts"] = json::array({json::array({"b", 1})});
  check(j.dump(), "'b' is not in word_index");
  j = good;
  j["num_words"] = -2;
  check(j.dump(), "num_words");
}

TEST(Vocab, PadSequences) {
  const std::vector<std::vector<int64_t>> seqs = {{1, 2, 3}, {4}, {}, {5, 6, 7, 8, 9}};
  const torch::Tensor t = pad_sequences(seqs);
  EXPECT_EQ(t.scalar_type(), torch::kInt64);
  ASSERT_EQ(t.sizes(), (std::vector<int64_t>{4, 5}));
  const torch::Tensor want =
      torch::tensor({1, 2, 3, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 6, 7, 8, 9}, torch::kInt64)
          .view({4, 5});
  EXPECT_TRUE(torch::equal(t, want));
  const torch::Tensor pre = pad_sequences(seqs, 3);
  EXPECT_TRUE(torch::equal(pre[3], torch::tensor({7, 8, 9}, torch::kInt64)));
  EXPECT_TRUE(torch::equal(pre[0], torch::tensor({1, 2, 3}, torch::kInt64)));
  const torch::Tensor post = pad_sequences(seqs, 3, Truncate::kPost);
  EXPECT_TRUE(torch::equal(post[3], torch::tensor({5, 6, 7}, torch::kInt64)));
  EXPECT_EQ(pad_sequences({}).sizes(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(pad_sequences({{}, {}}).sizes(), (std::vector<int64_t>{2, 0}));
}

// --- pairs -----------------------------------------------------------------------------------

TEST(Pairs, ReadsAndReportsMalformedLines) {
  TempDir dir;
  const std::string path = dir / "pairs.txt";
  test::write_file(path,
                   "\xEF\xBB\xBFHi there.\t你好。\tCC-BY invented #1\r\n"  // 1
                   "Run!\t跑！\r\n"                                        // 2
                   "\r\n"                                                  // 3 blank
                   "No tab on this line\r\n"                               // 4
                   "Bad \xff byte\t坏\r\n"                                 // 5
                   "   \t空的英文\r\n"                                     // 6
                   "Empty Chinese\t \u3000 \tattr\r\n"                     // 7
                   "  Spaces around  \t  前后有空格 \r\n"                  // 8
                   "Last line\t最后一行\tx\ty\n"                           // 9: a tab too many
                   "\n");                                                  // 10 blank
  PairReadReport report;
  const auto pairs = read_pair_file(path, false, report);
  ASSERT_EQ(pairs.size(), 3u);
  EXPECT_EQ(pairs[0].target, "Hi there.");
  EXPECT_EQ(pairs[0].source, "你好。");
  EXPECT_EQ(pairs[0].line, 1);
  EXPECT_EQ(pairs[1].target, "Run!");
  EXPECT_EQ(pairs[1].source, "跑！");
  EXPECT_EQ(pairs[2].target, "Spaces around");
  EXPECT_EQ(pairs[2].source, "前后有空格");
  EXPECT_EQ(pairs[2].line, 8);
  EXPECT_EQ(report.lines, 10);
  EXPECT_EQ(report.pairs, 3);
  EXPECT_EQ(report.blank, 2);
  EXPECT_EQ(report.malformed, 5);
  ASSERT_EQ(report.messages.size(), 5u);
  EXPECT_EQ(report.messages[0].rfind(path + ":4: no tab", 0), 0u) << report.messages[0];
  EXPECT_EQ(report.messages[1], path + ":5: invalid UTF-8 at byte 5 of the line");
  EXPECT_EQ(report.messages[2], path + ":6: empty English side");
  EXPECT_EQ(report.messages[3], path + ":7: empty Chinese side");
  EXPECT_EQ(report.messages[4].rfind(path + ":9: 4 tab-separated columns", 0), 0u) << report.messages[4];

  expect_error([&] { read_pair_file(path, true, report); }, path + ":4: no tab");
}

TEST(Pairs, FileErrors) {
  TempDir dir;
  PairReadReport report;
  const std::string missing = dir / "missing.txt";
  expect_error([&] { read_pair_file(missing, false, report); }, "'" + missing + "'");
  expect_error([&] { read_pair_file(dir.path().string(), false, report); }, "is a directory");
  const std::string empty = dir / "empty.txt";
  test::write_file(empty, "");
  expect_error([&] { read_pair_file(empty, false, report); }, "'" + empty + "' is empty");
  test::write_file(empty, "\xEF\xBB\xBF\n\r\n  \n");
  expect_error([&] { read_pair_file(empty, false, report); }, "is empty");
  const std::string bad = dir / "bad.txt";
  test::write_file(bad, "one\ntwo\n");
  expect_error([&] { read_pair_file(bad, false, report); },
               "no valid sentence pair: all 2 non-blank lines are malformed, the first: " + bad +
                   ":1: no tab");
}

TEST(Pairs, ReportKeepsOnlyTheFirstMessages) {
  TempDir dir;
  const std::string path = dir / "many.txt";
  std::string content = "ok\t好\n";
  for (int i = 0; i < 25; ++i) content += "broken line\n";
  test::write_file(path, content);
  PairReadReport report;
  EXPECT_EQ(read_pair_file(path, false, report).size(), 1u);
  EXPECT_EQ(report.malformed, 25);
  EXPECT_EQ(report.messages.size(), PairReadReport::kMaxMessages);
  EXPECT_EQ(report.messages.back().rfind(path + ":11: ", 0), 0u);
}

std::vector<SentencePair> numbered_pairs(int n) {
  std::vector<SentencePair> pairs;
  for (int i = 0; i < n; ++i) {
    pairs.push_back({"源" + std::to_string(i), "target " + std::to_string(i), i + 1});
  }
  return pairs;
}

TEST(Pairs, StandardMersenneTwister) {
  // The C++ standard fixes this value ([rand.predef]); splits depend on it.
  std::mt19937_64 rng;
  rng.discard(9999);
  EXPECT_EQ(rng(), 9981545732273789042ull);
}

TEST(Pairs, RandomPermutationIsPinned) {
  // Pinned so that a run's split never changes between builds or platforms.
  EXPECT_EQ(random_permutation(10, 1234), (std::vector<int64_t>{0, 3, 4, 7, 9, 8, 5, 6, 1, 2}));
  std::mt19937_64 rng(5);
  std::vector<int64_t> hist(3, 0);
  for (int i = 0; i < 30000; ++i) ++hist[uniform_below(rng, 3)];
  for (int64_t h : hist) EXPECT_NEAR(h, 10000, 400);
  expect_error([&] { uniform_below(rng, 0); }, "positive");
  EXPECT_TRUE(random_permutation(0, 1).empty());
}

TEST(Pairs, SplitIsDeterministicAndComplete) {
  const auto pairs = numbered_pairs(50);
  const Split a = split_pairs(pairs, 7, 5, 99);
  EXPECT_EQ(a.test.size(), 7u);
  EXPECT_EQ(a.valid.size(), 5u);
  EXPECT_EQ(a.train.size(), 38u);
  std::set<int64_t> lines;
  for (const auto* part : {&a.train, &a.valid, &a.test}) {
    for (const SentencePair& p : *part) {
      EXPECT_TRUE(lines.insert(p.line).second);
      EXPECT_EQ(p.target, "target " + std::to_string(p.line - 1));
    }
  }
  EXPECT_EQ(lines.size(), 50u);
  const Split b = split_pairs(pairs, 7, 5, 99);
  const Split c = split_pairs(pairs, 7, 5, 100);
  const auto lines_of = [](const std::vector<SentencePair>& v) {
    std::vector<int64_t> out;
    for (const auto& p : v) out.push_back(p.line);
    return out;
  };
  EXPECT_EQ(lines_of(a.test), lines_of(b.test));
  EXPECT_EQ(lines_of(a.train), lines_of(b.train));
  EXPECT_NE(lines_of(a.test), lines_of(c.test));
  EXPECT_EQ(split_pairs(pairs, 0, 0, 1).train.size(), 50u);
  expect_error([&] { split_pairs(pairs, 40, 10, 1); },
               "only 50 sentence pairs, need more than 40 (test) + 10 (valid)");
  expect_error([&] { split_pairs(pairs, -1, 10, 1); }, "must not be negative");
}

TEST(Pairs, WriteAndReadSplit) {
  TempDir dir;
  const Split split = split_pairs(numbered_pairs(20), 3, 0, 7);
  const std::string out = dir / "run/split";
  write_split(split, out);
  EXPECT_EQ(test::read_file(out + "/valid.tsv"), "");
  const std::string first = split.test[0].source + "\t" + split.test[0].target + "\n";
  EXPECT_EQ(test::read_file(out + "/test.tsv").rfind(first, 0), 0u);
  const Split back = read_split(out);
  ASSERT_EQ(back.train.size(), split.train.size());
  ASSERT_EQ(back.test.size(), split.test.size());
  EXPECT_TRUE(back.valid.empty());
  for (size_t i = 0; i < back.train.size(); ++i) {
    EXPECT_EQ(back.train[i].source, split.train[i].source);
    EXPECT_EQ(back.train[i].target, split.train[i].target);
    EXPECT_EQ(back.train[i].line, static_cast<int64_t>(i) + 1);  // line in train.tsv
  }
  Split bad = split;
  bad.train[0].target = "has\ttab";
  expect_error([&] { write_split(bad, out); }, "contains a tab or line break");
  test::write_file(out + "/test.tsv", "only one column\n");
  expect_error([&] { read_split(out); }, out + "/test.tsv:1: no tab");
  test::write_file(out + "/train.tsv", "");
  expect_error([&] { read_split(out); }, "has no sentence pair");
}

TEST(Pairs, BucketBatches) {
  std::mt19937_64 rng(3);
  std::vector<int64_t> lengths(1003);
  for (auto& l : lengths) l = 1 + static_cast<int64_t>(uniform_below(rng, 40));

  for (int64_t chunk_batches : {100, 4}) {
    const auto batches = bucket_batches(lengths, 16, 11, true, chunk_batches);
    std::vector<int64_t> all;
    int64_t short_batches = 0, spread = 0;
    for (const auto& b : batches) {
      EXPECT_GE(b.size(), 1u);
      EXPECT_LE(b.size(), 16u);
      if (b.size() < 16) ++short_batches;
      all.insert(all.end(), b.begin(), b.end());
      int64_t lo = 1000, hi = 0;
      for (int64_t i : b) {
        lo = std::min(lo, lengths[i]);
        hi = std::max(hi, lengths[i]);
      }
      spread += hi - lo;
    }
    EXPECT_EQ(short_batches, 1);
    std::sort(all.begin(), all.end());
    std::vector<int64_t> want(lengths.size());
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(all, want);
    // Random batches of 16 lengths from 1..40 spread ~35 on average; sorted chunks of 64 about
    // 10, the whole data set sorted (one chunk) about 0.
    EXPECT_LT(static_cast<double>(spread) / batches.size(), chunk_batches == 100 ? 1.0 : 15.0);
    EXPECT_EQ(batches, bucket_batches(lengths, 16, 11, true, chunk_batches));
    EXPECT_NE(batches, bucket_batches(lengths, 16, 12, true, chunk_batches));
  }

  const auto ordered = bucket_batches(lengths, 10, 0, false);
  std::vector<int64_t> flat;
  for (const auto& b : ordered) flat.insert(flat.end(), b.begin(), b.end());
  EXPECT_TRUE(std::is_sorted(flat.begin(), flat.end(), [&](int64_t a, int64_t b) {
    return lengths[a] != lengths[b] ? lengths[a] < lengths[b] : a < b;
  }));
  EXPECT_EQ(ordered.back().size(), 3u);
  EXPECT_TRUE(bucket_batches({}, 4, 1, true).empty());
  expect_error([&] { bucket_batches(lengths, 0, 1, true); }, "batch_size must be >= 1");
}

}  // namespace
}  // namespace zoo::data
