// The shared Transformer blocks (models/attention.h, models/blocks.h): parity with the
// documents' PyTorch blocks (tests/py/doc_blocks.py: document 004's AttentionHead,
// MultiHeadAttention, FeedForward, pre-norm TransformerEncoderLayer and Embeddings, document
// 003's MultiheadAttention, document 002's sinusoidal table), masks and the causal flag
// against the softmax formula written out here, decoding with the key/value cache against
// recomputing the prefix, the packed q/k/v projection against separate ones, post-norm, the
// names each family gives the blocks, and the dropout kernel (models/kernels/dropout.h).
#include <cmath>
#include <limits>
#include <memory>
#include <set>

#include <ATen/CPUGeneratorImpl.h>
#include <gtest/gtest.h>

#include "models/attention.h"
#include "models/blocks.h"
#include "models/kernels/dropout.h"
#include "models/kernels/few_rows_linear.h"
#include "models/kernels/kv_append.h"
#include "models/kernels/linear.h"
#include "models/kernels/onednn_linear.h"
#include "models/module_path.h"
#include "models/vit.h"
#include "test_util.h"
#include "io/checkpoint.h"
#include "train/precision.h"
#include "io/safetensors.h"

namespace zoo {
namespace {

using namespace models;
namespace F = torch::nn::functional;

void expect_close(const torch::Tensor& ours, const torch::Tensor& ref, const std::string& what, double tol = 1e-5) {
  ASSERT_TRUE(ours.defined() && ref.defined()) << what;
  ASSERT_EQ(ours.sizes(), ref.sizes()) << what;
  const double diff = (ours - ref).abs().max().item<double>();
  EXPECT_LE(diff, tol) << what << ": max |diff| " << diff;
}

std::vector<std::string> parameter_names(const torch::nn::Module& m) {
  std::vector<std::string> names;
  for (const auto& p : m.named_parameters()) names.push_back(p.key());
  return names;
}

void perturb(torch::nn::Module& m, double scale = 0.1) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.parameters()) p.add_(torch::randn_like(p) * scale);
}

// ---- the documents' blocks ---------------------------------------------------------------

class Documents : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new test::TempDir;
    const auto r = test::run_python("doc_blocks.py", dir_->path().string());
    output_ = r.output;
    ok_ = r.exit_code == 0;
    if (ok_) io_ = safetensors::load(*dir_ / "io.safetensors").tensors;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  void SetUp() override { ASSERT_TRUE(ok_) << "tests/py/doc_blocks.py failed:\n" << output_; }
  static std::string path(const std::string& name) { return *dir_ / (name + ".safetensors"); }
  static const torch::Tensor& io(const std::string& name) { return io_.at(name); }

  static const int64_t kHidden = 32, kHeads = 4, kIntermediate = 48;

 private:
  static test::TempDir* dir_;
  static bool ok_;
  static std::string output_;
  static std::map<std::string, torch::Tensor> io_;
};
test::TempDir* Documents::dir_ = nullptr;
bool Documents::ok_ = false;
std::string Documents::output_;
std::map<std::string, torch::Tensor> Documents::io_;

TEST_F(Documents, AttentionHeadOfDocument004) {
  // One head as wide as the input with an identity output projection is AttentionHead.
  MultiHeadAttention m(MultiHeadAttentionOptions(kHidden, 1).names("q", "k", "v", "out"));
  const auto file = safetensors::load(path("head004")).tensors;
  torch::NoGradGuard no_grad;
  for (auto& p : m->named_parameters()) {
    if (p.key().rfind("out.", 0) == 0) continue;
    p.value().copy_(file.at(p.key()));
  }
  m->output->weight.copy_(torch::eye(kHidden));
  m->output->bias.zero_();
  m->eval();
  expect_close(m(io("x")), io("head004"), "AttentionHead");
}

TEST_F(Documents, MultiHeadAttentionOfDocument004) {
  // The document's per-head Linears, concatenated head after head (doc_blocks.py).
  MultiHeadAttention m(MultiHeadAttentionOptions(kHidden, kHeads).names("q", "k", "v", "output_linear"));
  load_model(*m, path("mha004"));
  m->eval();
  torch::NoGradGuard no_grad;
  expect_close(m(io("x")), io("mha004"), "MultiHeadAttention");
}

TEST_F(Documents, FeedForwardOfDocument004) {
  torch::nn::Module owner;
  FeedForward ff(owner, FeedForwardOptions(kHidden, kIntermediate).dropout(0.1).fc1_name("linear_1").fc2_name("linear_2"));
  load_model(owner, path("ff004"));
  owner.eval();
  torch::NoGradGuard no_grad;
  expect_close(ff(io("x")), io("ff004"), "FeedForward");
}

// Document 004's TransformerEncoderLayer composed of the blocks under the document's names.
struct Doc004LayerImpl : torch::nn::Module {
  Doc004LayerImpl(int64_t hidden, int64_t heads, int64_t intermediate)
      : attention_block(*this, ResidualOptions(hidden).norm_name("layer_norm_1")),  // nn.LayerNorm: eps 1e-5
        attention(register_module(
            "attention", MultiHeadAttention(MultiHeadAttentionOptions(hidden, heads).names("q", "k", "v", "output_linear")))),
        feed_forward_block(*this, ResidualOptions(hidden).norm_name("layer_norm_2")),
        feed_forward(*this, FeedForwardOptions(hidden, intermediate)
                                .fc1_name("feed_forward.linear_1")
                                .fc2_name("feed_forward.linear_2")) {}
  torch::Tensor forward(const torch::Tensor& x) {
    auto h = attention_block(x, [&](const torch::Tensor& n) { return attention(n); });
    return feed_forward_block(h, [&](const torch::Tensor& n) { return feed_forward(n); });
  }
  Residual attention_block;
  MultiHeadAttention attention;
  Residual feed_forward_block;
  FeedForward feed_forward;
};
TORCH_MODULE(Doc004Layer);

TEST_F(Documents, PreNormEncoderLayerOfDocument004) {
  Doc004Layer layer(kHidden, kHeads, kIntermediate);
  load_model(*layer, path("layer004"));  // every name present, none left over
  layer->eval();
  torch::NoGradGuard no_grad;
  expect_close(layer(io("x")), io("layer004"), "TransformerEncoderLayer");
}

