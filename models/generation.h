#pragma once
// Decoding strategies for autoregressive models (document 002, "序列解码"): greedy search,
// beam search with length normalisation, and prefix-tree constrained decoding.
//
// They are written once against two small abstractions, so the GRU seq2seq, the
// Transformer and GPT share them:
//
//   DecoderState  what a model carries from one step to the next, for N rows (one row per
//                 hypothesis): named tensors plus the dimension that indexes the rows. The
//                 search reorders, repeats and drops rows through it, so a model never has
//                 to implement beam bookkeeping itself.
//   StepModel     one decoding step: previous token of every row -> log-probabilities of the
//                 next token (N, V), updating the state in place.
//
// Special ids (bos, eos) are always parameters (GenerationOptions); nothing is hard-coded.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "core/error.h"
#include "core/options.h"

namespace zoo::models {

/// Per-row decoder state: named tensors, each with the dimension that indexes the rows.
///
/// Entries have a scope. kHypothesis entries (RNN hidden states, key/value caches) belong to
/// one hypothesis and follow it when beam search reorders rows. kSentence entries (encoder
/// outputs, source masks) are identical for every hypothesis of a sentence, so reorder()
/// leaves them alone (beam search only moves rows within a sentence's block of rows); only
/// repeat_interleave() and select() change them.
class DecoderState {
 public:
  enum class Scope { kHypothesis, kSentence };

  /// Adds or replaces an entry. `batch_dim` is the dimension of `value` that indexes rows.
  void set(const std::string& name, torch::Tensor value, int64_t batch_dim = 0,
           Scope scope = Scope::kHypothesis);
  /// The entry's tensor; throws zoo::Error when there is none.
  const torch::Tensor& get(const std::string& name) const;
  bool has(const std::string& name) const { return entries_.count(name) > 0; }
  /// The entries' names, in order.
  std::vector<std::string> names() const;
  /// Removes an entry (none: nothing happens).
  void erase(const std::string& name) { entries_.erase(name); }
  /// Number of rows (N); 0 for an empty state. Throws when entries disagree.
  int64_t rows() const;
  /// Device of the entries (the CPU for an empty state).
  torch::Device device() const;

  /// Row r becomes rows r*times .. r*times+times-1, in every entry (beam expansion).
  void repeat_interleave(int64_t times);
  /// Row i of every kHypothesis entry becomes old row indices[i]; kSentence entries are kept,
  /// so every index must point into the same sentence's rows as i (beam search's reorder).
  void reorder(const torch::Tensor& indices);
  /// Keeps rows `indices` (N') of every entry, in that order (dropping finished sentences).
  void select(const torch::Tensor& indices);
  /// Moves the entries whose names start with `prefix` into a state of their own, the prefix
  /// dropped from their names (an ensemble's member reads its own entries; wants_attention copied).
  DecoderState take(const std::string& prefix);
  /// Moves every entry of `other` into this state under `prefix` + its name (take()'s inverse).
  void put(const std::string& prefix, DecoderState&& other);
  /// Whether the search reads StepModel::attention() after each step (GenerationOptions::
  /// attention); a model may skip computing it when not. True until a search says otherwise.
  void set_wants_attention(bool wants) { wants_attention_ = wants; }
  bool wants_attention() const { return wants_attention_; }

 private:
  struct Entry {
    torch::Tensor value;
    int64_t batch_dim = 0;
    Scope scope = Scope::kHypothesis;
  };
  std::map<std::string, Entry> entries_;
  bool wants_attention_ = true;
};

/// A model decoded one token at a time.
class StepModel {
 public:
  virtual ~StepModel() = default;
  /// Log-probabilities of the next token, (N, V), given every row's previous token
  /// `prev_tokens` (N) int64; updates `state` (N rows) in place. The searches may write into
  /// the returned tensor (constraints), so it must not alias the model's own storage.
  virtual torch::Tensor step(const torch::Tensor& prev_tokens, DecoderState& state) = 0;
  /// Attention weights over the source of the last step, (N, S), for alignment heat maps;
  /// undefined when the model has none.
  virtual torch::Tensor attention(const DecoderState& /*state*/) const { return {}; }
  /// Where the weights come from (a checkpoint directory), named when a step's output is not
  /// finite; "" names nothing.
  void set_origin(std::string origin) { origin_ = std::move(origin); }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

/// The zoo::Error of checked_step, apart so that a caller that knows where the weights come
/// from (zoo eval) can name them when the model does not.
struct NonFiniteOutput : Error {
  using Error::Error;
};

/// model.step(prev_tokens, state) of decoding step `step` (0-based), checked once per step:
/// log-probabilities holding NaN or +infinity (finite but huge weights overflow float32 at run
/// time) are a NonFiniteOutput naming the model's origin and the step, not tokens made of NaN.
torch::Tensor checked_step(StepModel& model, const torch::Tensor& prev_tokens, DecoderState& state, int64_t step);

/// Restricts which tokens may follow a prefix; called by the searches on every step.
class Constraint {
 public:
  virtual ~Constraint() = default;
  /// Sets log_probs[n][t] = -inf for every token t that may not follow `prefixes[n]` (the
  /// tokens generated so far by row n, without bos). log_probs is (N, V).
  virtual void apply(const std::vector<std::vector<int64_t>>& prefixes,
                     torch::Tensor& log_probs) const = 0;
};

/// Prefix-tree ("trie") constrained decoding (document 002, 前缀树解码; Cao et al. 2021,
/// "Autoregressive Entity Retrieval"): every output must be one of a fixed list of
/// sequences. Each path from the root to a leaf is one allowed sequence followed by eos;
/// after a prefix only its children in the tree are allowed.
class PrefixTree : public Constraint {
 public:
  /// `sequences` are the allowed outputs without eos (an empty one allows the empty output);
  /// eos is appended to each. Throws zoo::Error when a sequence contains eos or a negative id.
  PrefixTree(const std::vector<std::vector<int64_t>>& sequences, int64_t eos_id);
  /// Tokens that may follow `prefix`, ascending; empty when `prefix` leaves the tree.
  std::vector<int64_t> allowed(const std::vector<int64_t>& prefix) const;
  /// True when `tokens` is an allowed sequence followed by eos.
  bool contains(const std::vector<int64_t>& tokens) const;
  /// Number of distinct allowed sequences.
  int64_t size() const { return size_; }
  /// Throws zoo::Error when the tree holds a token >= log_probs.size(1).
  void apply(const std::vector<std::vector<int64_t>>& prefixes,
             torch::Tensor& log_probs) const override;

