#include "models/model_size.h"

#include "core/error.h"
#include "models/bert.h"
#include "models/gpt.h"
#include "models/seq2seq.h"
#include "models/transformer.h"
#include "models/vit.h"

namespace zoo::models {
namespace {

// Counts in double: a hostile config's sizes overflow int64 products.
int64_t clamp(double n) { return n > 9.0e18 ? int64_t(9.0e18) : int64_t(n); }
double linear(double in, double out) { return in * out + out; }
double layer_norm(double d) { return 2 * d; }
double attention(double d) { return 4 * linear(d, d); }

template <class Options>
Options options_of(const json& section) {
  return read_options<Options>(section, "model", {"model_type", "bos_id", "eos_id"});
}

std::string field(const char* key, int64_t value) { return cat("model.", key, "=", value); }

ModelSize gpt2_size(const json& section) {
  const auto o = options_of<GPT2Options>(section);
  const double d = o.n_embd, inner = o.inner();
  const double block = 2 * layer_norm(d) + linear(d, 3 * d) + linear(d, d) + linear(d, inner) + linear(inner, d);
  const double p = double(o.vocab_size) * d + double(o.n_positions) * d + double(o.n_layer) * block + layer_norm(d);
  return {clamp(p), o.n_layer, o.n_embd, o.n_head, o.vocab_size, 0,
          join({field("n_layer", o.n_layer), field("n_embd", o.n_embd), field("n_inner", o.n_inner),
                field("vocab_size", o.vocab_size), field("n_positions", o.n_positions)})};
}

ModelSize bert_size(const json& section) {
  const auto o = options_of<BertOptions>(section);
  const double d = o.hidden_size, i = o.intermediate_size;
  const double layer = attention(d) + 2 * layer_norm(d) + linear(d, i) + linear(i, d);
  const double embeddings = double(o.vocab_size + o.max_position_embeddings + o.type_vocab_size) * d + layer_norm(d);
  const double heads = linear(d, d) /* pooler */ + linear(d, d) + layer_norm(d) + double(o.vocab_size) /* MLM */ +
                       linear(d, 2) /* NSP */;
  return {clamp(embeddings + double(o.num_hidden_layers) * layer + heads), o.num_hidden_layers, o.hidden_size,
          o.num_attention_heads, o.vocab_size, 0,
          join({field("num_hidden_layers", o.num_hidden_layers), field("hidden_size", o.hidden_size),
                field("intermediate_size", o.intermediate_size), field("vocab_size", o.vocab_size)})};
}

ModelSize vit_size(const json& section) {
  const auto o = options_of<ViTOptions>(section);
  const double d = o.hidden_size, i = o.intermediate_size;
  const double patches = double(o.image_size / o.patch_size) * double(o.image_size / o.patch_size);
  const double layer = attention(d) + 2 * layer_norm(d) + linear(d, i) + linear(i, d);
  const double p = linear(double(o.num_channels) * o.patch_size * o.patch_size, d) + d + (patches + 1) * d +
                   double(o.num_hidden_layers) * layer + layer_norm(d) + linear(d, double(o.num_labels));
  return {clamp(p), o.num_hidden_layers, o.hidden_size, o.num_attention_heads, 0, clamp(patches + 1),
          join({field("num_hidden_layers", o.num_hidden_layers), field("hidden_size", o.hidden_size),
                field("intermediate_size", o.intermediate_size), field("image_size", o.image_size),
                field("patch_size", o.patch_size)})};
}

ModelSize transformer_size(const json& section) {
  const auto o = options_of<TransformerOptions>(section);
  const double d = o.d_model;
  const double encoder = attention(d) + 2 * layer_norm(d) + linear(d, o.encoder_ffn_dim) + linear(o.encoder_ffn_dim, d);
  const double decoder =
      2 * attention(d) + 3 * layer_norm(d) + linear(d, o.decoder_ffn_dim) + linear(o.decoder_ffn_dim, d);
  const double embeddings = double(o.share_encoder_decoder_embeddings ? 0 : o.source_vocab_size) * d +
                            double(o.target_vocab_size) * d * (o.tie_word_embeddings ? 1 : 2);
  const double p = embeddings + double(o.encoder_layers) * encoder + double(o.decoder_layers) * decoder;
  return {clamp(p), o.encoder_layers + o.decoder_layers, o.d_model,
          std::max(o.encoder_attention_heads, o.decoder_attention_heads), o.target_vocab_size, 0,
          join({field("encoder_layers", o.encoder_layers), field("decoder_layers", o.decoder_layers),
                field("d_model", o.d_model), field("encoder_ffn_dim", o.encoder_ffn_dim),
                field("source_vocab_size", o.source_vocab_size), field("target_vocab_size", o.target_vocab_size)})};
}

double gru(double in, double units, int64_t layers, int directions) {
  double p = 0;
  for (int64_t l = 0; l < layers; ++l, in = units * directions) p += directions * 3 * (in * units + units * units + 2 * units);
  return p;
}

ModelSize seq2seq_size(const json& section) {
  const auto o = options_of<Seq2SeqOptions>(section);
  const double e = o.embedding_dim, u = o.units, a = o.attention_units > 0 ? o.attention_units : o.units;
  const int directions = o.bidirectional_encoder ? 2 : 1;
  const double values = u * directions;
  const double encoder = double(o.source_vocab_size) * e + gru(e, u, o.num_layers, directions) +
                         (o.bidirectional_encoder ? linear(2 * u, u) : 0);
  const double attention_scores = linear(values, a) + linear(u, a) + linear(a, 1);
  const double decoder = double(o.target_vocab_size) * e + gru(e + values, u, o.num_layers, 1) +
                         linear(u, double(o.target_vocab_size)) + attention_scores;
  return {clamp(encoder + decoder), 2 * o.num_layers, o.units, 0, o.target_vocab_size, 0,
          join({field("units", o.units), field("embedding_dim", o.embedding_dim), field("num_layers", o.num_layers),
                field("source_vocab_size", o.source_vocab_size), field("target_vocab_size", o.target_vocab_size)})};
}

}  // namespace

ModelSize model_size(const json& section) {
  const std::string type = section.value("model_type", std::string());
  if (type == "gpt2") return gpt2_size(section);
  if (type == "bert") return bert_size(section);
  if (type == "vit") return vit_size(section);
  if (type == "transformer") return transformer_size(section);
  if (type == "seq2seq") return seq2seq_size(section);
  throw Error(cat("config: no size estimate for model_type '", type, "'"));
}

}  // namespace zoo::models
