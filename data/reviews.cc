#include "data/reviews.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.h"
#include "data/text.h"

namespace fs = std::filesystem;

namespace zoo::data {

namespace {

constexpr size_t kMaxMessages = 10;

std::string read_file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot open"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Invalid UTF-8 sequences -> U+FFFD, one per invalid byte.
std::string replace_invalid(std::string_view s) {
  std::string out;
  while (!s.empty()) {
    const size_t bad = find_invalid_utf8(s);
    if (bad == std::string::npos) {
      out += s;
      break;
    }
    out += s.substr(0, bad);
    out += "\xEF\xBF\xBD";
    s.remove_prefix(bad + 1);
  }
  return out;
}

// Records a bad row or file: an error when strict, else counted (with the first reasons kept).
void bad(const std::string& why, const TextReadOptions& options, TextReadReport& report) {
  if (options.strict) throw Error(why);
  ++report.skipped;
  if (report.messages.size() < kMaxMessages) report.messages.push_back(why);
}

// The text as a LabeledText would hold it, or "" with `why` set when it cannot be used.
// `file_byte` is where the first invalid byte is in the file (for the message).
// Whether `text` holds only whitespace (ASCII fast path; python_strip otherwise).
bool blank(const std::string& text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) return python_strip(text).empty();
    if (c != ' ' && (c < '\t' || c > '\r') && (c < '\x1c' || c > '\x1f')) return false;
  }
  return true;
}

// `valid`: the caller already knows the text is valid UTF-8 (a CSV checked as a whole).
std::string clean(std::string text, int64_t file_byte, const TextReadOptions& options, std::string* why,
                  bool valid = false) {
  const size_t invalid = valid ? std::string::npos : find_invalid_utf8(text);
  if (invalid != std::string::npos) {
    if (!options.replace_invalid_utf8) {
      *why = cat("invalid UTF-8 at byte ", file_byte >= 0 ? file_byte : static_cast<int64_t>(invalid),
                 " (set data.replace_invalid_utf8 to replace such bytes with U+FFFD)");
      return "";
    }
    text = replace_invalid(text);
  }
  if (!options.keep_html) text = replace_html_breaks(text);
  if (blank(text)) {
    *why = "empty text";
    return "";
  }
  return text;
}

// aclImdb's <id>_<rating>.txt -> rating, else -1.
int64_t rating_of(const std::string& stem) {
  const size_t us = stem.rfind('_');
  if (us == std::string::npos || us + 1 >= stem.size()) return -1;
  const std::string digits = stem.substr(us + 1);
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) || digits.size() > 3)
    return -1;
  return std::stoll(digits);
}

}  // namespace

std::string replace_html_breaks(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    if (text[i] == '<' && i + 3 < text.size() + 1 && (text.compare(i, 3, "<br") == 0 || text.compare(i, 3, "<BR") == 0)) {
      size_t j = i + 3;
      while (j < text.size() && text[j] == ' ') ++j;
      if (j < text.size() && text[j] == '/') ++j;
      if (j < text.size() && text[j] == '>') {
        out += ' ';
        i = j + 1;
        continue;
      }
    }
    out += text[i++];
  }
  return out;
}

std::vector<CsvRow> parse_csv(const std::string& text, const std::string& where) {
  std::vector<CsvRow> rows;
  CsvRow row;
  std::string field;
  int64_t line = 1, quote_line = 0;
  bool in_quotes = false, field_started = false, row_started = false;
  auto end_field = [&] {
    row.fields.push_back(std::move(field));
    field.clear();
    field_started = false;
  };
  auto end_row = [&] {
    end_field();
    rows.push_back(std::move(row));
    row = CsvRow();
    row_started = false;
  };
  const size_t start = text.compare(0, 3, "\xEF\xBB\xBF") == 0 ? 3 : 0;  // a byte-order mark
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (!row_started) {
      row.line = line;
      row.byte = static_cast<int64_t>(i);
      row_started = true;
    }
    if (in_quotes) {
      if (c == '"') {
        if (i + 1 < text.size() && text[i + 1] == '"') {
          field += '"';
          ++i;
        } else {
          in_quotes = false;
          const char next = i + 1 < text.size() ? text[i + 1] : ',';
          if (next != ',' && next != '\n' && next != '\r' && row.problem.empty())
            row.problem = cat("the quoted field opened on line ", quote_line, " is closed by a quote followed by text"
                              " (an unbalanced quote? rows up to line ", line, " ran together; escape a quote as \"\")");
        }
        continue;
      }
      // The run up to the next quote at once (newlines counted).
      size_t end = text.find('"', i);
      if (end == std::string::npos) end = text.size();
      line += std::count(text.begin() + static_cast<std::ptrdiff_t>(i), text.begin() + static_cast<std::ptrdiff_t>(end), '\n');
      field.append(text, i, end - i);
      i = end - 1;
      continue;
    }
    if (c == '"' && !field_started) {
      in_quotes = true;
      field_started = true;
      quote_line = line;
    } else if (c == ',') {
      end_field();
    } else if (c == '\n' || c == '\r') {
      if (c == '\r' && i + 1 < text.size() && text[i + 1] == '\n') ++i;
      ++line;
      end_row();
    } else {  // an unquoted run up to the next separator
      size_t end = text.find_first_of(",\r\n", i);
      if (end == std::string::npos) end = text.size();
      field.append(text, i, end - i);
      field_started = true;
      i = end - 1;
    }
  }
  if (in_quotes)
    throw Error(cat(where, ":", quote_line, ": a quoted field opened on this line is never closed (unterminated quote)"));
  if (row_started) end_row();
  return rows;
}

