#include "models/attention.h"

#include <cmath>
#include <limits>

#include "models/kernels/attention.h"
#include "models/kernels/kv_append.h"
#include "models/kernels/linear.h"
#include "models/module_path.h"

namespace zoo::models {

MultiHeadAttentionOptions& MultiHeadAttentionOptions::names(std::string q, std::string k, std::string v,
                                                            std::string out) {
  query_name_ = std::move(q);
  key_name_ = std::move(k);
  value_name_ = std::move(v);
  output_name_ = std::move(out);
  return *this;
}

torch::Tensor split_heads(const torch::Tensor& x, int64_t heads) {
  const int64_t b = x.size(0), t = x.size(1), h = x.size(2);
  return x.view({b, t, heads, h / heads}).transpose(1, 2);  // (B, heads, T, d)
}

torch::Tensor merge_heads(const torch::Tensor& x) {
  const int64_t b = x.size(0), heads = x.size(1), t = x.size(2), d = x.size(3);
  return x.transpose(1, 2).reshape({b, t, heads * d});  // (B, T, H)
}

bool adjacent_rows(const std::vector<torch::Tensor>& parts) {
  const auto& first = parts.front();
  int64_t offset = first.storage_offset();
  for (const auto& p : parts) {
    if (!p.defined() || p.layout() != torch::kStrided || !p.is_contiguous() || p.dtype() != first.dtype() ||
        p.device() != first.device() || p.dim() != first.dim() || p.sizes().slice(1) != first.sizes().slice(1) ||
        !p.storage().is_alias_of(first.storage()) || p.storage_offset() != offset)
      return false;
    offset += p.numel();
  }
  return true;
}

namespace {

// The row-wise concatenation of parameters that are adjacent rows of one buffer, as a tensor
// over that buffer (no copy); its backward hands each parameter its rows of the gradient.
// The output shares the parameters' memory but not their version counter: it lives for one
// forward/backward, during which the parameters are not written.
struct JoinedRows : torch::autograd::Function<JoinedRows> {
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, at::TensorList parts) {
    std::vector<int64_t> rows;
    for (const auto& p : parts) rows.push_back(p.size(0));
    auto sizes = parts[0].sizes().vec();
    sizes[0] = 0;
    for (int64_t r : rows) sizes[0] += r;
    std::vector<int64_t> strides(sizes.size(), 1);
    for (int64_t i = static_cast<int64_t>(sizes.size()) - 2; i >= 0; --i) strides[i] = strides[i + 1] * sizes[i + 1];
    auto joined = torch::empty({0}, parts[0].options());
    joined.set_(parts[0].storage(), parts[0].storage_offset(), sizes, strides);
    ctx->saved_data["rows"] = rows;
    return joined;
  }
  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grads) {
    return grads[0].split_with_sizes(ctx->saved_data["rows"].toIntVector(), 0);
  }
};

torch::Tensor join_rows(const std::vector<torch::Tensor>& parts) {
  if (parts.size() == 1) return parts[0];
  if (adjacent_rows(parts)) return JoinedRows::apply(at::TensorList(parts));
  return torch::cat(parts, 0);  // something re-allocated a part: correct, one copy more
}

// Moves `parts` (parameters) into adjacent rows of one fresh buffer, keeping their values.
void pack_rows(const std::vector<torch::Tensor>& parts) {
  torch::NoGradGuard no_grad;
  auto joined = torch::cat(parts, 0);
  int64_t row = 0;
  for (auto p : parts) {  // set_data keeps each parameter's identity (optimizer, module)
    p.set_data(joined.narrow(0, row, p.size(0)));
    row += p.size(0);
  }
}

// The most negative finite value of `dtype`: masked scores that stay finite, so a query
// whose keys are all masked (a padding position) gets uniform weights, not NaN.
double lowest(torch::Dtype dtype) {
  switch (dtype) {
    case torch::kHalf: return -65504.0;
    case torch::kBFloat16: return static_cast<double>(std::numeric_limits<c10::BFloat16>::lowest());
    case torch::kDouble: return std::numeric_limits<double>::lowest();
    default: return std::numeric_limits<float>::lowest();
  }
}

