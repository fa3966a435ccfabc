#include "predict/image_classifier.h"

#include "core/error.h"
#include "data/images.h"
#include "io/checkpoint.h"
#include "io/inference_model.h"

namespace zoo {

ImageClassifier::ImageClassifier(models::ViTForImageClassification model, data::ImageDataOptions data)
    : model_(std::move(model)), data_(std::move(data)) {}

torch::Tensor ImageClassifier::probabilities(const torch::Tensor& images) {
  torch::NoGradGuard no_grad;
  const auto device = model_->parameters().front().device();
  auto x = data::to_float_normalized(images, data_.mean, data_.std).to(device);
  return torch::softmax(model_->predict(x, data_.test_time_views()), -1).to(torch::kCPU);
}

std::unique_ptr<ImageClassifier> load_image_classifier(const std::string& given, const torch::Device& device,
                                                       const std::string& quantize) {
  return load_image_classifier(open_inference_source(given, "image_classification", "zoo classify on images"), device,
                               quantize);
}

std::unique_ptr<ImageClassifier> load_image_classifier(const InferenceSource& opened, const torch::Device& device,
                                                       const std::string& quantize) {
  require_task(opened, opened.dir, {"image_classification"}, "zoo classify on images");
  const auto& [dir, config] = opened;
  const std::string type = config.at("model").value("model_type", std::string());
  auto data = read_options<data::ImageDataOptions>(config.value("data", json::object()), "data");
  models::ViTForImageClassification model(
      std::dynamic_pointer_cast<models::ViTForImageClassificationImpl>(
          load_inference_model(dir, config, device, quantize)));
  if (model.is_empty()) throw Error(cat(dir, ": model_type '", type, "' is not a ViT image classifier"));
  data.resolve(model->options().num_channels);
  return std::make_unique<ImageClassifier>(std::move(model), std::move(data));
}

}  // namespace zoo
