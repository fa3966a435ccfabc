// zoo::Encoder: sentence embeddings from a BERT model (predict/text_encoder.h).
#include "zoo/zoo.h"

#include "api/labels.h"
#include "data/text.h"
#include "models/quantize.h"
#include "predict/text_encoder.h"

namespace zoo {

struct Encoder::Impl {
  std::unique_ptr<TextEncoder> encoder;
};

Encoder::Encoder(const std::string& dir, torch::Device device, const LoadOptions& load)
    : impl_(std::make_unique<Impl>()) {
  models::check_quantize(load.quantize, device, "LoadOptions::quantize");
  impl_->encoder = load_text_encoder(dir, device, load.quantize);
}
Encoder::~Encoder() = default;
Encoder::Encoder(Encoder&&) noexcept = default;
Encoder& Encoder::operator=(Encoder&&) noexcept = default;

torch::Tensor Encoder::embed(const std::vector<std::string>& texts, Pooling pooling) const {
  api::check_not_blank(texts, "text");
  for (size_t i = 0; i < texts.size(); ++i) data::check_utf8(texts[i], cat("text ", i));
  std::vector<torch::Tensor> parts;
  api::in_chunks(texts.size(), 32, [&](size_t first, size_t last) {
    parts.push_back(impl_->encoder->embed({texts.begin() + first, texts.begin() + last}, pooling == Pooling::Mean));
  });
  return parts.empty() ? impl_->encoder->embed({}, true) : torch::cat(parts);
}

int64_t Encoder::count_tokens(const std::string& text) const { return impl_->encoder->count_tokens(text); }

}  // namespace zoo
