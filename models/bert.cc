#include "models/bert.h"

#include <cmath>

#include "models/bert_electra.h"
#include "models/kernels/cross_entropy.h"
#include "models/kernels/dropout.h"
#include "models/kernels/gelu.h"
#include "models/kernels/linear.h"
#include "models/module_path.h"
#include "models/entry_helpers.h"

namespace zoo::models {

void BertOptions::validate() const {
  if (hidden_size % num_attention_heads != 0)
    throw Error(cat("config: model.hidden_size (", hidden_size, ") must be divisible by model.num_attention_heads (",
                    num_attention_heads, ")"));
  if (vocab_size <= 0) throw Error("config: model.vocab_size must be set (or come from the data's vocabulary)");
  if (pad_token_id >= vocab_size)
    throw Error(cat("config: model.pad_token_id (", pad_token_id, ") must be below model.vocab_size (", vocab_size, ")"));
  if (!labels.empty() && static_cast<int64_t>(labels.size()) != num_labels)
    throw Error(cat("config: model.labels has ", labels.size(), " names but model.num_labels is ", num_labels));
}

namespace {
torch::nn::LayerNorm layer_norm(const BertOptions& o) {
  return torch::nn::LayerNorm(torch::nn::LayerNormOptions({o.hidden_size}).eps(o.layer_norm_eps));
}
}  // namespace

BertLayerImpl::BertLayerImpl(const BertOptions& o)
    : attention(register_module("attention",
                                MultiHeadAttention(MultiHeadAttentionOptions(o.hidden_size, o.num_attention_heads)
                                                       .dropout(o.attention_probs_dropout_prob)
                                                       .names("self.query", "self.key", "self.value",
                                                              "output.dense")))),
      attention_block(*this, ResidualOptions(o.hidden_size)
                                 .pre_norm(false)
                                 .eps(o.layer_norm_eps)
                                 .dropout(o.hidden_dropout_prob)
                                 .norm_name("attention.output.LayerNorm")),
      output_block(*this, ResidualOptions(o.hidden_size)
                              .pre_norm(false)
                              .eps(o.layer_norm_eps)
                              .dropout(o.hidden_dropout_prob)
                              .norm_name("output.LayerNorm")),
      feed_forward(*this, FeedForwardOptions(o.hidden_size, o.intermediate_size)
                              .activation(o.hidden_act)
                              .fc1_name("intermediate.dense")
                              .fc2_name("output.dense")) {}

torch::Tensor BertLayerImpl::forward(const torch::Tensor& x, const torch::Tensor& attention_mask) {
  auto h = attention_block(x, [&](const torch::Tensor& n) { return attention(n, AttentionMask(attention_mask)); });
  return output_block(h, [&](const torch::Tensor& n) { return feed_forward(n); });
}

BertModelImpl::BertModelImpl(const BertOptions& o) : o_(o) {
  o.validate();
  word_embeddings = register_at(*this, "embeddings.word_embeddings",
                                torch::nn::Embedding(torch::nn::EmbeddingOptions(o.vocab_size, o.hidden_size)
                                                         .padding_idx(o.pad_token_id)));
  positions.emplace(*this, LearnedPositionsOptions(o.max_position_embeddings, o.hidden_size)
                               .name("embeddings.position_embeddings"));
  token_type_embeddings = register_at(*this, "embeddings.token_type_embeddings",
                                      torch::nn::Embedding(o.type_vocab_size, o.hidden_size));
  embeddings_norm = register_at(*this, "embeddings.LayerNorm", layer_norm(o));
  for (int64_t i = 0; i < o.num_hidden_layers; ++i) layers->push_back(BertLayer(o));
  register_at(*this, "encoder.layer", layers);
  pooler = register_at(*this, "pooler.dense", torch::nn::Linear(o.hidden_size, o.hidden_size));
}

torch::Tensor BertModelImpl::embed(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                   int64_t position_offset) {
  TORCH_CHECK(input_ids.dim() == 2, "BERT expects input_ids of shape (B, T), got ", input_ids.sizes());
  if (position_offset < 0 || position_offset + input_ids.size(1) > o_.max_position_embeddings)
    throw Error(cat("BERT: ", input_ids.size(1), " tokens", position_offset ? cat(" from position ", position_offset) : "",
                    " but the model has ", o_.max_position_embeddings, " positions (model.max_position_embeddings)"));
  auto types = token_type_ids.defined() ? token_type_ids : torch::zeros_like(input_ids);
  auto x = embeddings_norm((*positions)(word_embeddings(input_ids) + token_type_embeddings(types), position_offset));
  return apply_dropout(x, o_.hidden_dropout_prob, is_training());
}

torch::Tensor BertModelImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                     const torch::Tensor& attention_mask, int64_t position_offset) {
  return encode(*layers, embed(input_ids, token_type_ids, position_offset), attention_mask);
}

