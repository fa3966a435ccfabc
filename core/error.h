#pragma once
// zoo's one error type. Every user-facing failure (bad file, bad config, bad
// device, hostile checkpoint) is thrown as zoo::Error with a single line that
// names the file/key and, where there is one, the fix. tools/zoo_main.cc prints
// it as "zoo: error: <message>" and exits 1; nothing is ever half-written.
#include <sstream>
#include <string>
#include <utility>

#include "zoo/error.h"  // zoo::Error, part of the public API

namespace zoo {

/// Builds a message from any streamable pieces: throw Error(cat("bad ", x)).
template <class... Args>
std::string cat(Args&&... args) {
  std::ostringstream os;
  (os << ... << std::forward<Args>(args));
  return os.str();
}

}  // namespace zoo