TEST_F(Documents, EmbeddingsOfDocument004) {
  // Token embedding + learned positions + LayerNorm(eps 1e-12) + dropout, as Embeddings.
  torch::nn::Module owner;
  auto tokens = owner.register_module("token_embeddings", torch::nn::Embedding(20, kHidden));
  LearnedPositions positions(owner, LearnedPositionsOptions(16, kHidden).name("position_embeddings"));
  auto norm = owner.register_module("layer_norm",
                                    torch::nn::LayerNorm(torch::nn::LayerNormOptions({kHidden}).eps(1e-12)));
  load_model(owner, path("emb004"));
  owner.eval();
  torch::NoGradGuard no_grad;
  const auto ids = io("ids");
  auto got = F::dropout(norm->forward(positions(tokens->forward(ids))), F::DropoutFuncOptions().p(0.1).training(owner.is_training()));
  expect_close(got, io("emb004"), "Embeddings");
}

// Document 004's TransformerForSequenceClassification: its Embeddings, two of its pre-norm
// layers (the twin above) and a classifier on the first token, under the document's names.
struct Doc004ClassifierImpl : torch::nn::Module {
  Doc004ClassifierImpl(int64_t vocab, int64_t positions, int64_t hidden, int64_t heads, int64_t intermediate,
                       int64_t layers, int64_t labels)
      : positions_(*this, LearnedPositionsOptions(positions, hidden).name("encoder.embeddings.position_embeddings")) {
    tokens = register_at(*this, "encoder.embeddings.token_embeddings", torch::nn::Embedding(vocab, hidden));
    norm = register_at(*this, "encoder.embeddings.layer_norm",
                       torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden}).eps(1e-12)));
    for (int64_t i = 0; i < layers; ++i)
      blocks.push_back(register_at(*this, cat("encoder.layers.", i), Doc004Layer(hidden, heads, intermediate)));
    classifier = register_module("classifier", torch::nn::Linear(hidden, labels));
  }
  torch::Tensor forward(const torch::Tensor& ids) {
    auto x = norm->forward(positions_(tokens->forward(ids)));  // the embeddings' dropout: identity in eval
    for (auto& block : blocks) x = block->forward(x);
    return classifier->forward(x.select(1, 0));  // the first token; the dropout before it: identity in eval
  }
  LearnedPositions positions_;
  torch::nn::Embedding tokens{nullptr};
  torch::nn::LayerNorm norm{nullptr};
  std::vector<Doc004Layer> blocks;
  torch::nn::Linear classifier{nullptr};
};
TORCH_MODULE(Doc004Classifier);

TEST_F(Documents, TransformerForSequenceClassificationOfDocument004) {
  Doc004Classifier model(20, 16, kHidden, kHeads, kIntermediate, /*layers=*/2, /*labels=*/3);
  load_model(*model, path("cls004"));  // every name present, none left over
  model->eval();
  torch::NoGradGuard no_grad;
  expect_close(model(io("ids")), io("cls004"), "TransformerForSequenceClassification");
}

// zoo's attention as document 000's blocks, which have no output projection (identity here).
MultiHeadAttention without_output(int64_t width, int64_t heads) {
  MultiHeadAttention m(MultiHeadAttentionOptions(width, heads).names("query", "key", "value", "out"));
  torch::NoGradGuard no_grad;
  m->output->weight.copy_(torch::eye(width));
  m->output->bias.zero_();
  return m;
}

void load_into(torch::nn::Module& m, const std::map<std::string, torch::Tensor>& file, const std::string& file_prefix) {
  torch::NoGradGuard no_grad;
  for (auto& p : m.named_parameters())
    if (p.key().rfind("out.", 0) != 0) p.value().copy_(file.at(file_prefix + p.key()));
}

// Document 000's SelfAttention scores q k^T unscaled (a deviation zoo does not copy): zoo's
// one-head attention gives the same with sqrt(width) folded into the query projection. Its
// SelfAttentionClassifier: the mean over time, fc1, ReLU, fc2.
TEST_F(Documents, SelfAttentionAndItsClassifierOfDocument000) {
  const auto file = safetensors::load(path("selfcls000")).tensors;
  auto m = without_output(kHidden, 1);
  load_into(*m, file, "attention.");
  {
    torch::NoGradGuard no_grad;
    const double unscale = std::sqrt(static_cast<double>(kHidden));
    m->query->weight.mul_(unscale);
    m->query->bias.mul_(unscale);
  }
  m->eval();
  torch::NoGradGuard no_grad;
  const auto attended = m(io("x"));
  expect_close(attended, io("self000"), "SelfAttention");
  torch::nn::Linear fc1(kHidden, 16), fc2(16, 3);
  fc1->weight.copy_(file.at("fc1.weight")), fc1->bias.copy_(file.at("fc1.bias"));
  fc2->weight.copy_(file.at("fc2.weight")), fc2->bias.copy_(file.at("fc2.bias"));
  expect_close(fc2(torch::relu(fc1(attended.mean(1)))), io("selfcls000"), "SelfAttentionClassifier");
}

// Document 000's multi-head self-attention (its split into heads, scaled scores and merge):
// zoo's attention with the document's projections and no output projection.
TEST_F(Documents, MultiHeadSplitAndMergeOfDocument000) {
  auto m = without_output(kHidden, kHeads);
  const auto file = safetensors::load(path("mhsa000")).tensors;
  {
    torch::NoGradGuard no_grad;
    for (const char* part : {"query", "key", "value"})
      for (const char* t : {"weight", "bias"})
        m->named_parameters()[std::string(part) + "." + t].copy_(file.at(std::string(part) + "_layer." + t));
  }
  m->eval();
  torch::NoGradGuard no_grad;
  expect_close(m(io("x")), io("mhsa000"), "multi-head self-attention");
}

TEST_F(Documents, BatchFirstMultiheadAttentionOfDocument003SelfAndCross) {
  MultiHeadAttention m(MultiHeadAttentionOptions(kHidden, kHeads).dropout(0.1).names("w_q", "w_k", "w_v", "fc"));
  load_model(*m, path("mha003"));
  m->eval();
  torch::NoGradGuard no_grad;
  // The document's mask == 0 -> -1e10 is our key padding mask (true = attend).
  expect_close(m(io("x"), AttentionMask{io("x_keep")}), io("self003"), "self-attention");
  expect_close(m->cross(io("x"), io("memory"), AttentionMask{io("memory_keep")}), io("cross003"), "cross-attention");
}

TEST_F(Documents, SinusoidalTableOfDocument002) {
  expect_close(sinusoidal_positions(50, kHidden), io("sinusoid002"), "sinusoidal table");
}

// ---- masks, causal, cache: against the formula ------------------------------------------

struct Weights {
  torch::Tensor wq, bq, wk, bk, wv, bv, wo, bo;
  static Weights of(const MultiHeadAttention& m) {
    return {m->query->weight, m->query->bias, m->key->weight, m->key->bias,
            m->value->weight, m->value->bias, m->output->weight, m->output->bias};
  }
  Weights leaf_copies() const {  // separate tensors with their own gradients
    auto c = [](const torch::Tensor& t) { return t.detach().clone().requires_grad_(); };
    return {c(wq), c(bq), c(wk), c(bk), c(wv), c(bv), c(wo), c(bo)};
  }
};

