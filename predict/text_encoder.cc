#include "predict/text_encoder.h"

#include "core/error.h"
#include "data/bert_items.h"
#include "io/inference_model.h"

namespace zoo {

TextEncoder::TextEncoder(std::shared_ptr<torch::nn::Module> owner, models::BertModel bert,
                         data::ClassificationTextEncoder encoder)
    : owner_(std::move(owner)), bert_(std::move(bert)), encoder_(std::move(encoder)) {}

torch::Tensor TextEncoder::embed(const std::vector<std::string>& texts, bool mean) {
  const auto device = bert_->word_embeddings->weight.device();
  if (texts.empty()) return torch::empty({0, bert_->word_embeddings->weight.size(1)});
  std::vector<std::vector<int64_t>> encoded;
  for (const auto& t : texts) encoded.push_back(encoder_.encode(t));
  std::vector<const std::vector<int64_t>*> rows;
  for (const auto& e : encoded) rows.push_back(&e);
  auto [ids, mask] = encoder_.pad(rows);
  torch::NoGradGuard no_grad;
  ids = ids.to(device), mask = mask.to(device);
  const torch::Tensor hidden = bert_->forward(ids, {}, mask).to(torch::kFloat);  // (B, T, H)
  if (!mean) return hidden.select(1, 0).to(torch::kCPU).contiguous();
  const auto weights = mask.to(torch::kFloat).unsqueeze(-1);
  return ((hidden * weights).sum(1) / weights.sum(1)).to(torch::kCPU).contiguous();
}

namespace {
// The tokenizer side of a BERT directory: a classifier's data section as it is, a pretraining
// run's vocabulary (basic_english words) read to as many tokens as the model has positions.
data::TextClassificationDataOptions encoder_data(const InferenceSource& source) {
  const json data = source.config.value("data", json::object());
  const int64_t positions = source.config.at("model").value("max_position_embeddings", int64_t{512});
  if (source.task() == "text_classification") {
    auto o = read_options<data::TextClassificationDataOptions>(data, "data");
    o.max_length = std::min(o.max_length, positions);
    return o;
  }
  const auto pre = read_options<data::BertPretrainingDataOptions>(data, "data");
  data::TextClassificationDataOptions o;
  o.tokenizer = "basic_english";
  o.tokenizer_fingerprint = pre.tokenizer_fingerprint;
  o.max_length = positions;
  return o;
}

models::BertModel bert_of(const std::shared_ptr<torch::nn::Module>& model) {
  if (auto c = std::dynamic_pointer_cast<models::BertForSequenceClassificationImpl>(model)) return c->bert;
  if (auto p = std::dynamic_pointer_cast<models::BertForPreTrainingImpl>(model)) return p->bert;
  return models::BertModel(nullptr);
}
}  // namespace

std::unique_ptr<TextEncoder> load_text_encoder(const std::string& given, const torch::Device& device,
                                               const std::string& quantize) {
  const InferenceSource source = open_inference_source(given);
  require_task(source, given, {"text_classification", "bert_pretraining"}, "zoo::Encoder (a BERT model)");
  auto model = load_inference_model(source.dir, source.config, device, quantize);
  models::BertModel bert = bert_of(model);
  if (bert.is_empty())
    throw Error(cat(source.dir, ": its model is not a BERT with a classification or pretraining head; zoo::Encoder "
                                "needs one"));
  return std::make_unique<TextEncoder>(model, bert, data::ClassificationTextEncoder(source.dir, encoder_data(source)));
}

}  // namespace zoo
