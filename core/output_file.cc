#include "core/output_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "core/error.h"

namespace zoo {

OutputFile::OutputFile(std::string path, std::string shown)
    : path_(std::move(path)), shown_(shown.empty() ? path_ : std::move(shown)), f_(std::fopen(path_.c_str(), "wb")) {
  if (!f_) throw Error(cat(shown_, ": cannot open for writing (", std::strerror(errno), ")"));
}

OutputFile::~OutputFile() {
  if (!f_) return;
  std::fclose(f_);
  std::remove(path_.c_str());
}

void OutputFile::write(const void* data, size_t n) {
  if (!failed_ && n > 0 && std::fwrite(data, 1, n, f_) != n) failed_ = errno ? errno : EIO;
}

void OutputFile::close() {
  if (std::fflush(f_) != 0 && !failed_) failed_ = errno ? errno : EIO;
  if (std::fclose(f_) != 0 && !failed_) failed_ = errno ? errno : EIO;
  f_ = nullptr;
  if (failed_) {
    std::remove(path_.c_str());
    throw Error(cat(shown_, ": cannot write (", std::strerror(failed_), ")"));
  }
}

void write_file_checked(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  OutputFile out(tmp, path);
  out.write(bytes.data(), bytes.size());
  out.close();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    std::remove(tmp.c_str());
    throw Error(cat(path, ": cannot write (", std::strerror(e), ")"));
  }
}

}  // namespace zoo
