#include "core/input_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace zoo {

namespace fs = std::filesystem;

uint64_t check_input_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                          const std::string& raise_with) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::exists(status)) throw Error(cat(what, " ", path, ": no such file"));
  if (fs::is_directory(status)) throw Error(cat(what, " ", path, ": is a directory, expected a file"));
  if (!fs::is_regular_file(status))
    throw Error(cat(what, " ", path, ": is not a regular file (a device, FIFO or socket); give a file"));
  const uint64_t size = fs::file_size(path, ec);
  if (ec) throw Error(cat(what, " ", path, ": cannot read its size (", ec.message(), ")"));
  if (max_bytes > 0 && size > max_bytes)
    throw Error(cat(what, " ", path, ": ", size, " bytes, above the cap of ", max_bytes / (1024 * 1024), " MiB",
                    raise_with.empty() ? std::string() : cat(" (", raise_with, ")")));
  return size;
}

std::string read_input_file(const std::string& path, const std::string& what, uint64_t max_bytes,
                            const std::string& raise_with) {
  const uint64_t size = check_input_file(path, what, max_bytes, raise_with);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(what, " ", path, ": cannot open (", std::strerror(errno), ")"));
  std::string bytes(size, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  bytes.resize(static_cast<size_t>(in.gcount()));  // a file that shrank meanwhile
  if (in.bad()) throw Error(cat(what, " ", path, ": read error (", std::strerror(errno), ")"));
  return bytes;
}

uint64_t number_from_env(const char* name, uint64_t default_value) {
  const char* v = std::getenv(name);
  if (!v || !*v) return default_value;
  char* end = nullptr;
  errno = 0;
  const unsigned long long n = std::strtoull(v, &end, 10);
  if (*end != '\0' || n == 0 || errno == ERANGE || v[0] == '-')
    throw Error(cat(name, "='", v, "': expected a positive whole number"));
  return static_cast<uint64_t>(n);
}

std::string read_text_input(const std::string& path, const std::string& what) {
  return read_input_file(path, what, number_from_env("ZOO_MAX_TEXT_MIB", 64) << 20, "set ZOO_MAX_TEXT_MIB to raise it");
}

}  // namespace zoo
