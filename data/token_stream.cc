#include "data/token_stream.h"
#include "core/output_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "data/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace zoo::data {

TokenStream::TokenStream(const std::string& path, int bytes_per_token) : path_(path), width_(bytes_per_token) {
  if (width_ != 2 && width_ != 4) throw Error(cat(path, ": token width must be 2 or 4 bytes, not ", width_));
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(cat(path, ": cannot open token stream: ", std::strerror(errno)));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(cat(path, ": cannot stat: ", std::strerror(errno)));
  }
  bytes_ = static_cast<size_t>(st.st_size);
  if (bytes_ == 0 || bytes_ % width_ != 0) {
    ::close(fd);
    throw Error(cat(path, ": ", bytes_, " bytes is not a whole, non-zero number of ", width_,
                    "-byte token ids; rebuild the stream (delete it) or fix the id width"));
  }
  void* map = ::mmap(nullptr, bytes_, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED) throw Error(cat(path, ": cannot memory-map: ", std::strerror(errno)));
  ::madvise(map, bytes_, MADV_RANDOM);  // random windows: no read-ahead of whole megabytes
  data_ = static_cast<const unsigned char*>(map);
  size_ = static_cast<int64_t>(bytes_ / width_);
}

TokenStream::~TokenStream() { release(); }

void TokenStream::release() {
  if (data_) ::munmap(const_cast<unsigned char*>(data_), bytes_);
  data_ = nullptr;
}

TokenStream::TokenStream(TokenStream&& o) noexcept { *this = std::move(o); }

