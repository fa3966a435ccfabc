#include "predict/text_stream.h"

#include <algorithm>

namespace zoo {

size_t complete_utf8(const std::string& bytes) {
  size_t end = bytes.size(), back = 0;
  while (end > 0 && back < 4 && (static_cast<unsigned char>(bytes[end - 1]) & 0xC0) == 0x80) --end, ++back;
  if (end == 0) return bytes.size();
  const auto lead = static_cast<unsigned char>(bytes[end - 1]);
  const size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
  return back + 1 >= need ? bytes.size() : end - 1;
}

TextStream::TextStream(const TextGenerator& generator, std::vector<std::string> stop,
                       std::function<void(const std::string&)> emit)
    : generator_(generator), stop_(std::move(stop)), emit_(std::move(emit)) {
  for (const auto& s : stop_) hold_ = std::max(hold_, s.size());
}

bool TextStream::add(int64_t token) {
  if (stopped_) return false;
  if (token == generator_.eos_id()) {
    stopped_ = true;
    return false;
  }
  ids_.push_back(token);
  const std::string text = generator_.decode(ids_);
  for (const auto& s : stop_)
    if (!s.empty()) stop_at_ = std::min(stop_at_, text.find(s));
  if (stop_at_ != std::string::npos) {
    emit_upto(text, stop_at_);
    stopped_ = true;
    return false;
  }
  size_t safe = complete_utf8(text);
  if (hold_ > 1) safe = safe > hold_ - 1 ? complete_utf8(text.substr(0, safe - (hold_ - 1))) : 0;
  emit_upto(text, safe);
  return true;
}

void TextStream::finish() {
  const std::string all = text();
  emit_upto(all, complete_utf8(all));
}

std::string TextStream::text() const {
  const std::string all = generator_.decode(ids_);
  return all.substr(0, std::min(stop_at_, all.size()));
}

void TextStream::emit_upto(const std::string& text, size_t upto) {
  upto = std::min(upto, text.size());
  if (upto > emitted_) {
    if (emit_) emit_(text.substr(emitted_, upto - emitted_));
    emitted_ = upto;
  }
}

}  // namespace zoo
