#pragma once
// Files named by a user, a config or a checkpoint are inputs: zoo reads them only when they
// are regular files (not a device such as /dev/zero, a FIFO or a directory) and, where the
// whole file goes into memory, only up to a cap named in the error.
#include <cstdint>
#include <string>

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

/// The positive whole number in environment variable `name`, or `default_value` when it is
/// unset or empty; anything else is a zoo::Error naming the variable.
uint64_t number_from_env(const char* name, uint64_t default_value);

}  // namespace zoo