TokenStream& TokenStream::operator=(TokenStream&& o) noexcept {
  if (this != &o) {
    release();
    path_ = std::move(o.path_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    width_ = o.width_;
    size_ = o.size_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

int64_t TokenStream::operator[](int64_t i) const {
  const unsigned char* p = data_ + static_cast<size_t>(i) * width_;
  if (width_ == 2) return static_cast<int64_t>(p[0] | (p[1] << 8));
  return static_cast<int64_t>(static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
                              (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24));
}

void TokenStream::read(int64_t offset, int64_t n, int64_t* out) const {
  if (offset < 0 || n < 0 || offset + n > size_)
    throw Error(cat(path_, ": tokens ", offset, "..", offset + n, " outside the stream's ", size_));
  for (int64_t i = 0; i < n; ++i) out[i] = (*this)[offset + i];
}

int token_width(int64_t vocab_size) { return vocab_size <= 65536 ? 2 : 4; }

namespace {

json source_record(const std::string& file) {
  std::error_code ec;
  const auto size = fs::file_size(file, ec);
  if (ec) throw Error(cat(file, ": cannot read: ", ec.message()));
  const auto mtime = fs::last_write_time(file, ec).time_since_epoch().count();
  return {{"path", fs::absolute(file).lexically_normal().string()}, {"size", size}, {"mtime", mtime}};
}

// Where to cut `buf` (bytes [0, n) read so far; `eof` when nothing follows): after the last
// newline, else at the last character boundary. Returns n at the end of the file.
size_t cut_point(const std::string& buf, size_t n, bool eof) {
  if (eof) return n;
  const size_t nl = buf.rfind('\n', n - 1);
  if (nl != std::string::npos) return nl + 1;
  size_t cut = n;  // back up over UTF-8 continuation bytes (10xxxxxx) to a lead byte
  while (cut > 0 && (static_cast<unsigned char>(buf[cut - 1]) & 0xC0) == 0x80) --cut;
  return cut > 0 ? cut - 1 : n;  // the lead byte starts the next piece
}

// Appends ids to `out` as little-endian integers of `width` bytes.
void write_ids(std::ofstream& out, const std::vector<int64_t>& ids, int width, int64_t vocab_size,
               const std::string& file) {
  std::string bytes(ids.size() * width, '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t id = ids[i];
    if (id < 0 || id >= vocab_size)
      throw Error(cat(file, ": the tokenizer produced id ", id, " outside its vocabulary of ", vocab_size));
    for (int b = 0; b < width; ++b) bytes[i * width + b] = static_cast<char>((id >> (8 * b)) & 0xFF);
  }
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// Encodes one file into `out`, piece by piece; returns the number of tokens.
int64_t encode_file(const std::string& file, std::ofstream& out,
                    const std::function<std::vector<int64_t>(std::string_view)>& encode, int width,
                    int64_t vocab_size, int64_t chunk_bytes, const std::function<void(int64_t)>& advanced) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(cat(file, ": cannot open: ", std::strerror(errno)));
  std::string buf;
  int64_t tokens = 0, offset = 0;  // offset: file position of buf[0]
  bool eof = false;
  while (!eof || !buf.empty()) {
    if (!eof) {
      const size_t have = buf.size();
      buf.resize(have + static_cast<size_t>(chunk_bytes));
      in.read(&buf[have], chunk_bytes);
      buf.resize(have + static_cast<size_t>(in.gcount()));
      eof = in.gcount() < chunk_bytes;
    }
    if (buf.empty()) break;
    const size_t cut = cut_point(buf, buf.size(), eof);
    const std::string_view piece(buf.data(), cut);
    const size_t bad = find_invalid_utf8(piece);
    if (bad != std::string::npos)
      throw Error(cat(file, ": invalid UTF-8 at byte ", offset + static_cast<int64_t>(bad),
                      "; convert the file to UTF-8 (e.g. iconv -f latin1 -t utf-8)"));
    const auto ids = encode(piece);
    write_ids(out, ids, width, vocab_size, file);
    tokens += static_cast<int64_t>(ids.size());
    offset += static_cast<int64_t>(cut);
    if (advanced) advanced(static_cast<int64_t>(cut));
    buf.erase(0, cut);
  }
  if (offset == 0) throw Error(cat(file, ": empty file; give text files with content"));
  return tokens;
}

}  // namespace

int64_t write_token_stream(const std::vector<std::string>& files, const std::string& path,
                           const std::function<std::vector<int64_t>(std::string_view)>& encode, int64_t vocab_size,
                           const json& meta, const std::function<void(int64_t, int64_t)>& progress,
                           int64_t chunk_bytes) {
  if (files.empty()) throw Error("no text files given to tokenise");
  json sources = json::array();
  int64_t total = 0, done = 0;
  for (const auto& f : files) {
    sources.push_back(source_record(f));
    total += sources.back()["size"].get<int64_t>();
  }
  const int width = token_width(vocab_size);
  const std::string tmp = path + ".tmp";
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(cat(tmp, ": cannot write: ", std::strerror(errno)));
  int64_t tokens = 0;
  try {
    for (const auto& f : files)
      tokens += encode_file(f, out, encode, width, vocab_size, chunk_bytes, [&](int64_t n) {
        done += n;
        if (progress) progress(done, total);
      });
    out.close();
    if (!out) throw Error(cat(tmp, ": write failed (disk full?)"));
  } catch (...) {
    fs::remove(tmp, ec);
    throw;
  }
  if (tokens == 0) {
    fs::remove(tmp, ec);
    throw Error("the text files produced no tokens");
  }
  fs::rename(tmp, path, ec);
  if (ec) throw Error(cat(path, ": cannot rename into place: ", ec.message()));
  json sidecar = {{"meta", meta}, {"tokens", tokens}, {"bytes_per_token", width}, {"sources", sources}};
  write_file_checked(path + ".json", sidecar.dump(2) + "\n");
  return tokens;
}

json current_stream_sidecar(const std::string& path, const std::vector<std::string>& files, const json& meta) {
  std::error_code ec;
  if (!fs::exists(path, ec) || !fs::exists(path + ".json", ec)) return nullptr;
  json sidecar;
  try {
    std::ifstream in(path + ".json");
    sidecar = json::parse(in);
  } catch (const std::exception&) {
    return nullptr;
  }
  if (!sidecar.is_object() || sidecar.value("meta", json()) != meta) return nullptr;
  json sources = json::array();
  for (const auto& f : files) {
    if (!fs::exists(f, ec)) return nullptr;
    sources.push_back(source_record(f));
  }
  if (sidecar.value("sources", json()) != sources) return nullptr;
  const auto width = sidecar.value("bytes_per_token", 0);
  if (fs::file_size(path, ec) != sidecar.value("tokens", uint64_t{0}) * width) return nullptr;
  return sidecar;
}

}  // namespace zoo::data