// The LoRA adapters of layers whose products were computed as one (linear_rows), added to
// each layer's part.
void add_adapters(const torch::Tensor& x, const std::vector<torch::nn::Linear>& layers,
                  std::vector<torch::Tensor>& parts) {
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto delta = lora_delta(x, *layers[i]);
    if (delta.defined()) parts[i] = parts[i] + delta;
  }
}

}  // namespace

torch::Tensor linear_rows(const torch::Tensor& x, const std::vector<torch::Tensor>& weights,
                          const std::vector<torch::Tensor>& biases) {
  const bool bias = !biases.empty() && biases.front().defined();
  return linear(x, join_rows(weights), bias ? join_rows(biases) : torch::Tensor());
}

MultiHeadAttentionImpl::MultiHeadAttentionImpl(const MultiHeadAttentionOptions& o) : options(o) {
  TORCH_CHECK(o.embed_dim() % o.num_heads() == 0, "attention: embed_dim (", o.embed_dim(),
              ") must be divisible by num_heads (", o.num_heads(), ")");
  if (!o.fused_qkv_name().empty()) {
    qkv = register_at(*this, o.fused_qkv_name(),
                      torch::nn::Linear(torch::nn::LinearOptions(o.embed_dim(), 3 * o.embed_dim()).bias(o.qkv_bias())));
  } else {
    const auto each = torch::nn::LinearOptions(o.embed_dim(), o.embed_dim()).bias(o.qkv_bias());
    query = register_at(*this, o.query_name(), torch::nn::Linear(each));
    key = register_at(*this, o.key_name(), torch::nn::Linear(each));
    value = register_at(*this, o.value_name(), torch::nn::Linear(each));
  }
  output = register_at(*this, o.output_name(), torch::nn::Linear(o.embed_dim(), o.embed_dim()));
  if (o.learned_temperature())
    temperature = register_parameter("temperature", torch::full({1}, std::sqrt(double(o.embed_dim() / o.num_heads()))));
  pack();
}

void MultiHeadAttentionImpl::pack() {
  if (qkv) return;  // one parameter already
  pack_rows({query->weight, key->weight, value->weight});
  if (options.qkv_bias()) pack_rows({query->bias, key->bias, value->bias});
}

bool MultiHeadAttentionImpl::packed() const {
  if (qkv) return true;
  return adjacent_rows({query->weight, key->weight, value->weight}) &&
         (!options.qkv_bias() || adjacent_rows({query->bias, key->bias, value->bias}));
}

void MultiHeadAttentionImpl::to(torch::Device device, torch::Dtype dtype, bool non_blocking) {
  torch::nn::Module::to(device, dtype, non_blocking);
  pack();
}
void MultiHeadAttentionImpl::to(torch::Dtype dtype, bool non_blocking) {
  torch::nn::Module::to(dtype, non_blocking);
  pack();
}
void MultiHeadAttentionImpl::to(torch::Device device, bool non_blocking) {
  torch::nn::Module::to(device, non_blocking);
  pack();
}

void MultiHeadAttentionImpl::pretty_print(std::ostream& stream) const {
  stream << "zoo::models::MultiHeadAttention(embed_dim=" << options.embed_dim() << ", num_heads=" << options.num_heads()
         << ", dropout=" << options.dropout() << ", causal=" << options.causal() << ")";
}

torch::Tensor MultiHeadAttentionImpl::forward(const torch::Tensor& x, const AttentionMask& mask, KVCache* cache) {
  const int64_t heads = options.num_heads();
  std::vector<torch::Tensor> projected;  // 3 x (B, T, H)
  if (qkv) {
    projected = linear(x, qkv).chunk(3, -1);
  } else if (int8_weights(*query)) {  // quantized (models/quantize.h): each layer's int8 product
    projected = {linear(x, query), linear(x, key), linear(x, value)};
  } else {
    projected = linear_rows(x, {query->weight, key->weight, value->weight}, {query->bias, key->bias, value->bias})
                    .chunk(3, -1);
    add_adapters(x, {query, key, value}, projected);
  }
  auto q = split_heads(projected[0], heads), k = split_heads(projected[1], heads), v = split_heads(projected[2], heads);
  if (cache) {
    if (!cache->empty()) {
      k = append_steps(cache->key, k);  // (B, heads, past + T, d)
      v = append_steps(cache->value, v);
    }
    cache->key = k;
    cache->value = v;
  }
  return linear(merge_heads(attend(q, k, v, mask, options.causal())), output);
}

