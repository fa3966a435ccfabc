#pragma once
// Labelled texts for classification and BERT pretraining: the IMDB reviews in both layouts
// document 000 and the archive use, and any two-column CSV or folder-per-label tree.
//
//   folders  ROOT/<label>/<name>.txt, one text per file (the archive's aclImdb/{train,test}/
//            {pos,neg}/<id>_<rating>.txt, train/unsup unlabelled); files in sorted order
//   CSV      RFC 4180: a header row naming the columns, fields separated by commas, quoted
//            fields with embedded commas, newlines and doubled quotes (""), CRLF or LF
//            (the Kaggle "IMDB Dataset.csv": review,sentiment)
//
// Reviews hold HTML line breaks ("<br />"): they become spaces unless keep_html is set.
// Bad input is named with its file and row (CSV) or file: a malformed CSV row, an empty
// text, invalid UTF-8 (with the byte offset in the file). By default such a row or file is
// skipped and counted in the report; `strict` makes it an error, `replace_invalid_utf8`
// replaces invalid bytes with U+FFFD instead.
#include <cstdint>
#include <string>
#include <vector>

namespace zoo::data {

struct LabeledText {
  std::string text;
  std::string label;    // "" for unlabelled text (aclImdb/train/unsup)
  int64_t rating = -1;  // aclImdb's <id>_<rating>.txt, else -1
  std::string where;    // file, or file:row for CSV rows
};

struct TextReadOptions {
  bool strict = false;                // bad rows/files are errors instead of skipped
  bool replace_invalid_utf8 = false;  // U+FFFD for invalid bytes instead of a bad row/file
  bool keep_html = false;             // keep "<br />" line breaks as they are
};

struct TextReadReport {
  int64_t read = 0;     // texts returned
  int64_t skipped = 0;  // bad rows or files left out
  std::vector<std::string> messages;  // the first few reasons, "file:row: why"
};

/// When texts were skipped: "zoo: warning: skipped N bad <noun>s (data.strict=true makes this
/// an error):" and the reasons, on stderr.
void warn_skipped(const TextReadReport& report, const std::string& noun);

/// The texts of ROOT/<label>/*.txt for every label folder in `labels` (in that order; files
/// sorted by name within each), e.g. read_text_folders("aclImdb/train", {"neg", "pos"}).
std::vector<LabeledText> read_text_folders(const std::string& root, const std::vector<std::string>& labels,
                                           const TextReadOptions& options, TextReadReport& report);

/// The rows of a CSV file with a header: the text from `text_column`, the label from
/// `label_column` ("" = no label column). A missing column is a zoo::Error naming the
/// columns the header has.
std::vector<LabeledText> read_text_csv(const std::string& path, const std::string& text_column,
                                       const std::string& label_column, const TextReadOptions& options,
                                       TextReadReport& report);

/// "<br />" (and "<br/>", "<br>") -> " ".
std::string replace_html_breaks(const std::string& text);

/// Splits RFC 4180 CSV text into rows of fields. Each row also gets the line it starts on
/// (1-based). An unterminated quoted field is a zoo::Error naming `where` and that line.
struct CsvRow {
  std::vector<std::string> fields;
  int64_t line = 0;
  int64_t byte = 0;  // offset of the row in the text
  /// Why the row is malformed though it parsed, or "": a quoted field whose closing quote is
  /// followed by more text (RFC 4180 allows only a comma or the line's end there), which is
  /// what an unbalanced quote does when a later quote closes it, rows merged in between.
  std::string problem;
};
std::vector<CsvRow> parse_csv(const std::string& text, const std::string& where);

}  // namespace zoo::data