torch::Tensor BertModelImpl::encode(torch::nn::ModuleListImpl& blocks, torch::Tensor x,
                                    const torch::Tensor& attention_mask) {
  for (const auto& layer : blocks) {
    auto* block = layer->as<BertLayer>();
    x = checkpointed(is_training(), x,
                     [block, attention_mask](const torch::Tensor& in) { return block->forward(in, attention_mask); });
  }
  return x;
}

void BertModelImpl::init_weights(torch::nn::Module& owner) const {
  init_weights_hf(owner, o_.initializer_range);
  if (o_.position_embedding_init != "sinusoidal") return;
  torch::NoGradGuard no_grad;
  const auto& table = positions->weight;  // sin/cos values have std 1/sqrt(2)
  table.copy_(sinusoidal_positions(table.size(0), table.size(1)) * (o_.initializer_range * std::sqrt(2.0)));
}

torch::Tensor BertModelImpl::pool(const torch::Tensor& hidden) {
  return torch::tanh(apply_linear(pooler, hidden.select(1, 0)));
}

torch::Tensor BertModelImpl::pool_mean(const torch::Tensor& hidden, const torch::Tensor& attention_mask) {
  if (!attention_mask.defined()) return torch::tanh(apply_linear(pooler, hidden.mean(1)));
  const auto keep = attention_mask.unsqueeze(-1).to(torch::kFloat);  // summed in fp32 under autocast too
  const auto mean = (hidden.to(torch::kFloat) * keep).sum(1) / keep.sum(1).clamp_min(1);
  return torch::tanh(apply_linear(pooler, mean.to(hidden.scalar_type())));
}

BertForPreTrainingImpl::BertForPreTrainingImpl(const BertOptions& o) : o_(o) {
  bert = register_module("bert", BertModel(o));
  transform = register_at(*this, "cls.predictions.transform.dense", torch::nn::Linear(o.hidden_size, o.hidden_size));
  transform_norm = register_at(*this, "cls.predictions.transform.LayerNorm", layer_norm(o));
  bias = register_parameter_at(*this, "cls.predictions.bias", torch::zeros({o.vocab_size}));
  seq_relationship = register_at(*this, "cls.seq_relationship", torch::nn::Linear(o.hidden_size, 2));
  bert->init_weights(*this);
}

BertPreTrainingOutput BertForPreTrainingImpl::forward(const torch::Tensor& input_ids, const torch::Tensor& token_type_ids,
                                                      const torch::Tensor& attention_mask, const torch::Tensor& selected,
                                                      int64_t position_offset, const torch::Tensor& labels) {
  auto hidden = bert(input_ids, token_type_ids, attention_mask, position_offset);
  auto t = activation(o_.hidden_act, apply_linear(transform, selected.defined() ? hidden.index({selected}) : hidden));
  t = transform_norm(t.to(hidden.scalar_type()));  // under autocast the dense gives bf16; the norm's weights are fp32
  auto next = apply_linear(seq_relationship, bert->pool(hidden));
  const auto& words = bert->word_embeddings->weight;
  if (labels.defined()) return {torch::Tensor(), next, linear_cross_entropy(t, words, labels, 0, bias)};
  return {torch::nn::functional::linear(t, words, bias), next, torch::Tensor()};
}

BertForSequenceClassificationImpl::BertForSequenceClassificationImpl(const BertOptions& o) : o_(o) {
  bert = register_module("bert", BertModel(o));
  classifier = register_module("classifier", torch::nn::Linear(o.hidden_size, o.num_labels));
  bert->init_weights(*this);
}

