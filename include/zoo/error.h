#pragma once
// zoo's one error type (part of the public API, <zoo/zoo.h>). Every failure a user can cause
// (a bad file, config, device or hostile checkpoint) is a zoo::Error whose message is one line
// naming the file or key and, where there is one, the fix: the line the zoo command prints
// after "zoo: error: ".
#include <stdexcept>

#include "zoo/export.h"

namespace zoo {

class ZOO_API Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace zoo