// softmax(q k^T / sqrt(d) + additive, with masked keys at -inf) v, head by head, then the
// output projection: multi-head attention written out.
torch::Tensor by_hand(const Weights& w, int64_t heads, const torch::Tensor& x, const torch::Tensor& memory,
                      const torch::Tensor& keep = {}, const torch::Tensor& additive = {}) {
  auto q = F::linear(x, w.wq, w.bq), k = F::linear(memory, w.wk, w.bk), v = F::linear(memory, w.wv, w.bv);
  const int64_t d = q.size(-1) / heads;
  std::vector<torch::Tensor> outs;
  for (int64_t h = 0; h < heads; ++h) {
    auto s = torch::bmm(q.narrow(-1, h * d, d), k.narrow(-1, h * d, d).transpose(1, 2)) / std::sqrt(double(d));
    if (additive.defined()) s = s + additive.select(1, 0);  // (B or 1, Tq, Tk) after dropping the head axis
    if (keep.defined()) s = s.masked_fill(keep.logical_not(), -std::numeric_limits<float>::infinity());
    outs.push_back(torch::bmm(torch::softmax(s, -1), v.narrow(-1, h * d, d)));
  }
  return F::linear(torch::cat(outs, -1), w.wo, w.bo);
}

MultiHeadAttention small_attention(bool causal = false) {
  torch::manual_seed(3);
  MultiHeadAttention m(MultiHeadAttentionOptions(16, 4).causal(causal));
  perturb(*m);
  m->eval();
  return m;
}

TEST(Attention, KeyPaddingAndAdditiveMasksEqualTheSoftmaxFormula) {
  auto m = small_attention();
  auto x = torch::randn({3, 5, 16}), memory = torch::randn({3, 7, 16});
  auto pad = torch::ones({3, 5}, torch::kBool), mem_pad = torch::ones({3, 7}, torch::kBool);
  pad.index_put_({1, torch::indexing::Slice(3)}, false);
  mem_pad.index_put_({2, torch::indexing::Slice(2)}, false);
  auto additive = torch::randn({1, 1, 5, 5});  // e.g. a position bias
  torch::NoGradGuard no_grad;
  const auto w = Weights::of(m);
  expect_close(m(x, AttentionMask{pad}), by_hand(w, 4, x, x, pad.unsqueeze(1)), "key padding");
  expect_close(m(x, AttentionMask{pad, additive}), by_hand(w, 4, x, x, pad.unsqueeze(1), additive), "both masks");
  expect_close(m->cross(x, memory, AttentionMask{mem_pad}), by_hand(w, 4, x, memory, mem_pad.unsqueeze(1)),
               "cross-attention, key padding");
  // ...and the mask matters: the same call without it differs.
  EXPECT_GT((m(x) - m(x, AttentionMask{pad})).abs().max().item<double>(), 1e-3);
}

TEST(Attention, CausalEqualsTheSoftmaxFormulaWithALowerTriangle) {
  auto m = small_attention(/*causal=*/true);
  auto x = torch::randn({2, 6, 16});
  auto pad = torch::ones({2, 6}, torch::kBool);
  pad.index_put_({0, torch::indexing::Slice(4)}, false);
  const auto tril = torch::ones({6, 6}, torch::kBool).tril().unsqueeze(0);
  torch::NoGradGuard no_grad;
  const auto w = Weights::of(m);
  expect_close(m(x), by_hand(w, 4, x, x, tril), "causal");
  expect_close(m(x, AttentionMask{pad}), by_hand(w, 4, x, x, tril.logical_and(pad.unsqueeze(1))), "causal + padding");
}

TEST(Attention, CachedSelfAttentionStepByStepEqualsTheWholePrefix) {
  auto m = small_attention(/*causal=*/true);
  auto x = torch::randn({2, 6, 16});
  auto pad = torch::ones({2, 6}, torch::kBool);
  pad.index_put_({1, 0}, false);  // a left-padded sequence
  torch::NoGradGuard no_grad;
  const auto whole = m(x, AttentionMask{pad});
  KVCache cache;
  std::vector<torch::Tensor> steps;
  int64_t done = 0;
  for (int64_t n : {1, 2, 1, 2}) {  // single steps and chunks: the mask aligns bottom-right
    AttentionMask mask{pad.narrow(1, 0, done + n)};
    steps.push_back(m(x.narrow(1, done, n), mask, &cache));
    done += n;
    EXPECT_EQ(cache.length(), done);
  }
  expect_close(torch::cat(steps, 1), whole, "step by step");
}

TEST(KVAppend, StepsGoInPlaceIntoTheRoomAndEqualConcatenation) {
  torch::NoGradGuard no_grad;
  auto expected = torch::randn({3, 2, 5, 4});
  auto cache = expected.clone();
  const void* buffer = nullptr;
  for (int step = 0; step < 20; ++step) {
    const auto fresh = torch::randn({3, 2, step % 3 + 1, 4});
    expected = torch::cat({expected, fresh}, 2);
    cache = append_steps(cache, fresh);
    ASSERT_TRUE(in_growing_buffer(cache));
    ASSERT_TRUE(torch::equal(cache, expected)) << "step " << step;
    if (step == 1) buffer = cache.storage().data();
    if (step >= 1 && step <= 4) {
      EXPECT_EQ(cache.storage().data(), buffer) << "step " << step << " was copied";
    }
  }
  EXPECT_NE(cache.storage().data(), buffer);  // outgrew the first buffer's room
}

TEST(KVAppend, AnOlderViewNeverWritesOverTheNewerOne) {
  torch::NoGradGuard no_grad;
  auto base = append_steps(torch::randn({2, 2, 3, 4}), torch::randn({2, 2, 1, 4}));  // a buffer with room
  const auto copy = base;  // a second state sharing the view (e.g. a copied DecoderState)
  const auto a = torch::randn({2, 2, 1, 4}), b = torch::randn({2, 2, 1, 4});
  const auto first = append_steps(base, a);
  const auto second = append_steps(copy, b);
  EXPECT_EQ(first.storage().data(), base.storage().data());   // the newest view: in place
  EXPECT_NE(second.storage().data(), base.storage().data());  // the older one: its own buffer
  EXPECT_TRUE(torch::equal(first, torch::cat({base, a}, 2)));
  EXPECT_TRUE(torch::equal(second, torch::cat({base, b}, 2)));
  // A view that dropped its first columns (a trimmed batch) still ends at the newest column.
  const auto trimmed = first.narrow(2, 2, first.size(2) - 2);
  const auto grown = append_steps(trimmed, a);
  EXPECT_EQ(grown.storage().data(), first.storage().data());
  EXPECT_TRUE(torch::equal(grown, torch::cat({trimmed, a}, 2)));
}

