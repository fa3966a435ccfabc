#pragma once
// FNV-1a, 64 bits: a fingerprint of bytes (not for security).
#include <cstdint>
#include <string_view>

namespace zoo {

/// FNV-1a of `bytes`, continuing from `h` (the offset basis for a fresh hash).
inline uint64_t fnv1a(std::string_view bytes, uint64_t h = 1469598103934665603ULL) {
  for (unsigned char c : bytes) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace zoo
