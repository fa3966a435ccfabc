#pragma once
// Files named by a user, a config or a checkpoint are inputs: zoo reads them only when they
// are regular files (not a device such as /dev/zero, a FIFO or a directory) and, where the
// whole file goes into memory, only up to a cap named in the error.
#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace zoo {

/// Throws zoo::Error naming `what` and `path` unless `path` (after symbolic links) is a
/// regular file; and, when `max_bytes` > 0, unless it holds at most that many bytes (the cap
/// and how to raise it, `raise_with`, in the message). Returns the file's size.
uint64_t check_input_file(const std::string& path, const std::string& what, uint64_t max_bytes = 0,
                          const std::string& raise_with = "");

/// The whole file after check_input_file(path, what, max_bytes, raise_with).
std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const std::string& raise_with = "");

/// A text input read whole (a config, a vocabulary, a text to classify) under the text cap:
/// 64 MiB, or ZOO_MAX_TEXT_MIB.
std::string read_text_input(const std::string& path, const std::string& what);

/// The text cap in bytes: 64 MiB, or ZOO_MAX_TEXT_MIB.
uint64_t text_cap_bytes();

/// The lines of a stream that has no size to check first (standard input), one at a time: without
/// their ends (LF or CRLF), a UTF-8 byte-order mark before the first dropped. A line longer than
/// the text cap is a zoo::Error naming the stream (`name`: "stdin", "--input FILE") and the line,
/// so memory stays bounded whatever the stream holds (/dev/zero is one endless line).
class LineReader {
 public:
  LineReader(std::istream& in, std::string name);
  /// The next line into `line`; false at the end of the stream.
  bool next(std::string& line);
  /// The 1-based number of the line next() gave last.
  int64_t line_number() const { return number_; }

 private:
  std::istream& in_;
  std::string name_;
  uint64_t cap_;
  int64_t number_ = 0;
};

/// Every line of `in` (LineReader's rules), the whole stream under the text cap too.
std::vector<std::string> read_input_lines(std::istream& in, const std::string& name);
/// Every line of the text file `path` (read_text_input's rules, then LineReader's); `what` names
/// it ("--input"): messages say "WHAT PATH line N".
std::vector<std::string> read_input_lines(const std::string& path, const std::string& what);

/// The positive whole number in environment variable `name`, or `default_value` when it is
/// unset or empty; anything else is a zoo::Error naming the variable.
uint64_t number_from_env(const char* name, uint64_t default_value);

}  // namespace zoo