TEST(KVAppend, SelectRowsEqualsIndexSelectAndKeepsTheRoom) {
  torch::NoGradGuard no_grad;
  const auto cache = append_steps(torch::randn({4, 3, 6, 5}), torch::randn({4, 3, 1, 5}));
  const auto index = torch::tensor({3, 0, 0, 2, 1}, torch::kLong);
  const auto picked = select_rows(cache, 0, index);
  EXPECT_TRUE(torch::equal(picked, cache.index_select(0, index)));
  ASSERT_TRUE(in_growing_buffer(picked));
  const auto fresh = torch::randn({5, 3, 1, 5});
  const auto next = append_steps(picked, fresh);
  EXPECT_EQ(next.storage().data(), picked.storage().data());
  EXPECT_TRUE(torch::equal(next, torch::cat({cache.index_select(0, index), fresh}, 2)));
  // Rows of a sub-batch view, and the checks index_select makes.
  const auto rows = cache.narrow(0, 1, 2);
  EXPECT_TRUE(torch::equal(select_rows(rows, 0, torch::tensor({1, 0})), rows.index_select(0, torch::tensor({1, 0}))));
  EXPECT_THROW(select_rows(cache, 0, torch::tensor({4})), c10::Error);
  const auto plain = torch::randn({2, 3});  // not a cache: index_select itself
  EXPECT_TRUE(torch::equal(select_rows(plain, 1, torch::tensor({2, 0})), plain.index_select(1, torch::tensor({2, 0}))));
}

TEST(KVAppend, StackLeftPaddedEqualsConcatenatedPaddedRowsAndKeepsRoom) {
  torch::NoGradGuard no_grad;
  const auto a = torch::randn({2, 3, 5, 4}), b = torch::randn({1, 3, 2, 4});
  const auto expected = torch::cat({a, torch::cat({torch::zeros({1, 3, 3, 4}), b}, 2)}, 0);
  const auto joined = stack_left_padded({a, b}, 5);
  EXPECT_TRUE(torch::equal(joined, expected));
  ASSERT_TRUE(in_growing_buffer(joined));
  const auto fresh = torch::randn({3, 3, 1, 4});
  const auto next = append_steps(joined, fresh);
  EXPECT_EQ(next.storage().data(), joined.storage().data());
  EXPECT_TRUE(torch::equal(next, torch::cat({expected, fresh}, 2)));
  {
    torch::AutoGradMode grad(true);  // under autograd: plain tensor operations, the same values
    const auto tracked = a.clone().requires_grad_();
    const auto plain = stack_left_padded({tracked, b}, 6);
    EXPECT_FALSE(in_growing_buffer(plain));
    EXPECT_TRUE(torch::equal(plain.detach().narrow(2, 1, 5).narrow(0, 0, 2), a));
  }
  EXPECT_THROW(stack_left_padded({a, b}, 4), c10::Error);  // a part longer than the columns
}

// x W^T + b in double precision, the reference for the kernels.
torch::Tensor linear_in_double(const torch::Tensor& x, const torch::Tensor& w, const torch::Tensor& b) {
  auto y = x.to(torch::kDouble).matmul(w.to(torch::kDouble).t());
  return (b.defined() ? y + b.to(torch::kDouble) : y).to(torch::kFloat);
}

TEST(FewRowsLinear, EqualsTheProductForEveryShapeAndBlockRemainder) {
  torch::NoGradGuard no_grad;
  if (!few_rows_linear_applies(torch::randn({2, 16}), torch::randn({4, 16}), {}))
    GTEST_SKIP() << "few_rows_linear is not built for this CPU or compiler (linear() uses LibTorch's products)";
  for (int64_t m : {2, 3, 4, 5, 8, 13, 32})
    for (int64_t k : {1, 15, 16, 17, 130})
      for (int64_t n : {1, 3, 4, 6, 65}) {
        const auto x = torch::randn({m, k}), w = torch::randn({n, k}), b = torch::randn({n});
        ASSERT_TRUE(few_rows_linear_applies(x, w, b)) << m << " x " << k << " x " << n;
        const auto y = few_rows_linear(x, w, b);
        ASSERT_EQ(y.sizes(), (std::vector<int64_t>{m, n}));
        EXPECT_TRUE(torch::allclose(y, linear_in_double(x, w, b), 1e-5, 1e-5)) << m << " x " << k << " x " << n;
        EXPECT_TRUE(torch::allclose(few_rows_linear(x, w, {}), linear_in_double(x, w, {}), 1e-5, 1e-5));
      }
  // Leading dimensions and a non-contiguous x; two threads give the same bits as one.
  const auto x = torch::randn({3, 4, 5}).narrow(2, 1, 3);
  const auto w = torch::randn({300, 3}), b = torch::randn({300});
  EXPECT_TRUE(torch::allclose(few_rows_linear(x, w, b), linear_in_double(x, w, b), 1e-5, 1e-5));
  const auto wide = torch::randn({16, 512}), ww = torch::randn({1000, 512});
  const int before = at::get_num_threads();
  at::set_num_threads(1);
  const auto one = few_rows_linear(wide, ww, {});
  at::set_num_threads(2);
  const auto two = few_rows_linear(wide, ww, {});
  at::set_num_threads(before);
  EXPECT_TRUE(torch::equal(one, two));
}

TEST(FewRowsLinear, LinearTakesItOnlyForAFewRowsOutsideAutograd) {
  const auto w = torch::randn({6, 8}), b = torch::randn({6});
  const auto x = torch::randn({4, 8});
  {
    torch::NoGradGuard no_grad;
    if (!few_rows_linear_applies(x, w, b)) GTEST_SKIP() << "not built for this CPU or compiler";
    EXPECT_FALSE(few_rows_linear_applies(torch::randn({1, 8}), w, b));  // one row: a matrix-vector product
    EXPECT_FALSE(few_rows_linear_applies(torch::randn({kFewRowsMax + 1, 8}), w, b));
    EXPECT_FALSE(few_rows_linear_applies(x.to(torch::kDouble), w.to(torch::kDouble), {}));
    EXPECT_FALSE(few_rows_linear_applies(x, torch::randn({8, 6}).t(), b));  // W not contiguous
  }
  // Under autograd a tracked weight keeps LibTorch's product, and its gradient.
  const auto tracked = w.clone().requires_grad_();
  EXPECT_FALSE(few_rows_linear_applies(x, tracked, b));
  const auto y = linear(x, tracked, b);
  ASSERT_TRUE(y.requires_grad());
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(tracked.grad(), x.sum(0).expand({6, 8}), 1e-5, 1e-5));
  torch::NoGradGuard no_grad;
  EXPECT_TRUE(few_rows_linear_applies(x, tracked, b));
  EXPECT_TRUE(torch::allclose(linear(x, tracked, b), linear_in_double(x, w, b), 1e-5, 1e-5));
}

