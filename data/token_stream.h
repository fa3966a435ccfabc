#pragma once
// Token streams: a corpus tokenised once into a flat binary file of uint16 or uint32 ids
// (nanoGPT's train.bin: little-endian, no header) and memory-mapped, so that training reads
// random windows of a corpus larger than memory. A JSON sidecar (PATH.json) records the id
// width, the count, the tokenizer's fingerprint and the source files (size, mtime), so a
// stream is rebuilt only when its sources or tokenizer change.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace zoo::data {

/// Read-only view of a stream file, memory-mapped. Movable, not copyable.
class TokenStream {
 public:
  /// Maps `path`, whose ids are `bytes_per_token` (2 or 4) wide. Throws zoo::Error naming the
  /// file when it is missing, empty, or its size is not a multiple of the id width.
  TokenStream(const std::string& path, int bytes_per_token);
  ~TokenStream();
  TokenStream(TokenStream&& other) noexcept;
  TokenStream& operator=(TokenStream&& other) noexcept;
  TokenStream(const TokenStream&) = delete;
  TokenStream& operator=(const TokenStream&) = delete;

  int64_t size() const { return size_; }
  int64_t operator[](int64_t i) const;
  /// Tokens [offset, offset + n) into out[0 .. n); throws zoo::Error when out of range.
  void read(int64_t offset, int64_t n, int64_t* out) const;
  const std::string& path() const { return path_; }

 private:
  void release();
  std::string path_;
  const unsigned char* data_ = nullptr;
  size_t bytes_ = 0;
  int width_ = 2;
  int64_t size_ = 0;
};

/// Bytes per id for a vocabulary: 2 up to 65,536 ids, else 4.
int token_width(int64_t vocab_size);

/// Tokenises UTF-8 files into a stream file at `path` (written to PATH.tmp and renamed, with
/// the sidecar PATH.json holding `meta` plus "tokens", "bytes_per_token" and "sources").
/// Files are read in pieces of about `chunk_bytes` cut after a newline (or at a character
/// boundary in very long lines) and each piece is encoded on its own, so memory stays
/// bounded. Invalid UTF-8 is an error naming the file and the byte offset; so is an empty
/// file. `progress` (if set) is called with the bytes done and the total. Returns the number
/// of tokens.
int64_t write_token_stream(const std::vector<std::string>& files, const std::string& path,
                           const std::function<std::vector<int64_t>(std::string_view)>& encode, int64_t vocab_size,
                           const nlohmann::json& meta,
                           const std::function<void(int64_t, int64_t)>& progress = {},
                           int64_t chunk_bytes = 1 << 20);

/// The sidecar of a stream file, or null when there is none or its sources changed (size or
/// mtime) since it was written, or its "meta" differs from `meta`.
nlohmann::json current_stream_sidecar(const std::string& path, const std::vector<std::string>& files,
                                      const nlohmann::json& meta);

}  // namespace zoo::data
