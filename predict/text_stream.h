#pragma once
// Generated tokens as text while they come: what `zoo generate`, zoo::Generator and zoo serve
// show of a continuation. Text is held back while it could still become a stop string or is the
// start of a UTF-8 character; the first stop string ends the text (it is not shown).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "predict/text_generator.h"

namespace zoo {

/// Length of the longest prefix of `bytes` that ends on a UTF-8 character boundary.
size_t complete_utf8(const std::string& bytes);

class TextStream {
 public:
  /// `emit` receives each new piece of text.
  TextStream(const TextGenerator& generator, std::vector<std::string> stop, std::function<void(const std::string&)> emit);
  /// Adds a generated token; false once the text has ended (a stop string, or the end-of-text
  /// token, which is not added).
  bool add(int64_t token);
  /// Emits what was held back (unless a stop string ended the text).
  void finish();
  /// The text so far (cut before a stop string), the tokens that make it, and whether the end-of-text
  /// token or a stop string ended it.
  std::string text() const;
  const std::vector<int64_t>& tokens() const { return ids_; }
  bool stopped() const { return stopped_; }

 private:
  void emit_upto(const std::string& text, size_t upto);
  const TextGenerator& generator_;
  std::vector<std::string> stop_;
  std::function<void(const std::string&)> emit_;
  std::vector<int64_t> ids_;
  size_t hold_ = 0, emitted_ = 0, stop_at_ = std::string::npos;
  bool stopped_ = false;
};

}  // namespace zoo
