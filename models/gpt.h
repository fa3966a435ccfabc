#pragma once
// GPT (Radford et al. 2018, 2019), the decoder-only language model of document 000 ("GPT-1 =
// 12 masked decoder blocks, 768 dims"), in GPT-2's layout: pre-norm blocks (document 004's
// encoder layer with the causal mask), learned positions, GELU, a final LayerNorm and the
// output projection tied to the token embedding. Registered names are Hugging Face's
// GPT2LMHeadModel names:
//
//   transformer.wte / transformer.wpe              token / position embeddings
//   transformer.h.N.ln_1, transformer.h.N.ln_2     LayerNorms before attention / MLP
//   transformer.h.N.attn.c_attn                    query, key, value rows of one projection
//   transformer.h.N.attn.c_proj                    attention output
//   transformer.h.N.mlp.c_fc, transformer.h.N.mlp.c_proj
//   transformer.ln_f                               final LayerNorm
//   (lm_head = transformer.wte, not stored)
//
// Hugging Face stores c_attn, c_proj and c_fc as Conv1D, whose weight is the transpose of a
// Linear's: gpt2_from_hf_tensors / gpt2_to_hf_tensors convert, and every model.safetensors zoo
// writes holds Hugging Face's layout.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/options.h"
#include "models/attention.h"
#include "models/blocks.h"
#include "models/generation.h"
#include "models/quantize.h"
#include "models/recompute.h"

namespace zoo::models {

/// Hugging Face GPT2Config field names and defaults (gpt2, 124M).
struct GPT2Options {
  int64_t vocab_size = 50257;
  int64_t n_positions = 1024;
  int64_t n_embd = 768;
  int64_t n_layer = 12;
  int64_t n_head = 12;
  int64_t n_inner = 0;  // 0: 4 * n_embd (Hugging Face's null)
  std::string activation_function = "gelu_new";
  double resid_pdrop = 0.1;
  double embd_pdrop = 0.1;
  double attn_pdrop = 0.1;
  double layer_norm_epsilon = 1e-5;
  double initializer_range = 0.02;
  int64_t bos_token_id = -1;  // -1: none (the data's tokenizer fills in its end-of-text id)
  int64_t eos_token_id = -1;

  template <class V>
  void fields(V& v) {
    v("vocab_size", vocab_size, "tokens in the vocabulary (0: from the data's tokenizer)", at_least(0));
    v("n_positions", n_positions, "longest context (the position table)", at_least(1));
    v("n_embd", n_embd, "width of the token vectors", at_least(1));
    v("n_layer", n_layer, "number of decoder blocks", at_least(1));
    v("n_head", n_head, "attention heads (must divide n_embd)", at_least(1));
    v("n_inner", n_inner, "width of the MLP; 0 = 4 * n_embd", at_least(0));
    v("activation_function", activation_function, "MLP activation",
      one_of({"gelu_new", "gelu", "gelu_pytorch_tanh", "relu", "silu"}));
    v("resid_pdrop", resid_pdrop, "dropout on the blocks' outputs", between(0, 1));
    v("embd_pdrop", embd_pdrop, "dropout on the embeddings", between(0, 1));
    v("attn_pdrop", attn_pdrop, "dropout on the attention weights", between(0, 1));
    v("layer_norm_epsilon", layer_norm_epsilon, "LayerNorm epsilon", between(0, 1));
    v("initializer_range", initializer_range, "std of the normal init", between(0, 10));
    v("bos_token_id", bos_token_id, "start-of-text id (-1: none)", at_least(-1));
    v("eos_token_id", eos_token_id, "end-of-text id; generation stops there (-1: none)", at_least(-1));
  }
  /// Cross-field checks; throws zoo::Error naming the field.
  void validate() const;
  int64_t inner() const { return n_inner > 0 ? n_inner : 4 * n_embd; }
};

/// One pre-norm decoder block: x + attn(ln_1(x)), then x + mlp(ln_2(x)).
class GPT2BlockImpl : public torch::nn::Module {
 public:
  explicit GPT2BlockImpl(const GPT2Options& o);
  /// x (B, T, H) -> (B, T, H); with a cache, x holds the new steps only. `mask`: the keys
  /// each query may see besides the causal rule (padding).
  torch::Tensor forward(const torch::Tensor& x, KVCache* cache = nullptr, const AttentionMask& mask = {});

