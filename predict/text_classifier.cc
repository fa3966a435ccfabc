#include "predict/text_classifier.h"

#include <filesystem>

#include "core/error.h"
#include "io/checkpoint.h"
#include "io/inference_model.h"
#include "models/registry.h"

namespace zoo {

TextClassifier::TextClassifier(models::BertForSequenceClassification model, data::ClassificationTextEncoder encoder,
                               std::vector<std::string> labels)
    : model_(std::move(model)), encoder_(std::move(encoder)), labels_(std::move(labels)) {}

torch::Tensor TextClassifier::probabilities(const std::vector<std::string>& texts) {
  std::vector<std::vector<int64_t>> encoded;
  for (const auto& t : texts) encoded.push_back(encoder_.encode(t));
  std::vector<const std::vector<int64_t>*> rows;
  for (const auto& e : encoded) rows.push_back(&e);
  auto [ids, mask] = encoder_.pad(rows);
  const auto device = model_->parameters().front().device();
  torch::NoGradGuard no_grad;
  return model_->forward(ids.to(device), {}, mask.to(device)).softmax(-1).to(torch::kCPU);
}

std::unique_ptr<TextClassifier> load_text_classifier(const std::string& given, const torch::Device& device,
                                                     const std::string& quantize) {
  return load_text_classifier(open_inference_source(given, "text_classification", "zoo classify on texts"), device,
                              quantize);
}

std::unique_ptr<TextClassifier> load_text_classifier(const InferenceSource& opened, const torch::Device& device,
                                                     const std::string& quantize) {
  require_task(opened, opened.dir, {"text_classification"}, "zoo classify on texts");
  const auto& [dir, config] = opened;
  const auto data = read_options<data::TextClassificationDataOptions>(config.value("data", json::object()), "data");
  models::BertForSequenceClassification model(std::dynamic_pointer_cast<models::BertForSequenceClassificationImpl>(
      load_inference_model(dir, config, device, quantize)));  // the vocabulary's fingerprint checked too
  const std::string source = (std::filesystem::path(dir) / "config.json").string();
  if (model.is_empty()) throw Error(cat(source, ": not a BERT sequence classifier"));
  data::ClassificationTextEncoder encoder(dir, data);
  DataFacts facts = encoder.facts(data.labels);
  facts.mismatch_hint = cat("this vocabulary does not belong to the model of ", source);
  models::complete_model_section(config.at("model"), facts);  // throws when they disagree
  if (static_cast<int64_t>(data.labels.size()) != model->options().num_labels)
    throw Error(cat(source, ": data.labels has ", data.labels.size(), " names but the model has ",
                    model->options().num_labels, " labels"));
  return std::make_unique<TextClassifier>(std::move(model), std::move(encoder), data.labels);
}

}  // namespace zoo
