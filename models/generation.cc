#include "models/generation.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <utility>

#include "core/error.h"
#include "models/kernels/beam_topk.h"
#include "models/kernels/kv_append.h"

namespace zoo::models {
namespace {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

torch::Tensor long_tensor(const std::vector<int64_t>& values, const torch::Device& device) {
  return torch::tensor(values, torch::kLong).to(device);
}

// A hypothesis of `tokens` whose last token was produced by row `row` (its attention
// history is history[row], one row per generated token so far).
Hypothesis make_hypothesis(std::vector<int64_t> tokens, double log_prob, bool finished,
                           const torch::Tensor& history, int64_t row, const GenerationOptions& o) {
  Hypothesis h;
  h.tokens = std::move(tokens);
  h.log_prob = log_prob;
  h.finished = finished;
  h.score = log_prob / o.length_divisor(static_cast<int64_t>(h.tokens.size()));
  if (history.defined()) {
    // clone(): keep only this row, not the whole (N, t, S) history tensor.
    h.attention = history[row].narrow(0, 0, static_cast<int64_t>(h.tokens.size())).clone();
  }
  return h;
}

// Appends the last step's attention (N, S) to the history (N, t, S).
torch::Tensor extend_history(const torch::Tensor& history, const torch::Tensor& attention) {
  if (!attention.defined()) return history;
  auto row = attention.unsqueeze(1);  // (N, 1, S)
  return history.defined() ? torch::cat({history, row}, 1) : row;
}

}  // namespace

// ---------------------------------------------------------------------------------------
// DecoderState

void DecoderState::set(const std::string& name, torch::Tensor value, int64_t batch_dim,
                       Scope scope) {
  if (!value.defined()) throw Error(cat("DecoderState: entry '", name, "' is undefined"));
  if (batch_dim < 0 || batch_dim >= value.dim())
    throw Error(cat("DecoderState: entry '", name, "' has ", value.dim(),
                    " dimensions, so batch_dim ", batch_dim, " does not exist"));
  entries_[name] = Entry{std::move(value), batch_dim, scope};
}

const torch::Tensor& DecoderState::get(const std::string& name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) throw Error(cat("DecoderState: no entry '", name, "'"));
  return it->second.value;
}

int64_t DecoderState::rows() const {
  int64_t n = -1;
  std::string first;
  for (const auto& [name, e] : entries_) {
    const int64_t r = e.value.size(e.batch_dim);
    if (n < 0) {
      n = r;
      first = name;
    } else if (r != n) {
      throw Error(
          cat("DecoderState: entry '", name, "' has ", r, " rows but '", first, "' has ", n));
    }
  }
  return std::max<int64_t>(n, 0);
}

torch::Device DecoderState::device() const {
  return entries_.empty() ? torch::Device(torch::kCPU) : entries_.begin()->second.value.device();
}

void DecoderState::repeat_interleave(int64_t times) {
  for (auto& [name, e] : entries_) e.value = e.value.repeat_interleave(times, e.batch_dim);
}

void DecoderState::reorder(const torch::Tensor& indices) {
  for (auto& [name, e] : entries_) {
    if (e.scope == Scope::kHypothesis)
      e.value = select_rows(e.value, e.batch_dim, indices.to(e.value.device()));
  }
}

std::vector<std::string> DecoderState::names() const {
  std::vector<std::string> out;
  for (const auto& [name, e] : entries_) out.push_back(name);
  return out;
}

void DecoderState::select(const torch::Tensor& indices) {
  for (auto& [name, e] : entries_) e.value = select_rows(e.value, e.batch_dim, indices.to(e.value.device()));
}

DecoderState DecoderState::take(const std::string& prefix) {
  DecoderState out;
  out.wants_attention_ = wants_attention_;
  for (auto it = entries_.lower_bound(prefix); it != entries_.end() && it->first.rfind(prefix, 0) == 0;) {
    out.entries_.emplace(it->first.substr(prefix.size()), std::move(it->second));
    it = entries_.erase(it);
  }
  return out;
}