#ifndef ZOO_WITH_ONEDNN
#define ZOO_WITH_ONEDNN 0
#endif

// oneDNN's fp32 matmul for more rows than few_rows_linear takes: the product of any row count
// and layer shape, and under autograd the gradients of x, W and b (its own backward).
TEST(OneDnnLinear, EqualsTheProductAndItsGradientsForEveryShape) {
  ASSERT_EQ(has_onednn_linear(), ZOO_WITH_ONEDNN == 1) << "the build found oneDNN, the kernel did not (or the reverse)";
  if (!has_onednn_linear()) GTEST_SKIP() << "zoo built without oneDNN (linear() uses LibTorch's products)";
  torch::manual_seed(5);
  for (int64_t m : std::initializer_list<int64_t>{kFewRowsMax + 1, 100, 257})
    for (int64_t k : {1, 17, 256})
      for (int64_t n : {1, 5, 300}) {
        const auto x = torch::randn({m, k}).requires_grad_(), w = torch::randn({n, k}).requires_grad_(),
                   b = torch::randn({n}).requires_grad_();
        ASSERT_TRUE(onednn_linear_applies(x, w, b)) << m << " x " << k << " x " << n;
        const auto y = onednn_linear(x, w, b);
        ASSERT_EQ(y.sizes(), (std::vector<int64_t>{m, n}));
        ASSERT_TRUE(y.requires_grad());
        EXPECT_TRUE(torch::allclose(y, linear_in_double(x.detach(), w.detach(), b.detach()), 1e-4, 1e-4))
            << m << " x " << k << " x " << n;
        const auto dy = torch::randn({m, n});
        const auto grads = torch::autograd::grad({y}, {x, w, b}, {dy});
        const auto xd = x.detach().to(torch::kDouble), wd = w.detach().to(torch::kDouble), dyd = dy.to(torch::kDouble);
        EXPECT_TRUE(torch::allclose(grads[0], dyd.matmul(wd).to(torch::kFloat), 1e-4, 1e-4)) << "dx " << m << " x " << k;
        EXPECT_TRUE(torch::allclose(grads[1], dyd.t().matmul(xd).to(torch::kFloat), 1e-4, 1e-4)) << "dW " << m << " x " << n;
        EXPECT_TRUE(torch::allclose(grads[2], dy.sum(0), 1e-4, 1e-4)) << "db " << n;
        torch::NoGradGuard no_grad;
        EXPECT_TRUE(torch::allclose(onednn_linear(x, w, {}), linear_in_double(x, w, {}), 1e-4, 1e-4));
      }
  // Leading dimensions, a non-contiguous x, a weight needing no gradient (a frozen layer).
  const auto x = torch::randn({3, 40, 9}).narrow(2, 2, 6).requires_grad_();
  const auto w = torch::randn({7, 6}), b = torch::randn({7});
  const auto y = onednn_linear(x, w, b);
  ASSERT_EQ(y.sizes(), (std::vector<int64_t>{3, 40, 7}));
  EXPECT_TRUE(torch::allclose(y, linear_in_double(x.detach(), w, b), 1e-4, 1e-4));
  y.sum().backward();
  EXPECT_TRUE(torch::allclose(x.grad(), w.sum(0).expand({3, 40, 6}), 1e-4, 1e-4));
}

TEST(OneDnnLinear, LinearTakesItForMoreRowsThanFewRowsLinearInFp32) {
  if (!has_onednn_linear()) GTEST_SKIP() << "zoo built without oneDNN";
  const auto w = torch::randn({6, 8}), b = torch::randn({6});
  EXPECT_FALSE(onednn_linear_applies(torch::randn({kFewRowsMax, 8}), w, b));  // few_rows_linear's
  EXPECT_FALSE(onednn_linear_applies(torch::randn({40, 8}).to(torch::kDouble), w.to(torch::kDouble), {}));
  EXPECT_FALSE(onednn_linear_applies(torch::randn({40, 8}), torch::randn({8, 6}).t(), b));  // W not contiguous
  EXPECT_FALSE(onednn_linear_applies(torch::randn({40, 7}), w, b));  // widths differ
  const auto x = torch::randn({40, 8});
  ASSERT_TRUE(onednn_linear_applies(x, w, b));
  EXPECT_TRUE(torch::equal(linear(x, w, b), onednn_linear(x, w, b)));
  {
    const auto saved = AutocastState::current();
    AutocastState on;
    on.cpu = true;
    on.apply();
    EXPECT_FALSE(onednn_linear_applies(x, w, b));  // autocast's bf16 products stay LibTorch's
    saved.apply();
  }
}

// Under bf16 autocast a single row (one sequence left decoding, e.g. the last live row of a
// greedy batch) takes autocast's product as several rows do: a bf16 input beside fp32 weights
// is no error, and the result has the several-row path's dtype and values.
TEST(FewRowsLinear, OneRowUnderBf16AutocastIsAutocastsProduct) {
  const auto w = torch::randn({6, 8}), b = torch::randn({6});
  torch::NoGradGuard no_grad;
  const auto saved = AutocastState::current();
  AutocastState on;
  on.cpu = true;
  on.apply();
  for (auto dtype : {torch::kBFloat16, torch::kFloat}) {
    const auto rows = torch::randn({3, 8}).to(dtype);
    const auto several = linear(rows, w, b), one = linear(rows.narrow(0, 1, 1), w, b);
    EXPECT_EQ(one.scalar_type(), several.scalar_type());
    EXPECT_TRUE(torch::allclose(one.to(torch::kFloat), several.narrow(0, 1, 1).to(torch::kFloat), 1e-2, 1e-2));
  }
  saved.apply();
  EXPECT_FALSE(AutocastState::current().cpu);
}


TEST(Attention, CachedCrossAttentionProjectsTheMemoryOnce) {
  auto m = small_attention();
  auto x = torch::randn({2, 4, 16}), memory = torch::randn({2, 5, 16});
  auto mem_pad = torch::ones({2, 5}, torch::kBool);
  mem_pad.index_put_({0, torch::indexing::Slice(3)}, false);
  torch::NoGradGuard no_grad;
  const auto whole = m->cross(x, memory, AttentionMask{mem_pad});
  KVCache cache;
  std::vector<torch::Tensor> steps;
  const void* keys = nullptr;
  for (int64_t t = 0; t < 4; ++t) {
    // After the first step the memory is not even passed: the cache must be what is used.
    steps.push_back(m->cross(x.narrow(1, t, 1), t == 0 ? memory : torch::Tensor(), AttentionMask{mem_pad}, &cache));
    if (t == 0) keys = cache.key.data_ptr();
    EXPECT_EQ(cache.key.data_ptr(), keys) << "step " << t << " recomputed the memory's keys";
    EXPECT_EQ(cache.length(), 5);
  }
  expect_close(torch::cat(steps, 1), whole, "step by step");
}

