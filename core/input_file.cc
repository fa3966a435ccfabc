#include "core/input_file.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

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

namespace {
constexpr const char* kRaiseTextCap = "set ZOO_MAX_TEXT_MIB to raise it";
}  // namespace

uint64_t text_cap_bytes() { return number_from_env("ZOO_MAX_TEXT_MIB", 64) << 20; }

std::string read_text_input(const std::string& path, const std::string& what) {
  return read_input_file(path, what, text_cap_bytes(), kRaiseTextCap);
}

LineReader::LineReader(std::istream& in, std::string name) : in_(in), name_(std::move(name)), cap_(text_cap_bytes()) {}

bool LineReader::next(std::string& line) {
  line.clear();
  std::streambuf* buf = in_.rdbuf();
  int c = buf ? buf->sbumpc() : EOF;
  if (c == EOF) return false;
  ++number_;
  for (; c != EOF && c != '\n'; c = buf->sbumpc()) {
    if (line.size() >= cap_)
      throw Error(cat(name_, " line ", number_, ": longer than ", cap_, " bytes (the text cap); split it into lines, or ",
                      kRaiseTextCap));
    line.push_back(static_cast<char>(c));
  }
  if (!line.empty() && line.back() == '\r') line.pop_back();
  if (number_ == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);  // byte-order mark
  return true;
}

std::vector<std::string> read_input_lines(std::istream& in, const std::string& name) {
  LineReader reader(in, name);
  const uint64_t cap = text_cap_bytes();
  uint64_t total = 0;
  std::vector<std::string> lines;
  for (std::string line; reader.next(line);) {
    total += line.size() + 1;
    if (total > cap)
      throw Error(cat(name, " line ", reader.line_number(), ": the input passes ", cap, " bytes (the text cap) here; give "
                      "fewer lines at once, or ", kRaiseTextCap));
    lines.push_back(std::move(line));
  }
  return lines;
}

std::vector<std::string> read_input_lines(const std::string& path, const std::string& what) {
  std::istringstream in(read_text_input(path, what));
  return read_input_lines(in, cat(what, " ", path));
}

}  // namespace zoo