void DecoderState::put(const std::string& prefix, DecoderState&& other) {
  for (auto& [name, e] : other.entries_) entries_[prefix + name] = std::move(e);
  other.entries_.clear();
}

// ---------------------------------------------------------------------------------------
// StepModel

torch::Tensor checked_step(StepModel& model, const torch::Tensor& prev_tokens, DecoderState& state, int64_t step) {
  torch::Tensor log_probs = model.step(prev_tokens, state);
  // One reduction: the maximum is NaN when any entry is (torch propagates it), and
  // log-probabilities are at most 0, so +inf is never an answer either; -inf (a masked token) is.
  const double top = log_probs.numel() > 0 ? log_probs.max().item<double>() : 0.0;
  if (std::isnan(top) || top == std::numeric_limits<double>::infinity())
    throw NonFiniteOutput(cat(model.origin().empty() ? "" : model.origin() + ": ",
                              "the model's next-token scores are NaN or infinite at decoding step ", step + 1,
                              ": its weights overflow float32 at run time (finite but huge values) or are damaged; "
                              "use a checkpoint whose zoo eval loss is finite"));
  return log_probs;
}

// ---------------------------------------------------------------------------------------
// PrefixTree

PrefixTree::PrefixTree(const std::vector<std::vector<int64_t>>& sequences, int64_t eos_id)
    : nodes_(1), eos_id_(eos_id) {
  for (const auto& sequence : sequences) {
    int32_t node = 0;
    for (size_t i = 0; i <= sequence.size(); ++i) {
      const int64_t token = i < sequence.size() ? sequence[i] : eos_id;
      if (i < sequence.size() && (token == eos_id || token < 0))
        throw Error(cat("PrefixTree: allowed sequences must not contain eos (", eos_id,
                        ") or negative ids; got ", token, " at position ", i));
      auto it = nodes_[node].children.find(token);
      if (it == nodes_[node].children.end()) {
        const auto child = static_cast<int32_t>(nodes_.size());
        nodes_[node].children.emplace(token, child);  // before push_back: it may reallocate
        nodes_.emplace_back();
        node = child;
        if (token == eos_id) ++size_;  // a new leaf: a new sequence
      } else {
        node = it->second;
      }
      max_token_ = std::max(max_token_, token);
    }
  }
}

int32_t PrefixTree::walk(const std::vector<int64_t>& prefix) const {
  int32_t node = 0;
  for (const int64_t token : prefix) {
    auto it = nodes_[node].children.find(token);
    if (it == nodes_[node].children.end()) return -1;
    node = it->second;
  }
  return node;
}

std::vector<int64_t> PrefixTree::allowed(const std::vector<int64_t>& prefix) const {
  std::vector<int64_t> out;
  const int32_t node = walk(prefix);
  if (node < 0) return out;
  for (const auto& [token, child] : nodes_[node].children) out.push_back(token);
  return out;
}

bool PrefixTree::contains(const std::vector<int64_t>& tokens) const {
  return !tokens.empty() && tokens.back() == eos_id_ && walk(tokens) >= 0;
}

void PrefixTree::apply(const std::vector<std::vector<int64_t>>& prefixes,
                       torch::Tensor& log_probs) const {
  if (log_probs.dim() != 2 || log_probs.size(0) != static_cast<int64_t>(prefixes.size()))
    throw Error(cat("PrefixTree: expected log_probs of shape (", prefixes.size(), ", V), got ",
                    log_probs.sizes()));
  const int64_t vocab = log_probs.size(1);
  if (max_token_ >= vocab)
    throw Error(
        cat("PrefixTree: token ", max_token_, " is outside the vocabulary (size ", vocab, ")"));
  auto blocked = torch::ones({log_probs.size(0), vocab}, torch::kBool);  // (N, V)
  auto acc = blocked.accessor<bool, 2>();
  for (size_t n = 0; n < prefixes.size(); ++n) {
    const int32_t node = walk(prefixes[n]);
    if (node < 0) continue;  // left the tree: nothing allowed
    for (const auto& [token, child] : nodes_[node].children) acc[n][token] = false;
  }
  log_probs.masked_fill_(blocked.to(log_probs.device()), kNegInf);
}