// ---- the packed q/k/v projection ---------------------------------------------------------

TEST(Attention, PackedProjectionEqualsSeparateProjectionsInForwardAndGradients) {
  auto m = small_attention();
  m->train();  // dropout 0: training mode runs the backward-saving kernels
  ASSERT_TRUE(m->packed());
  EXPECT_EQ(m->key->weight.data_ptr<float>(), m->query->weight.data_ptr<float>() + 16 * 16);
  auto x0 = torch::randn({2, 5, 16}), go = torch::randn({2, 5, 16});
  auto check = [&](const std::string& what) {
    for (auto& p : m->parameters()) p.mutable_grad() = torch::Tensor();
    auto x = x0.clone().requires_grad_(), xr = x0.clone().requires_grad_();
    const auto ref = Weights::of(m).leaf_copies();
    auto ours = m(x);
    auto want = by_hand(ref, 4, xr, xr);
    expect_close(ours, want, what + ": output");
    ours.backward(go);
    want.backward(go);
    const auto w = Weights::of(m);
    const std::vector<std::pair<std::string, std::pair<torch::Tensor, torch::Tensor>>> grads{
        {"x", {x.grad(), xr.grad()}},         {"query.weight", {w.wq.grad(), ref.wq.grad()}},
        {"query.bias", {w.bq.grad(), ref.bq.grad()}}, {"key.weight", {w.wk.grad(), ref.wk.grad()}},
        {"key.bias", {w.bk.grad(), ref.bk.grad()}},   {"value.weight", {w.wv.grad(), ref.wv.grad()}},
        {"value.bias", {w.bv.grad(), ref.bv.grad()}}};
    for (const auto& [name, g] : grads) expect_close(g.first, g.second, what + ": gradient of " + name);
  };
  check("packed");
  // Something re-allocates one weight: forward falls back to copying them together.
  {
    torch::NoGradGuard no_grad;
    m->key->weight.set_data(m->key->weight.clone());
  }
  EXPECT_FALSE(m->packed());
  check("after re-allocation");
  m->pack();
  EXPECT_TRUE(m->packed());
  check("re-packed");
}

TEST(Attention, ToKeepsTheProjectionsPacked) {
  auto m = small_attention();
  auto x = torch::randn({2, 3, 16});
  torch::NoGradGuard no_grad;
  const auto before = m(x);
  m->to(torch::kDouble);
  EXPECT_TRUE(m->packed());
  EXPECT_EQ(m->query->weight.scalar_type(), torch::kDouble);
  expect_close(m(x.to(torch::kDouble)).to(torch::kFloat), before, "in double");
  m->to(torch::Device(torch::kCPU), torch::kFloat);
  EXPECT_TRUE(m->packed());
}

TEST(ViT, EveryAttentionRunsOnPackedWeights) {
  ViTOptions o;
  o.hidden_size = 32, o.num_hidden_layers = 3, o.num_attention_heads = 4, o.intermediate_size = 48;
  o.image_size = 8, o.patch_size = 4, o.num_labels = 3;
  ViTForImageClassification vit(o);
  vit->to(torch::kCPU);
  int attentions = 0;
  for (const auto& m : vit->modules()) {
    if (const auto* a = m->as<MultiHeadAttentionImpl>()) {
      EXPECT_TRUE(a->packed());
      ++attentions;
    }
  }
  EXPECT_EQ(attentions, 3);
}

// ---- residual, positions, names ----------------------------------------------------------

TEST(Residual, PostNormIsLayerNormOfTheSumAndPreNormTheSumWithTheNormedInput) {
  torch::manual_seed(5);
  torch::nn::Module owner;
  torch::nn::Linear f(8, 8);
  Residual post(owner, ResidualOptions(8).pre_norm(false).eps(1e-6).norm_name("post.LayerNorm"));
  Residual pre(owner, ResidualOptions(8).norm_name("pre_norm"));
  perturb(owner, 0.5);
  EXPECT_EQ(parameter_names(owner),
            (std::vector<std::string>{"post.LayerNorm.weight", "post.LayerNorm.bias", "pre_norm.weight", "pre_norm.bias"}));
  auto x = torch::randn({2, 3, 8});
  torch::NoGradGuard no_grad;
  auto ln = [](const Residual& r, const torch::Tensor& t) {
    return torch::layer_norm(t, {8}, r.norm->weight, r.norm->bias, r.options.eps());
  };
  auto apply_f = [&](const torch::Tensor& t) { return f(t); };
  expect_close(post(x, apply_f), ln(post, x + f(x)), "post-norm");
  expect_close(pre(x, apply_f), x + f(ln(pre, x)), "pre-norm");
}

TEST(Positions, SinusoidalAndLearnedTablesAreAddedFromTheOffset) {
  const auto table = sinusoidal_positions(10, 6);
  EXPECT_NEAR(table[3][4].item<double>(), std::sin(3 / std::pow(10000.0, 4.0 / 6)), 1e-6);
  EXPECT_NEAR(table[3][5].item<double>(), std::cos(3 / std::pow(10000.0, 4.0 / 6)), 1e-6);
  const auto halves = sinusoidal_positions(10, 6, /*interleaved=*/false);  // Marian's layout
  expect_close(halves.narrow(1, 0, 3), table.slice(1, 0, 6, 2), "sines first");
  expect_close(halves.narrow(1, 3, 3), table.slice(1, 1, 6, 2), "then cosines");
  SinusoidalPositions sinusoidal(10, 6);
  auto x = torch::randn({2, 3, 6});
  expect_close(sinusoidal(x, 4), x + table.narrow(0, 4, 3), "sinusoidal from offset 4");
  EXPECT_THROW(sinusoidal(x, 8), c10::Error);

  torch::nn::Module owner;
  LearnedPositions learned(owner, LearnedPositionsOptions(10, 6).name("embeddings.position_embeddings"));
  LearnedPositions as_parameter(owner, LearnedPositionsOptions(10, 6).name("vit_positions").as_parameter(true));
  EXPECT_EQ(parameter_names(owner),
            (std::vector<std::string>{"vit_positions", "embeddings.position_embeddings.weight"}));  // own first
  torch::NoGradGuard no_grad;
  as_parameter.weight.normal_();
  expect_close(learned(x, 2), x + learned.weight.narrow(0, 2, 3), "learned from offset 2");
  expect_close(as_parameter(x, 1), x + as_parameter.weight[0].narrow(0, 1, 3), "parameter from offset 1");
}