 private:
  // Node 0 is the root; children maps a token to the index of its node.
  struct Node {
    std::map<int64_t, int32_t> children;
  };
  /// The node reached from the root by `prefix`, or -1.
  int32_t walk(const std::vector<int64_t>& prefix) const;
  std::vector<Node> nodes_;
  int64_t eos_id_;
  int64_t size_ = 0;
  int64_t max_token_ = -1;
};

/// Search settings (Hugging Face `generate` names where there is one).
struct GenerationOptions {
  int64_t bos_id = -1;  // first input token of every row; required
  int64_t eos_id = -1;  // ends a hypothesis; required
  int64_t max_new_tokens = 50;
  int64_t num_beams = 4;
  int64_t num_return_sequences = 1;
  double length_penalty = 1.0;
  std::string length_normalization = "plain";
  bool early_stopping = false;
  /// Fill Hypothesis::attention (alignment heat maps). Not a config key: callers that show the
  /// rows ask for them; without, a model need not compute them (the Transformer's cross-attention
  /// weights are a batched product of their own every step) and the searches keep no history.
  bool attention = false;

  template <class V>
  void fields(V& v) {
    v("bos_id", bos_id, "start token fed as the first input (required)", at_least(-1));
    v("eos_id", eos_id, "end token; a hypothesis ends when it produces it (required)",
      at_least(-1));
    v("max_new_tokens", max_new_tokens, "most tokens generated per sentence, eos included",
      at_least(1));
    v("num_beams", num_beams, "beam size; 1 = greedy", at_least(1));
    v("num_return_sequences", num_return_sequences, "n-best size (<= num_beams)", at_least(1));
    v("length_penalty", length_penalty,
      "alpha: hypotheses are ranked by log_prob / lp(len)^alpha; 0 = raw log-probability",
      between(-10, 10));
    v("length_normalization", length_normalization,
      "lp(len): plain = len, gnmt = (5 + len) / 6 (Wu et al. 2016)", one_of({"plain", "gnmt"}));
    v("early_stopping", early_stopping,
      "beam search: a sentence is done once num_beams hypotheses finished (faster; may miss a "
      "longer, better one when length_penalty > 0); false: once no live one can still win");
  }
  /// Throws zoo::Error on missing special ids or num_return_sequences > num_beams.
  void validate() const;
  /// The length penalty lp(len)^alpha that divides the log-probability of `length` tokens.
  double length_divisor(int64_t length) const;
};

/// One output sequence.
struct Hypothesis {
  std::vector<int64_t> tokens;  // generated tokens (no bos); ends with eos when `finished`
  double log_prob = 0;          // sum of the tokens' log-probabilities
  double score = 0;             // log_prob / length_divisor(tokens.size()): the ranking key
  bool finished = false;        // false: cut at max_new_tokens or no allowed token left
  torch::Tensor attention;      // (tokens.size(), S) per-token source attention, if the model has
                                // it and GenerationOptions::attention asked for it
};

/// Greedy search: every row takes its most probable next token until eos or max_new_tokens.
/// `state` holds the B sentences to decode (one row each) and is consumed. Finished rows
/// are dropped from the batch. Returns one hypothesis per sentence.
std::vector<Hypothesis> greedy_decode(StepModel& model, DecoderState state,
                                      const GenerationOptions& options,
                                      const Constraint* constraint = nullptr);

/// Beam search over B sentences at once (`state` holds one row per sentence and is
/// consumed; it is expanded to B * num_beams rows). Each step keeps the num_beams best
/// (by log-probability) unfinished extensions per sentence; an extension ending in eos
/// among the num_beams best candidates becomes a finished hypothesis. A sentence is done at
/// max_new_tokens, or when no live hypothesis can still beat the num_return_sequences-th
/// best finished score (an exact bound: log-probs only fall, and the length divisor is
/// bounded over the lengths still possible), or, with early_stopping, as soon as num_beams
/// hypotheses have finished (fairseq's rule). Finished sentences leave the batch. Returns, per
/// sentence, the num_return_sequences best hypotheses by score (best first); unfinished
/// hypotheses fill in only when too few finished. num_beams = 1 gives greedy_decode's result
/// when length_penalty = 0 or early_stopping is set (otherwise it may keep searching after
/// greedy's eos for a longer hypothesis with a better normalised score).
std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, DecoderState state,
                                                 const GenerationOptions& options,
                                                 const Constraint* constraint = nullptr);

}  // namespace zoo::models