// ---------------------------------------------------------------------------------------
// GenerationOptions

void GenerationOptions::validate() const {
  if (bos_id < 0 || eos_id < 0)
    throw Error(cat("generation: bos_id and eos_id are required (got bos_id ", bos_id, ", eos_id ",
                    eos_id, ")"));
  if (max_new_tokens < 1)
    throw Error(cat("generation: max_new_tokens must be >= 1, got ", max_new_tokens));
  if (num_beams < 1) throw Error(cat("generation: num_beams must be >= 1, got ", num_beams));
  if (num_return_sequences < 1 || num_return_sequences > num_beams)
    throw Error(cat("generation: num_return_sequences (", num_return_sequences,
                    ") must be between 1 and num_beams (", num_beams, ")"));
  if (length_normalization != "plain" && length_normalization != "gnmt")
    throw Error(cat("generation: length_normalization must be plain or gnmt, got '",
                    length_normalization, "'"));
}

double GenerationOptions::length_divisor(int64_t length) const {
  const double len = static_cast<double>(std::max<int64_t>(length, 1));
  const double base = length_normalization == "gnmt" ? (5.0 + len) / 6.0 : len;
  return std::pow(base, length_penalty);
}

// ---------------------------------------------------------------------------------------
// Greedy search

std::vector<Hypothesis> greedy_decode(StepModel& model, DecoderState state,
                                      const GenerationOptions& options,
                                      const Constraint* constraint) {
  options.validate();
  state.set_wants_attention(options.attention);
  const int64_t batch = state.rows();
  const torch::Device device = state.device();
  std::vector<Hypothesis> hyps(batch);
  std::vector<int64_t> live(batch);  // sentence of each row still decoding
  std::iota(live.begin(), live.end(), 0);
  std::vector<int64_t> prev(batch, options.bos_id);
  torch::Tensor history;  // (N, t, S) attention rows so far, when the model has them

  // Ends the hypothesis of row i (its tokens are already in place).
  auto finish = [&](int64_t i, bool finished) {
    Hypothesis& h = hyps[live[i]];
    h = make_hypothesis(std::move(h.tokens), h.log_prob, finished, history, i, options);
  };

  for (int64_t t = 0; t < options.max_new_tokens && !live.empty(); ++t) {
    auto log_probs = checked_step(model, long_tensor(prev, device), state, t);  // (N, V)
    if (constraint) {
      std::vector<std::vector<int64_t>> prefixes;
      for (int64_t b : live) prefixes.push_back(hyps[b].tokens);
      constraint->apply(prefixes, log_probs);
    }
    if (options.attention) history = extend_history(history, model.attention(state));
    auto [best, arg] = log_probs.max(1);  // (N), (N)
    best = best.to(torch::kCPU, torch::kDouble).contiguous();
    arg = arg.to(torch::kCPU).contiguous();
    const double* best_p = best.data_ptr<double>();
    const int64_t* arg_p = arg.data_ptr<int64_t>();

    std::vector<int64_t> keep, next;
    for (size_t i = 0; i < live.size(); ++i) {
      Hypothesis& h = hyps[live[i]];
      if (!std::isfinite(best_p[i])) {  // the constraint left no token
        finish(static_cast<int64_t>(i), false);
        continue;
      }
      h.tokens.push_back(arg_p[i]);
      h.log_prob += best_p[i];
      if (arg_p[i] == options.eos_id) {
        finish(static_cast<int64_t>(i), true);
      } else {
        keep.push_back(static_cast<int64_t>(i));
        next.push_back(arg_p[i]);
      }
    }
    if (keep.size() < live.size()) {  // drop finished rows from the batch
      std::vector<int64_t> still;
      for (int64_t i : keep) still.push_back(live[i]);
      live = std::move(still);
      if (!live.empty()) {
        auto idx = long_tensor(keep, device);
        state.select(idx);
        if (history.defined()) history = history.index_select(0, idx);
      }
    }
    prev = std::move(next);
  }
  for (size_t i = 0; i < live.size(); ++i) finish(static_cast<int64_t>(i), false);  // cut
  return hyps;
}