TEST(Names, EachFamilyKeepsItsHuggingFaceNames) {
  // BERT: post-norm LayerNorm inside the attention's output holder, next to its dense layer.
  torch::nn::Module bert;
  bert.register_module("attention", MultiHeadAttention(MultiHeadAttentionOptions(8, 2).names(
                                        "self.query", "self.key", "self.value", "output.dense")));
  Residual(bert, ResidualOptions(8).pre_norm(false).norm_name("attention.output.LayerNorm"));
  FeedForward(bert, FeedForwardOptions(8, 16).fc1_name("intermediate.dense").fc2_name("output.dense"));
  Residual(bert, ResidualOptions(8).pre_norm(false).norm_name("output.LayerNorm"));
  EXPECT_EQ(parameter_names(bert),
            (std::vector<std::string>{
                "attention.self.query.weight", "attention.self.query.bias", "attention.self.key.weight",
                "attention.self.key.bias", "attention.self.value.weight", "attention.self.value.bias",
                "attention.output.dense.weight", "attention.output.dense.bias", "attention.output.LayerNorm.weight",
                "attention.output.LayerNorm.bias", "intermediate.dense.weight", "intermediate.dense.bias",
                "output.dense.weight", "output.dense.bias", "output.LayerNorm.weight", "output.LayerNorm.bias"}));
  // Marian: the default projection names.
  torch::nn::Module marian;
  marian.register_module("encoder_attn", MultiHeadAttention(MultiHeadAttentionOptions(8, 2).qkv_bias(false)));
  EXPECT_EQ(parameter_names(marian),
            (std::vector<std::string>{"encoder_attn.q_proj.weight", "encoder_attn.k_proj.weight",
                                      "encoder_attn.v_proj.weight", "encoder_attn.out_proj.weight",
                                      "encoder_attn.out_proj.bias"}));
}

// The dropout kernel: the share kept, the scale, neighbouring elements drawn independently,
// evaluation and p = 0 as the identity, in fp32 and bf16.
// The linear kernel is x W^T + b with its gradients, with and without a bias, for 2-D and
// 3-D inputs and single rows (a matrix-vector product on the CPU), in fp32 and bf16; on CUDA
// (where it takes ATen's linear) the same as on the CPU.
TEST(Linear, IsXWtPlusBWithGradientsOnEveryDevice) {
  torch::manual_seed(8);
  std::vector<torch::Device> devices{torch::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(torch::kCUDA);
  for (auto dtype : {torch::kFloat, torch::kBFloat16})
    for (bool with_bias : {true, false})
      for (auto shape : {std::vector<int64_t>{5, 12}, std::vector<int64_t>{3, 5, 12}, std::vector<int64_t>{1, 12},
                         std::vector<int64_t>{1, 1, 12}, std::vector<int64_t>{12}}) {
        const auto x0 = torch::randn(shape), w0 = torch::randn({7, 12}), b0 = torch::randn({7});
        auto want = x0.matmul(w0.t());
        if (with_bias) want = want + b0;
        for (const auto& device : devices) {
          // detach(): to() returns x0 itself where nothing changes, and x0 must stay a plain tensor.
          auto x = x0.to(device, dtype).detach().requires_grad_(), w = w0.to(device, dtype).detach().requires_grad_();
          auto b = with_bias ? b0.to(device, dtype).detach().requires_grad_() : torch::Tensor();
          auto y = linear(x, w, b);
          y.sum().backward();
          const double tol = dtype == torch::kFloat ? 1e-5 : 0.1;
          const std::string what = device.str() + (dtype == torch::kFloat ? " fp32" : " bf16") +
                                   (with_bias ? " with bias, " : " no bias, ") + std::to_string(shape.size()) + "-D";
          EXPECT_TRUE(torch::allclose(y.cpu().to(torch::kFloat), want, tol, tol)) << what;
          // d sum(y) / dx = ones W, d/dW = ones^T x, d/db = the row count.
          const auto rows = x0.reshape({-1, 12});
          EXPECT_TRUE(torch::allclose(x.grad().cpu().to(torch::kFloat).reshape({-1, 12}),
                                      w0.sum(0).expand({rows.size(0), 12}), tol, tol)) << what;
          EXPECT_TRUE(torch::allclose(w.grad().cpu().to(torch::kFloat), rows.sum(0).expand({7, 12}), 10 * tol, 10 * tol))
              << what;
          if (with_bias) {
            EXPECT_TRUE(torch::allclose(b.grad().cpu().to(torch::kFloat), torch::full({7}, float(rows.size(0))))) << what;
          }
        }
      }
}

// The padded product (what CUDA runs for output widths like GPT-2's 50,257) has the plain
// product's values and gradients, with and without a bias, for a width that needs padding and
// one that does not; its result has the plain shape. On CUDA also through linear() itself, with
// enough rows (and a wide enough output) for linear() to choose it.
TEST(Linear, PaddedOutputWidthGivesThePlainProductAndGradients) {
  torch::manual_seed(9);
  std::vector<torch::Device> devices{torch::kCPU};
  if (torch::cuda::is_available()) devices.emplace_back(torch::kCUDA);
  for (const auto& device : devices)
    for (int64_t n : {1037, 1024})
      for (bool with_bias : {true, false}) {
        const auto x0 = torch::randn({2, 150, 16}), w0 = torch::randn({n, 16}), b0 = torch::randn({n}),
                   g = torch::randn({2, 150, n});
        auto grads = [&](bool padded) {
          auto x = x0.to(device).detach().requires_grad_(), w = w0.to(device).detach().requires_grad_();
          auto b = with_bias ? b0.to(device).detach().requires_grad_() : torch::Tensor();
          auto y = padded ? linear_padded(x, w, b) : at::linear(x, w, with_bias ? c10::optional<at::Tensor>(b) : c10::nullopt);
          if (padded && device.is_cuda()) y = linear(x, w, b);  // linear() pads there by itself
          (y * g.to(device)).sum().backward();
          std::vector<torch::Tensor> out{y.detach().cpu(), x.grad().cpu(), w.grad().cpu()};
          if (with_bias) out.push_back(b.grad().cpu());
          return out;
        };
        const auto want = grads(false), got = grads(true);
        const std::string what = device.str() + " n=" + std::to_string(n) + (with_bias ? " with bias" : "");
        EXPECT_EQ(got[0].sizes(), want[0].sizes()) << what;
        for (size_t i = 0; i < want.size(); ++i)
          EXPECT_TRUE(torch::allclose(got[i], want[i], 1e-4, 1e-4)) << what << ", tensor " << i;
      }
}

// The mask, element by element, is the one apply_dropout documents: the seed is the default
// CPU generator's next random64(), element i is kept when its 32 bits of SplitMix64's output k
// = i / 2 (low half for even i) are at least p * 2^32, and kept elements are x * 1/(1-p)
// rounded to the dtype. Pinned on an odd count (the last element's pair is incomplete),
// fp32 and bf16, against the formula computed here one element at a time.
TEST(Dropout, TheMaskIsSplitMix64OfTheElementIndex) {
  auto mix = [](uint64_t seed, uint64_t k) {
    uint64_t z = seed + (k + 1) * 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  };
  const double p = 0.3;
  const auto threshold = static_cast<uint32_t>(p * 4294967296.0);
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    const int64_t n = 100003;
    const auto x = torch::randn({n}).to(dtype);
    torch::manual_seed(11);
    const uint64_t seed = [] {
      auto gen = at::detail::getDefaultCPUGenerator();
      return at::check_generator<at::CPUGeneratorImpl>(gen)->random64();
    }();
    torch::manual_seed(11);
    const auto y = apply_dropout(x, p, /*training=*/true);
    const auto xf = x.to(torch::kFloat), yf = y.to(torch::kFloat);
    const float* xs = xf.data_ptr<float>();
    const float* ys = yf.data_ptr<float>();
    int64_t wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const uint64_t bits = mix(seed, static_cast<uint64_t>(i / 2));
      const auto half = static_cast<uint32_t>(i % 2 ? bits >> 32 : bits);
      const float scaled = xs[i] * static_cast<float>(1.0 / (1.0 - p));
      const float want = half >= threshold ? torch::tensor(scaled).to(dtype).item<float>() : 0.f;
      if (ys[i] != want && wrong++ < 3) ADD_FAILURE() << "element " << i << ": " << ys[i] << ", want " << want;
    }
    EXPECT_EQ(wrong, 0) << (dtype == torch::kFloat ? "fp32" : "bf16");
  }
}