std::vector<LabeledText> read_text_folders(const std::string& root, const std::vector<std::string>& labels,
                                           const TextReadOptions& options, TextReadReport& report) {
  std::vector<LabeledText> out;
  for (const auto& label : labels) {
    const fs::path dir = fs::path(root) / label;
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw Error(cat(dir.string(), ": no such folder (expected ", root, "/<label>/*.txt, e.g. aclImdb/train/pos; ",
                      "tools/fetch_data.sh imdb)"));
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(dir))
      if (entry.is_regular_file() && entry.path().extension() == ".txt") files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    if (files.empty() && label != "unsup")
      throw Error(cat(dir.string(), ": no .txt file in this label's folder; every class of data.labels needs "
                                    "examples (fill the folder, or take '", label, "' out of data.labels)"));
    for (const auto& file : files) {
      std::string why;
      std::string text = clean(read_file_bytes(file.string()), -1, options, &why);
      if (text.empty()) {
        bad(cat(file.string(), ": ", why), options, report);
        continue;
      }
      out.push_back({std::move(text), label == "unsup" ? "" : label, rating_of(file.stem().string()), file.string()});
    }
  }
  report.read += static_cast<int64_t>(out.size());
  return out;
}

std::vector<LabeledText> read_text_csv(const std::string& path, const std::string& text_column,
                                       const std::string& label_column, const TextReadOptions& options,
                                       TextReadReport& report) {
  const std::string bytes = read_file_bytes(path);
  if (bytes.empty()) throw Error(cat(path, ": empty file (expected a CSV with a header row)"));
  std::vector<CsvRow> rows = parse_csv(bytes, path);
  // File offsets of invalid UTF-8, so a message names the byte exactly.
  std::vector<int64_t> invalid;
  for (size_t from = 0; from < bytes.size();) {
    const size_t bad_at = find_invalid_utf8(std::string_view(bytes).substr(from));
    if (bad_at == std::string::npos) break;
    invalid.push_back(static_cast<int64_t>(from + bad_at));
    from += bad_at + 1;
  }
  auto first_invalid_in = [&](size_t r) -> int64_t {
    const int64_t begin = rows[r].byte;
    const int64_t end = r + 1 < rows.size() ? rows[r + 1].byte : static_cast<int64_t>(bytes.size());
    auto it = std::lower_bound(invalid.begin(), invalid.end(), begin);
    return it != invalid.end() && *it < end ? *it : -1;
  };
  const auto& header = rows.at(0).fields;
  auto column = [&](const std::string& name) -> int64_t {
    for (size_t i = 0; i < header.size(); ++i)
      if (python_strip(header[i]) == name) return static_cast<int64_t>(i);
    std::string names;
    for (const auto& h : header) names += (names.empty() ? "" : ", ") + h;
    throw Error(cat(path, ": no column '", name, "' in the header (its columns: ", names,
                    "); set data.text_column / data.label_column"));
  };
  const int64_t text_at = column(text_column);
  const int64_t label_at = label_column.empty() ? -1 : column(label_column);
  std::vector<LabeledText> out;
  for (size_t r = 1; r < rows.size(); ++r) {
    CsvRow& row = rows[r];
    const std::string where = cat(path, ":", row.line);
    if (row.fields.size() == 1 && row.fields[0].empty()) continue;  // a blank line
    if (!row.problem.empty()) {
      bad(cat(where, ": ", row.problem), options, report);
      continue;
    }
    if (row.fields.size() != header.size()) {
      bad(cat(where, ": ", row.fields.size(), " fields where the header has ", header.size(),
              " (an unquoted comma in a text? quote the field)"),
          options, report);
      continue;
    }
    std::string why;
    std::string label = label_at >= 0 ? python_strip(row.fields[label_at]) : "";
    const int64_t bad_byte = first_invalid_in(r);
    std::string text = clean(std::move(row.fields[text_at]), bad_byte, options, &why, bad_byte < 0);
    if (text.empty()) {
      bad(cat(where, ": ", why), options, report);
      continue;
    }
    if (label_at >= 0 && label.empty()) {
      bad(cat(where, ": empty label"), options, report);
      continue;
    }
    out.push_back({std::move(text), std::move(label), -1, where});
  }
  report.read += static_cast<int64_t>(out.size());
  return out;
}

void warn_skipped(const TextReadReport& report, const std::string& noun) {
  if (report.skipped == 0) return;
  std::cerr << "zoo: warning: skipped " << report.skipped << " bad " << noun << (report.skipped == 1 ? "" : "s")
            << " (data.strict=true makes this an error):\n";
  for (const auto& m : report.messages) std::cerr << "  " << m << "\n";
}

}  // namespace zoo::data