// ---------------------------------------------------------------------------------------
// Beam search

namespace {

// Whether beam search can stop for a sentence at step t: `best_live` is the best score of its
// live beams, `fin` its finished hypotheses.
bool sentence_done(const std::vector<Hypothesis>& fin, double best_live, int64_t t, const GenerationOptions& options) {
  const auto n_return = static_cast<size_t>(options.num_return_sequences);
  if (!std::isfinite(best_live)) return true;
  if (options.early_stopping && fin.size() >= static_cast<size_t>(options.num_beams)) return true;
  if (fin.size() < n_return) return false;
  // The n_return-th best finished score against the best score a live hypothesis can still
  // reach: its log-prob only falls, and it ends with t + 2 .. max_new_tokens tokens
  // (length_divisor is monotonic in the length, so an end point is extreme).
  std::vector<double> fs;
  for (const auto& h : fin) fs.push_back(h.score);
  std::nth_element(fs.begin(), fs.begin() + (n_return - 1), fs.end(), std::greater<double>());
  const double d1 = options.length_divisor(t + 2);
  const double d2 = options.length_divisor(options.max_new_tokens);
  const double bound = best_live <= 0 ? best_live / std::max(d1, d2) : best_live / std::min(d1, d2);
  return fs[n_return - 1] >= bound;
}

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search(StepModel& model, DecoderState state,
                                                 const GenerationOptions& options,
                                                 const Constraint* constraint) {
  options.validate();
  state.set_wants_attention(options.attention);
  const int64_t batch = state.rows();
  const int64_t beams = options.num_beams;
  const auto n_return = static_cast<size_t>(options.num_return_sequences);
  const torch::Device device = state.device();
  std::vector<std::vector<Hypothesis>> finished(batch);  // per sentence, in finishing order
  if (batch == 0) return finished;

  // Rows are blocks of `beams` per live sentence: row a * beams + k is beam k of live[a].
  state.repeat_interleave(beams);
  std::vector<int64_t> live(batch);
  std::iota(live.begin(), live.end(), 0);
  std::vector<std::vector<int64_t>> seqs(batch * beams);  // tokens of each row
  // All beams of a sentence start identical: only beam 0 is active at first.
  std::vector<double> scores(batch * beams, kNegInf);  // sum of log-probs of each row
  for (int64_t b = 0; b < batch; ++b) scores[b * beams] = 0;
  std::vector<int64_t> prev(batch * beams, options.bos_id);
  torch::Tensor history;  // (N, t, S)

  for (int64_t t = 0; t < options.max_new_tokens && !live.empty(); ++t) {
    const auto n_live = static_cast<int64_t>(live.size());
    const int64_t n_rows = n_live * beams;
    auto log_probs = checked_step(model, long_tensor(prev, device), state, t);  // (N, V)
    if (constraint) constraint->apply(seqs, log_probs);
    if (options.attention) history = extend_history(history, model.attention(state));
    const int64_t vocab = log_probs.size(1);
    // 2 * beams candidates: enough for `beams` non-eos ones even if eos is among the best.
    const int64_t width = std::min(2 * beams, beams * vocab);
    const auto [top_scores, top_ids] = beam_topk(log_probs, scores, beams, width);  // (B', width), best first
    auto ts = top_scores.accessor<double, 2>();
    auto ti = top_ids.accessor<int64_t, 2>();

    std::vector<int64_t> from(n_rows), tokens(n_rows);
    std::vector<double> next_scores(n_rows, kNegInf);
    std::vector<bool> done(n_live, false);
    const bool last_step = t + 1 == options.max_new_tokens;
    for (int64_t a = 0; a < n_live; ++a) {
      const int64_t b = live[a];
      int64_t filled = 0;
      for (int64_t j = 0; j < width; ++j) {
        const double s = ts[a][j];
        if (!std::isfinite(s)) break;  // sorted: only -inf follows
        const int64_t row = a * beams + ti[a][j] / vocab;
        const int64_t token = ti[a][j] % vocab;
        if (token == options.eos_id) {
          if (j < beams) {  // eos among the `beams` best candidates: a finished hypothesis
            auto tokens_eos = seqs[row];
            tokens_eos.push_back(token);
            finished[b].push_back(
                make_hypothesis(std::move(tokens_eos), s, true, history, row, options));
          }
        } else if (filled < beams) {
          from[a * beams + filled] = row;
          tokens[a * beams + filled] = token;
          next_scores[a * beams + filled] = s;
          ++filled;
        }
        if (filled == beams && j + 1 >= beams) break;  // later ranks cannot finish
      }
      for (; filled < beams; ++filled) {  // too few live extensions: inactive beams
        from[a * beams + filled] = a * beams;
        tokens[a * beams + filled] = options.eos_id;
      }

      // Done? next_scores of the block are in decreasing order, so [a * beams] is the best.
      auto& fin = finished[b];
      const bool is_done = last_step || sentence_done(fin, next_scores[a * beams], t, options);
      if (is_done && fin.size() < n_return) {  // fill in with unfinished hypotheses
        for (int64_t k = 0; k < beams; ++k) {
          const int64_t i = a * beams + k;
          if (!std::isfinite(next_scores[i])) break;
          auto cut = seqs[from[i]];
          cut.push_back(tokens[i]);
          fin.push_back(
              make_hypothesis(std::move(cut), next_scores[i], false, history, from[i], options));
        }
      }
      done[a] = is_done;
    }

    // Advance: rows move within their sentence's block, sequences grow by one token.
    auto from_t = long_tensor(from, device);
    state.reorder(from_t);
    if (history.defined()) history = history.index_select(0, from_t);
    std::vector<std::vector<int64_t>> next_seqs(n_rows);
    for (int64_t i = 0; i < n_rows; ++i) {
      next_seqs[i] = seqs[from[i]];
      next_seqs[i].push_back(tokens[i]);
    }
    seqs = std::move(next_seqs);
    scores = std::move(next_scores);
    prev = std::move(tokens);

    // Drop the blocks of finished sentences from the batch.
    if (std::find(done.begin(), done.end(), true) == done.end()) continue;
    std::vector<int64_t> keep_rows, still;
    for (int64_t a = 0; a < n_live; ++a) {
      if (done[a]) continue;
      still.push_back(live[a]);
      for (int64_t k = 0; k < beams; ++k) keep_rows.push_back(a * beams + k);
    }
    live = std::move(still);
    if (live.empty()) break;
    auto keep_t = long_tensor(keep_rows, device);
    state.select(keep_t);
    if (history.defined()) history = history.index_select(0, keep_t);
    std::vector<std::vector<int64_t>> kept_seqs;
    std::vector<double> kept_scores;
    std::vector<int64_t> kept_prev;
    for (int64_t i : keep_rows) {
      kept_seqs.push_back(std::move(seqs[i]));
      kept_scores.push_back(scores[i]);
      kept_prev.push_back(prev[i]);
    }
    seqs = std::move(kept_seqs);
    scores = std::move(kept_scores);
    prev = std::move(kept_prev);
  }

  for (auto& fin : finished) {
    std::stable_sort(fin.begin(), fin.end(),
                     [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    if (fin.size() > n_return) fin.resize(n_return);
  }
  return finished;
}

}  // namespace zoo::models
