// Labelled texts (data/reviews.h): the IMDB archive's folders and the Kaggle CSV, RFC 4180
// quoting, HTML line breaks, and every kind of bad input named with its file and row.
#include "data/reviews.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "test_util.h"

namespace fs = std::filesystem;

namespace zoo::data {
namespace {

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Reviews, FoldersGiveLabelsRatingsAndNoHtmlBreaks) {
  test::TempDir dir;
  const fs::path root = fs::path(dir.path()) / "aclImdb" / "train";
  for (const char* sub : {"pos", "neg", "unsup"}) fs::create_directories(root / sub);
  test::write_file((root / "pos" / "10_9.txt").string(), "Great film.<br /><br />Loved it.");
  test::write_file((root / "pos" / "2_7.txt").string(), "Fine.");
  test::write_file((root / "neg" / "3_1.txt").string(), "Dull.<br/>Avoid.");
  test::write_file((root / "unsup" / "4_0.txt").string(), "No label here.");
  test::write_file((root / "pos" / "notes.md").string(), "not a review");
  TextReadReport report;
  const auto texts = read_text_folders(root.string(), {"neg", "pos", "unsup"}, {}, report);
  ASSERT_EQ(texts.size(), 4u);
  EXPECT_EQ(report.read, 4);
  EXPECT_EQ(texts[0].label, "neg");
  EXPECT_EQ(texts[0].text, "Dull. Avoid.");
  EXPECT_EQ(texts[0].rating, 1);
  EXPECT_EQ(texts[1].text, "Great film.  Loved it.");  // sorted by name: 10_9 before 2_7
  EXPECT_EQ(texts[1].rating, 9);
  EXPECT_EQ(texts[2].rating, 7);
  EXPECT_EQ(texts[3].label, "");  // unsup
  TextReadOptions keep;
  keep.keep_html = true;
  EXPECT_EQ(read_text_folders(root.string(), {"neg"}, keep, report)[0].text, "Dull.<br/>Avoid.");
  EXPECT_NE(error_of([&] { read_text_folders(root.string(), {"positive"}, {}, report); }).find("train/positive: no such folder"),
            std::string::npos);
}

TEST(Reviews, CsvQuotingFollowsRfc4180) {
  test::TempDir dir;
  const std::string path = dir / "imdb.csv";
  test::write_file(path,
                   "\xEF\xBB\xBFreview,sentiment\r\n"
                   "\"One, two and \"\"three\"\".<br /><br />Next line\nstill the review.\",positive\r\n"
                   "Plain review,negative\n"
                   "\n"
                   "\"Last\",\" positive \"");
  TextReadReport report;
  const auto texts = read_text_csv(path, "review", "sentiment", {}, report);
  ASSERT_EQ(texts.size(), 3u);
  EXPECT_EQ(texts[0].text, "One, two and \"three\".  Next line\nstill the review.");
  EXPECT_EQ(texts[0].label, "positive");
  EXPECT_EQ(texts[0].where, path + ":2");
  EXPECT_EQ(texts[1].where, path + ":4");  // the quoted newline counts
  EXPECT_EQ(texts[2].label, "positive");
  EXPECT_EQ(report.skipped, 0);
}

TEST(Reviews, BadCsvRowsAreNamedSkippedOrFatal) {
  test::TempDir dir;
  const std::string path = dir / "bad.csv";
  test::write_file(path, "review,sentiment\nGood,positive\nan, unquoted comma,negative\n   ,positive\nOk,\n");
  TextReadReport report;
  auto texts = read_text_csv(path, "review", "sentiment", {}, report);
  EXPECT_EQ(texts.size(), 1u);
  EXPECT_EQ(report.skipped, 3);
  ASSERT_EQ(report.messages.size(), 3u);
  EXPECT_EQ(report.messages[0], path + ":3: 3 fields where the header has 2 (an unquoted comma in a text? quote the field)");
  EXPECT_EQ(report.messages[1], path + ":4: empty text");
  EXPECT_EQ(report.messages[2], path + ":5: empty label");
  TextReadOptions strict;
  strict.strict = true;
  EXPECT_EQ(error_of([&] { read_text_csv(path, "review", "sentiment", strict, report); }), report.messages[0]);

  // An unbalanced quote that a later row's quote closes merged the rows between, silently, also
  // when strict: 10 rows gave 9. Now that row is named (and skipped, or fatal when strict).
  {
    std::string csv = "review,sentiment\n";
    for (int i = 1; i <= 10; ++i)
      csv += i == 3 ? "\"an unbalanced quote,positive\n" : i == 6 ? "\"quoted\",negative\n" : "row " + std::to_string(i) + ",positive\n";
    test::write_file(path, csv);
    TextReadReport merged;
    texts = read_text_csv(path, "review", "sentiment", {}, merged);
    EXPECT_EQ(texts.size(), 6u);  // rows 1, 2, 7-10: rows 3-6 ran together into one malformed row
    ASSERT_EQ(merged.messages.size(), 1u);
    EXPECT_EQ(merged.messages[0].rfind(path + ":4: the quoted field opened on line 4 is closed by a quote followed by text", 0), 0u)
        << merged.messages[0];
    EXPECT_EQ(error_of([&] { read_text_csv(path, "review", "sentiment", strict, merged); }), merged.messages[0]);
  }
  test::write_file(path, "review,sentiment\nfine,positive\n\"never closed,negative\nmore\n");
  EXPECT_EQ(error_of([&] { read_text_csv(path, "review", "sentiment", {}, report); }),
            path + ":3: a quoted field opened on this line is never closed (unterminated quote)");
  test::write_file(path, "text,label\na,b\n");
  EXPECT_EQ(error_of([&] { read_text_csv(path, "review", "sentiment", {}, report); }),
            path + ": no column 'review' in the header (its columns: text, label); set data.text_column / data.label_column");
  test::write_file(path, "");
  EXPECT_NE(error_of([&] { read_text_csv(path, "review", "", {}, report); }).find("empty file"), std::string::npos);
}

TEST(Reviews, InvalidUtf8IsNamedByByteOrReplaced) {
  test::TempDir dir;
  const std::string path = dir / "bytes.csv";
  const std::string head = "review,sentiment\nok,positive\n";
  test::write_file(path, head + "caf\xE9 au lait,negative\n");
  TextReadReport report;
  auto texts = read_text_csv(path, "review", "sentiment", {}, report);
  EXPECT_EQ(texts.size(), 1u);
  ASSERT_EQ(report.messages.size(), 1u);
  EXPECT_NE(report.messages[0].find(path + ":3: invalid UTF-8 at byte " + std::to_string(head.size() + 3)),
            std::string::npos)
      << report.messages[0];
  TextReadOptions replace;
  replace.replace_invalid_utf8 = true;
  texts = read_text_csv(path, "review", "sentiment", replace, report);
  ASSERT_EQ(texts.size(), 2u);
  EXPECT_EQ(texts[1].text, "caf\xEF\xBF\xBD au lait");

  const fs::path root = fs::path(dir.path()) / "t";
  fs::create_directories(root / "pos");
  test::write_file((root / "pos" / "1_8.txt").string(), "abc\xFF");
  TextReadOptions strict;
  strict.strict = true;
  EXPECT_NE(error_of([&] { read_text_folders(root.string(), {"pos"}, strict, report); })
                .find("1_8.txt: invalid UTF-8 at byte 3"),
            std::string::npos);
}

}  // namespace
}  // namespace zoo::data