 private:
  Residual attention_block;  // ln_1
  MultiHeadAttention attn{nullptr};
  Residual mlp_block;  // ln_2
  FeedForward mlp;
};
TORCH_MODULE(GPT2Block);

/// The body (Hugging Face's GPT2Model): embeddings, blocks, final LayerNorm.
class GPT2ModelImpl : public torch::nn::Module, public GradientCheckpointing {
 public:
  explicit GPT2ModelImpl(const GPT2Options& o);
  /// input_ids (B, T) int64 -> hidden states (B, T, H). With caches (one per block), the ids
  /// are the next steps after the cached ones. attention_mask (B, cached + T), Hugging Face's:
  /// 1 = a token, 0 = padding (a left-padded batch of prompts): no query attends to padding,
  /// and positions count each row's tokens only, so a padded row computes what it would alone.
  torch::Tensor forward(const torch::Tensor& input_ids, std::vector<KVCache>* caches = nullptr,
                        const torch::Tensor& attention_mask = {});

  torch::nn::Embedding wte{nullptr};

 private:
  GPT2Options o_;
  std::optional<LearnedPositions> wpe;
  torch::nn::ModuleList h;
  torch::nn::LayerNorm ln_f{nullptr};
};
TORCH_MODULE(GPT2Model);

/// The language model (Hugging Face's GPT2LMHeadModel).
class GPT2LMHeadModelImpl : public torch::nn::Module, public SharedOutputWeight {
 public:
  explicit GPT2LMHeadModelImpl(const GPT2Options& o);
  /// input_ids (B, T) -> logits (B, T, vocab_size). See GPT2ModelImpl::forward for caches and
  /// the attention mask.
  torch::Tensor forward(const torch::Tensor& input_ids, std::vector<KVCache>* caches = nullptr,
                        const torch::Tensor& attention_mask = {});
  /// The training loss: the mean cross-entropy (fp32) of forward(input_ids) against `labels`
  /// (B, T), the next tokens, computed with the output layer in one (linear_cross_entropy).
  torch::Tensor loss(const torch::Tensor& input_ids, const torch::Tensor& labels);
  const GPT2Options& options() const { return o_; }
  /// The output projection's weight: the token embedding's (tied).
  torch::Tensor shared_output_weight() const override { return transformer->wte->weight; }
  /// GPT-2's init: N(0, initializer_range), the residual projections (c_proj) with std
  /// initializer_range / sqrt(2 n_layer), zero biases, LayerNorm (1, 0).
  void reset_parameters();

 private:
  GPT2Options o_;
  GPT2Model transformer{nullptr};
};
TORCH_MODULE(GPT2LMHeadModel);

/// Decoding with the model (models/generation.h's StepModel): the prompt is run once, then
/// each step feeds one token per row through the key/value caches. When the context fills
/// (n_positions), the caches are rebuilt from the last half of the window and decoding goes
/// on (nanoGPT crops the context the same way, recomputing every step). With use_cache false
/// every step recomputes the whole window (for comparison).
class GPT2Decoder : public StepModel {
 public:
  explicit GPT2Decoder(GPT2LMHeadModel model, bool use_cache = true);
  /// The state of one row holding `prompt` (at least one token); the batch start below with
  /// one prompt. A prompt longer than the context keeps its last n_positions tokens.
  DecoderState start(const std::vector<int64_t>& prompt);
  /// Several prompts (each at least one token) in one state, left-padded with `pad_id` to the
  /// longest and masked (GPT2ModelImpl::forward's attention_mask), so that each row decodes as
  /// it would alone. Each row's last token is fed at the first step in place of the step's
  /// previous token (GenerationOptions::bos_id is then only a placeholder).
  DecoderState start(const std::vector<std::vector<int64_t>>& prompts, int64_t pad_id);
  torch::Tensor step(const torch::Tensor& prev_tokens, DecoderState& state) override;

  /// Continuous batching: appends the rows of `added` to `running` (both states of start(),
  /// their "first" entries taken out by the caller), the shorter history left-padded (masked
  /// tokens, zero keys and values), so that every row goes on decoding as it would alone.
  static void join(DecoderState& running, DecoderState added);
  /// Drops the history columns that are padding in every row (after rows have left).
  static void trim(DecoderState& state);
  /// Tokens of history the state holds (its columns, padding included).
  static int64_t columns(const DecoderState& state);

 private:
  torch::Tensor prefill(const torch::Tensor& tokens, const torch::Tensor& mask, DecoderState& state);
  GPT2LMHeadModel model_;
  bool use_cache_;
};

/// Hugging Face tensors -> ours: Conv1D weights transposed; names without "transformer."
/// (checkpoints saved from GPT2Model, such as the original gpt2) prefixed; lm_head.weight
/// (tied to wte) and the attention-mask buffers (attn.bias, attn.masked_bias) dropped.
void gpt2_from_hf_tensors(std::map<std::string, torch::Tensor>& tensors);
/// Ours -> Hugging Face's layout (Conv1D weights transposed).
void gpt2_to_hf_tensors(std::map<std::string, torch::Tensor>& tensors);

}  // namespace zoo::models
