// zoo::Classifier: a BERT text classifier or a ViT image classifier behind one class.
#include "zoo/zoo.h"

#include "api/labels.h"
#include "data/image_file.h"
#include "data/text.h"
#include "models/quantize.h"
#include "io/inference_model.h"
#include "predict/image_classifier.h"
#include "predict/text_classifier.h"

namespace zoo {

namespace {
constexpr size_t kRowsPerForward = 32;  // rows per forward: bounded memory for long lists
}  // namespace

struct Classifier::Impl {
  std::string dir;
  std::unique_ptr<TextClassifier> text;
  std::unique_ptr<ImageClassifier> image;

  std::vector<std::vector<Label>> images(const std::vector<torch::Tensor>& decoded, int top_k) const {
    std::vector<std::vector<Label>> out;
    api::in_chunks(decoded.size(), kRowsPerForward, [&](size_t first, size_t last) {
      const std::vector<torch::Tensor> part(decoded.begin() + first, decoded.begin() + last);
      for (auto& row : api::top_labels(image->probabilities(torch::stack(part)), image->label_names(), top_k))
        out.push_back(std::move(row));
    });
    return out;
  }
  void need(bool image_model, const char* call) const {
    if (image_model ? !image : !text)
      throw Error(cat(dir, ": ", image ? "an image" : "a text", " classifier; ", call, " needs ",
                      image_model ? "an image (ViT)" : "a text (BERT)", " classifier"));
  }
};

Classifier::Classifier(const std::string& dir, torch::Device device, const LoadOptions& load)
    : impl_(std::make_unique<Impl>()) {
  models::check_quantize(load.quantize, device, "LoadOptions::quantize");
  impl_->dir = dir;
  const auto source = open_inference_source(dir);
  require_task(source, dir, {"text_classification", "image_classification"}, "zoo classify");
  if (source.task() == "text_classification")
    impl_->text = load_text_classifier(source, device, load.quantize);
  else
    impl_->image = load_image_classifier(source, device, load.quantize);
}
Classifier::~Classifier() = default;
Classifier::Classifier(Classifier&&) noexcept = default;
Classifier& Classifier::operator=(Classifier&&) noexcept = default;

std::string Classifier::kind() const { return impl_->text ? "text" : "image"; }

std::vector<std::vector<Label>> Classifier::classify_texts(const std::vector<std::string>& texts, int top_k) const {
  impl_->need(false, "classify_texts");
  api::check_range("top_k", top_k, 1, 1000000);
  api::check_not_blank(texts, "text");
  for (size_t i = 0; i < texts.size(); ++i) data::check_utf8(texts[i], cat("text ", i));
  std::vector<std::vector<Label>> out;
  api::in_chunks(texts.size(), kRowsPerForward, [&](size_t first, size_t last) {
    const std::vector<std::string> part(texts.begin() + first, texts.begin() + last);
    for (auto& row : api::top_labels(impl_->text->probabilities(part), impl_->text->label_names(), top_k))
      out.push_back(std::move(row));
  });
  return out;
}

std::vector<std::vector<Label>> Classifier::classify_images(const std::vector<std::string>& paths, int top_k) const {
  impl_->need(true, "classify_images");
  api::check_range("top_k", top_k, 1, 1000000);
  const int64_t channels = impl_->image->image_channels(), size = impl_->image->image_size();
  std::vector<torch::Tensor> decoded;  // every file first: a bad one fails before any model work
  for (const auto& path : paths) decoded.push_back(data::load_image(path, channels, size, size));
  return impl_->images(decoded, top_k);
}

std::vector<std::vector<Label>> Classifier::classify_image_bytes(const std::vector<std::string>& images,
                                                                 int top_k) const {
  impl_->need(true, "classify_image_bytes");
  api::check_range("top_k", top_k, 1, 1000000);
  const int64_t channels = impl_->image->image_channels(), size = impl_->image->image_size();
  std::vector<torch::Tensor> decoded;
  for (size_t i = 0; i < images.size(); ++i)
    decoded.push_back(data::decode_image(images[i], cat("image ", i), channels, size, size));
  return impl_->images(decoded, top_k);
}

}  // namespace zoo