torch::Tensor BertForSequenceClassificationImpl::forward(const torch::Tensor& input_ids,
                                                         const torch::Tensor& token_type_ids,
                                                         const torch::Tensor& attention_mask) {
  const auto hidden = bert(input_ids, token_type_ids, attention_mask);
  auto pooled = o_.classifier_pooling == "mean" ? bert->pool_mean(hidden, attention_mask) : bert->pool(hidden);
  pooled = apply_dropout(pooled, o_.hidden_dropout_prob, is_training());
  return apply_linear(classifier, pooled);
}

void bert_from_hf_tensors(std::map<std::string, torch::Tensor>& tensors) {
  for (const char* name : {"cls.predictions.decoder.weight", "cls.predictions.decoder.bias",
                           "bert.embeddings.position_ids"})
    tensors.erase(name);
}

void bert_to_hf_tensors(std::map<std::string, torch::Tensor>& tensors) {
  auto words = tensors.find("bert.embeddings.word_embeddings.weight");
  auto bias = tensors.find("cls.predictions.bias");
  if (words != tensors.end() && bias != tensors.end()) {
    tensors["cls.predictions.decoder.weight"] = words->second.clone();
    tensors["cls.predictions.decoder.bias"] = bias->second.clone();
  }
}

// The registry entry (models/registry.h).
namespace {
json resolve_bert(const json& merged) {
  auto o = read_options<BertOptions>(merged, "model", {"model_type"});
  BertOptions check = o;  // vocab_size 0 means "from the data": the task fills it in
  if (check.vocab_size == 0) check.vocab_size = check.pad_token_id + 1;
  check.validate();
  json out = {{"model_type", "bert"}};
  out.update(to_json(o));
  return out;
}

json bert_from_hf(const json& hf) { return entry::with_labels_of_hf(entry::same_named_fields<BertOptions>(hf, "bert"), hf); }

json bert_to_hf(const json& model, const std::string& architecture) {
  if (architecture == "BertForPreTraining" && model.value("pretraining_head", std::string("mlm")) != "mlm")
    throw Error("an ELECTRA pretraining checkpoint (model.pretraining_head electra) has no Hugging Face "
                "BertForPreTraining form: fine-tune it (zoo finetune --from CHECKPOINT) and export that");
  if (architecture == "BertForSequenceClassification" && model.value("classifier_pooling", std::string("cls")) != "cls")
    throw Error("a classifier that pools the mean of the tokens (model.classifier_pooling mean) has no Hugging "
                "Face form: BertForSequenceClassification pools the first token");
  json hf = model;
  if (architecture == "BertForSequenceClassification") {
    hf = entry::with_hf_labels(model);
  } else {  // pretraining heads have no classes
    hf.erase("labels");
    hf.erase("num_labels");
  }
  for (const char* zoo_field : {"position_embedding_init", "pretraining_head", "generator_hidden_size", "classifier_pooling"})
    hf.erase(zoo_field);  // zoo's own fields, not BertConfig's
  hf["architectures"] = {architecture};
  hf["position_embedding_type"] = "absolute";
  hf["torch_dtype"] = "float32";
  return hf;
}
}  // namespace

ModelEntry bert_entry() {
  ModelEntry e;
  e.model_type = "bert";
  e.default_task = "bert_pretraining";
  e.resolve = resolve_bert;
  e.describe = describe_options<BertOptions>;
  e.from_hf = bert_from_hf;
  e.to_hf = bert_to_hf;
  e.architectures = {{"bert_pretraining", "BertForPreTraining"},
                     {"text_classification", "BertForSequenceClassification"}};
  e.fact_keys = {{"vocab_size", "vocab_size"}, {"pad_id", "pad_token_id"}, {"labels", "labels"}};
  e.architecture_keys = {"hidden_size", "num_hidden_layers", "num_attention_heads", "intermediate_size",
                         "hidden_act", "max_position_embeddings", "type_vocab_size", "layer_norm_eps"};
  // The head is the task's: the classifier for text classification, else the pretraining head.
  e.build = [](const json& section, const std::string& task) -> std::shared_ptr<torch::nn::Module> {
    const auto o = read_options<BertOptions>(section, "model", {"model_type"});
    if (task == "text_classification") return BertForSequenceClassification(o).ptr();
    if (o.pretraining_head == "electra") return BertForReplacedTokenDetection(o).ptr();
    return BertForPreTraining(o).ptr();
  };
  e.from_hf_tensors = bert_from_hf_tensors;
  e.to_hf_tensors = bert_to_hf_tensors;
  return e;
}

}  // namespace zoo::models