TEST(Dropout, KeepsOneMinusPOfTheElementsScaledAndIsTheIdentityOutOfTraining) {
  torch::manual_seed(1);
  const int64_t n = 1000000;
  for (auto dtype : {torch::kFloat, torch::kBFloat16}) {
    auto x = torch::ones({n / 1000, 1000}, dtype);
    auto y = apply_dropout(x, 0.2, /*training=*/true);
    ASSERT_EQ(y.scalar_type(), dtype);
    ASSERT_EQ(y.sizes(), x.sizes());
    auto kept = y.ne(0).to(torch::kDouble).flatten();
    EXPECT_NEAR(kept.mean().item<double>(), 0.8, 0.003);  // 7 standard deviations
    EXPECT_TRUE(y.masked_select(y.ne(0)).eq(1.25).all().item<bool>()) << "kept elements are scaled by 1 / (1 - p)";
    // Elements 2k and 2k+1 take the two halves of one hash: both kept 0.64 of the time.
    auto both = (kept.slice(0, 0, n, 2) * kept.slice(0, 1, n, 2)).mean().item<double>();
    EXPECT_NEAR(both, 0.64, 0.005);
    // and elements k apart (another hash) as well
    EXPECT_NEAR((kept.slice(0, 0, n - 7) * kept.slice(0, 7, n)).mean().item<double>(), 0.64, 0.005);
    EXPECT_TRUE(apply_dropout(x, 0.2, /*training=*/false).is_same(x));
    EXPECT_TRUE(apply_dropout(x, 0.0, /*training=*/true).is_same(x));
  }
}

TEST(Dropout, TheBackwardPassRecomputesTheForwardMask) {
  torch::manual_seed(2);
  auto x = torch::randn({64, 301}, torch::requires_grad());  // an odd row length
  auto y = apply_dropout(x, 0.3, /*training=*/true);
  auto g = torch::randn_like(y);
  y.backward(g);
  auto expected = torch::where(y.ne(0), g / 0.7, torch::zeros_like(g));
  EXPECT_LE((x.grad() - expected).abs().max().item<double>(), 1e-6);
  EXPECT_LE((y - torch::where(y.ne(0), x / 0.7, torch::zeros_like(x))).abs().max().item<double>(), 1e-6);
  // A non-contiguous input is masked in its logical order, forward and backward alike.
  auto z = torch::randn({301, 64}, torch::requires_grad());
  auto w = apply_dropout(z.t(), 0.3, /*training=*/true);
  w.backward(g);
  EXPECT_TRUE(z.grad().t().ne(0).eq(w.ne(0)).all().item<bool>());
}

TEST(Dropout, ManualSeedReproducesTheMaskAndEachCallDrawsAnother) {
  auto x = torch::ones({10000});
  torch::manual_seed(5);
  auto a = apply_dropout(x, 0.5, true), b = apply_dropout(x, 0.5, true);
  torch::manual_seed(5);
  auto c = apply_dropout(x, 0.5, true);
  EXPECT_TRUE(a.equal(c));
  EXPECT_FALSE(a.equal(b));
}

// Inside a DropoutSeedStream the masks come from the stream's base alone, whatever the default
// generator holds, and each call takes the stream's next seed; closing it (streams nest) gives
// the outer stream, then the default generator, back where they were.
TEST(Dropout, ASeedStreamGivesTheSameMasksWhateverTheDefaultGenerator) {
  auto x = torch::ones({10000});
  auto masks = [&](uint64_t manual) {
    torch::manual_seed(manual);
    DropoutSeedStream stream(77);
    auto first = apply_dropout(x, 0.5, true);
    return std::pair{first, apply_dropout(x, 0.5, true)};
  };
  const auto [a1, a2] = masks(1);
  const auto [b1, b2] = masks(2);
  EXPECT_TRUE(a1.equal(b1));
  EXPECT_TRUE(a2.equal(b2));
  EXPECT_FALSE(a1.equal(a2));
  {
    DropoutSeedStream other(78);
    EXPECT_FALSE(apply_dropout(x, 0.5, true).equal(a1));
  }
  torch::manual_seed(5);
  const auto outside = apply_dropout(x, 0.5, true);
  torch::manual_seed(5);
  {
    DropoutSeedStream outer(77);
    EXPECT_TRUE(apply_dropout(x, 0.5, true).equal(a1));
    { DropoutSeedStream inner(78); apply_dropout(x, 0.5, true); }
    EXPECT_TRUE(apply_dropout(x, 0.5, true).equal(a2));  // the outer stream's second seed
  }
  EXPECT_TRUE(apply_dropout(x, 0.5, true).equal(outside));  // the generator was not drawn from
}

}  // namespace
}  // namespace zoo