torch::Tensor MultiHeadAttentionImpl::cross(const torch::Tensor& x, const torch::Tensor& memory,
                                            const AttentionMask& mask, KVCache* cache) {
  TORCH_CHECK(!qkv, "cross-attention needs separate query/key/value projections (fused_qkv_name is set)");
  const int64_t heads = options.num_heads();
  auto q = split_heads(linear(x, query), heads);
  torch::Tensor k, v;
  if (cache && !cache->empty()) {
    k = cache->key;
    v = cache->value;
  } else {
    TORCH_CHECK(memory.defined(), "cross-attention needs the memory (or a filled cache)");
    std::vector<torch::Tensor> kv;
    if (int8_weights(*key)) {
      kv = {linear(memory, key), linear(memory, value)};
    } else {
      kv = linear_rows(memory, {key->weight, value->weight}, {key->bias, value->bias}).chunk(2, -1);
      add_adapters(memory, {key, value}, kv);
    }
    k = split_heads(kv[0], heads);
    v = split_heads(kv[1], heads);
    if (cache) {  // dense (B, heads, S, d) once, so that no later step copies them for the kernel
      k = k.contiguous();
      v = v.contiguous();
      cache->key = k;
      cache->value = v;
    }
  }
  return linear(merge_heads(attend(q, k, v, mask, /*causal=*/false)), output);
}

// Folds the masks into what the kernel takes: one additive mask and its causal flag. The
// kernel's causal mask is aligned top-left (query i sees keys 0..i); with cached keys the
// queries are the last Tq positions, so that case becomes an explicit mask aligned
// bottom-right (query i sees keys 0..past+i).
torch::Tensor MultiHeadAttentionImpl::attend(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                                             const AttentionMask& mask, bool causal) const {
  const int64_t tq = q.size(2), tk = k.size(2);
  const bool causal_in_kernel = causal && tq == tk;
  torch::Tensor keep;  // bool, broadcastable to (B, heads, Tq, Tk)
  // One new query after the cached keys sees them all: no causal mask to build (decoding).
  if (causal && !causal_in_kernel && tq != 1)
    keep = torch::ones({tq, tk}, q.options().dtype(torch::kBool)).tril(tk - tq);
  if (options.exclude_self()) {
    TORCH_CHECK(tq == tk && tk > 1, "attention: exclude_self needs self-attention over 2 or more positions "
                                    "without a cache, got ", tq, " queries and ", tk, " keys");
    auto off_diagonal = torch::eye(tq, q.options().dtype(torch::kBool)).logical_not();
    keep = keep.defined() ? keep.logical_and(off_diagonal) : off_diagonal;
  }
  if (mask.key_padding.defined()) {
    const auto& kp = mask.key_padding;
    TORCH_CHECK((kp.dim() == 2 || (kp.dim() == 3 && kp.size(1) == tq)) && kp.size(-1) == tk,
                "attention: key_padding must be (B, ", tk, ") or (B, ", tq, ", ", tk, "), got ", kp.sizes());
    auto pad = kp.to(torch::kBool).view({kp.size(0), 1, kp.dim() == 3 ? tq : 1, tk});
    keep = keep.defined() ? keep.logical_and(pad) : pad;
  }
  torch::Tensor additive;
  if (keep.defined())
    additive = torch::zeros(keep.sizes(), q.options()).masked_fill(keep.logical_not(), lowest(q.scalar_type()));
  if (mask.additive.defined()) additive = additive.defined() ? additive + mask.additive : mask.additive;
  // The kernel divides by sqrt(head_dim); a learned temperature replaces that divisor.
  const auto scaled_q =
      temperature.defined() ? q * (temperature.reciprocal() * std::sqrt(double(q.size(-1)))).to(q.scalar_type()) : q;
  return scaled_dot_product_attention(scaled_q, k, v, additive, options.dropout(), is_training(), causal_in_kernel);
}

}  // namespace zoo::models
