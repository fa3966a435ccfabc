#pragma once
// A file written with every write, flush and close checked: a full disk is one zoo::Error
// naming the file and the reason, and the partial file is removed.
#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace zoo {

class OutputFile {
 public:
  /// Opens `path` for writing; errors name `shown` (default: `path`), e.g. the final name of a
  /// temporary file. Throws zoo::Error when it cannot be opened.
  explicit OutputFile(std::string path, std::string shown = "");
  ~OutputFile();                          // an unclosed file (an exception on the way) is removed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  /// Writes `n` bytes; a failure is kept and reported by close(), so that a writer that
  /// cannot fail cleanly (LibTorch's archive sink) may go on calling.
  void write(const void* data, size_t n);
  /// Flushes and closes; throws zoo::Error (and removes the file) if any step failed.
  void close();

 private:
  std::string path_, shown_;
  FILE* f_ = nullptr;
  int failed_ = 0;  // errno of the first failure
};

/// Writes `bytes` to `path` through a temporary sibling renamed into place: a failed write
/// leaves no partial file (and an existing file as it was) and is one zoo::Error naming `path`.
void write_file_checked(const std::string& path, std::string_view bytes);

}  // namespace zoo
