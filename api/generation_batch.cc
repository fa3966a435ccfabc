// zoo::GenerationBatch: continuous batching. Rows join a running DecoderState between steps
// (TextGenerator::join left-pads the shorter history), each row is chosen on its own (its
// sampling settings and its own seeded generator, as a prompt alone draws), and rows that end
// leave it (DecoderState::select, then TextGenerator::trim). The rows are spread over one
// shard per intra-op thread. step() steps every shard side by side and waits for the slowest;
// run() gives each shard its own thread and loop, so that none waits for another.
#include "zoo/zoo.h"

#include <algorithm>
#include <atomic>
#include <limits>

#include "api/generator_impl.h"
#include "core/threads.h"
#include "data/text.h"
#include "predict/text_stream.h"

namespace zoo {

namespace api {

// One generation of the batch (named, not anonymous: GenerationBatch::Impl holds them).
struct BatchRow {
  GenerationRequest request;
  models::SamplingOptions sampling;
  at::Generator draws;
  std::vector<int64_t> prompt;   // what the model read (for the repetition penalty)
  std::vector<int64_t> history;  // the row's tokens so far, the next one to feed last
  size_t in_window = 0;          // of them, the tokens its decoding state holds and the next one
  std::unique_ptr<TextStream> stream;
  Generation result;
  bool cancelled = false;  // on_text returned false
  bool ended = false;
};

// The rows that decode together in one forward pass. A batch has one shard per intra-op
// thread: on a CPU each shard's step runs on its own core, single-threaded, which for small
// models beats spreading each of one big step's many small operations over the cores.
struct BatchShard {
  std::shared_ptr<models::StepModel> model;
  models::DecoderState state;
  std::vector<std::unique_ptr<BatchRow>> rows;     // in the state's row order
  std::vector<std::unique_ptr<BatchRow>> joining;  // added, or renewed, since the last step
  int64_t steps = 0;
  std::vector<int64_t> next;   // the step's chosen token of each row
  std::vector<double> chosen;  // and its log-probability

  size_t size() const { return rows.size() + joining.size(); }
};

}  // namespace api

using Row = api::BatchRow;
using Shard = api::BatchShard;

struct GenerationBatch::Impl {
  const Generator::Impl& generator;
  std::vector<Shard> shards;
  int64_t eos = std::numeric_limits<int64_t>::max();

  // One shard per intra-op thread on a CPU; on a GPU one batch.
  explicit Impl(const Generator::Impl& g)
      : generator(g), shards(g.device.is_cpu() ? static_cast<size_t>(std::max(1, at::get_num_threads())) : 1) {
    if (g.model->eos_id() >= 0) eos = g.model->eos_id();
  }

  Shard& emptiest() {
    return *std::min_element(shards.begin(), shards.end(),
                             [](const Shard& a, const Shard& b) { return a.size() < b.size(); });
  }

  // The joining rows' last in_window tokens (the last one fed at the next step) read in one
  // left-padded forward, their states appended to the shard's.
  void join_waiting(Shard& s) const {
    if (s.joining.empty()) return;
    std::vector<std::vector<int64_t>> windows;
    for (const auto& row : s.joining)
      windows.emplace_back(row->history.end() - static_cast<std::ptrdiff_t>(row->in_window), row->history.end());
    auto decoding = windows.size() == 1 ? generator.model->start_decoding(windows[0], /*use_cache=*/true)
                                        : generator.model->start_decoding(windows, /*use_cache=*/true);
    decoding.state.erase("first");  // the batch feeds each row's last token itself
    if (!s.model) s.model = decoding.model;
    generator.model->join(s.state, std::move(decoding.state));
    for (auto& row : s.joining) s.rows.push_back(std::move(row));
    s.joining.clear();
  }

  // Keeps the shard's rows for which keep(row) is true, in order; returns the others.
  template <class Keep>
  std::vector<std::unique_ptr<Row>> keep_rows(Shard& s, Keep keep) const {
    std::vector<int64_t> kept;
    std::vector<std::unique_ptr<Row>> still, left;
    for (size_t r = 0; r < s.rows.size(); ++r) {
      if (keep(*s.rows[r])) kept.push_back(static_cast<int64_t>(r)), still.push_back(std::move(s.rows[r]));
      else left.push_back(std::move(s.rows[r]));
    }
    s.rows = std::move(still);
    if (left.empty()) return left;
    if (s.rows.empty()) s.state = {};
    else s.state.select(torch::tensor(kept, torch::kLong).to(s.state.device()));
    if (!s.rows.empty()) generator.model->trim(s.state);
    return left;
  }

  // A row whose history fills the context goes on from the last half of its window (as the
  // decoder does for a prompt alone): it leaves the shard and joins again with that half.
  void renew_full_rows(Shard& s) const {
    const auto window = static_cast<size_t>(generator.model->context_size());
    auto full = keep_rows(s, [&](Row& row) { return row.in_window <= window; });
    for (auto& row : full) {
      row->in_window = std::max<size_t>(1, window / 2);
      s.joining.push_back(std::move(row));
    }
  }

  // The next token of each row from the step's log-probabilities (N, V).
  std::vector<int64_t> choose(const std::vector<std::unique_ptr<Row>>& rows, const torch::Tensor& log_probs) const {
    std::vector<int64_t> next(rows.size());
    const auto best_rows = log_probs.argmax(-1).to(torch::kCPU).contiguous();
    const int64_t* best = best_rows.data_ptr<int64_t>();
    for (size_t r = 0; r < rows.size(); ++r) {
      Row& row = *rows[r];
      if (!row.sampling.do_sample && row.sampling.repetition_penalty == 1.0) {
        next[r] = best[r];
        continue;
      }
      auto scores = log_probs.narrow(0, static_cast<int64_t>(r), 1).clone();
      const std::vector<int64_t> generated(row.history.begin() + static_cast<std::ptrdiff_t>(row.prompt.size()),
                                           row.history.end());
      models::apply_repetition_penalty(scores, row.prompt, {generated}, row.sampling.repetition_penalty);
      next[r] = models::choose_next(scores, row.sampling, row.draws).item<int64_t>();
    }
    return next;
  }

  // The shard's step up to the chosen tokens (no callback: those run on the caller's thread).
  void decode(Shard& s) const {
    renew_full_rows(s);
    join_waiting(s);
    if (s.rows.empty()) return;
    std::vector<int64_t> prev;
    for (const auto& row : s.rows) prev.push_back(row->history.back());
    const auto log_probs =
        models::checked_step(*s.model, torch::tensor(prev, torch::kLong).to(s.state.device()), s.state, s.steps++);
    s.next = choose(s.rows, log_probs);
    const auto chosen = log_probs.gather(1, torch::tensor(s.next, torch::kLong).to(log_probs.device()).unsqueeze(1))
                            .squeeze(1)
                            .to(torch::kCPU, torch::kDouble)
                            .contiguous();
    s.chosen.assign(chosen.data_ptr<double>(), chosen.data_ptr<double>() + chosen.numel());
  }

  // The shard's chosen tokens given to their rows; rows that end leave.
  void advance(Shard& s) {
    for (size_t r = 0; r < s.rows.size(); ++r) {
      Row& row = *s.rows[r];
      const int64_t token = s.next[r];
      row.result.logprob += s.chosen[r];
      row.history.push_back(token);
      ++row.in_window;
      const bool more = row.stream->add(token) && !row.cancelled;
      const bool length = static_cast<int64_t>(row.history.size() - row.prompt.size()) >= row.request.options.max_new_tokens;
      if (token == eos || !more || row.cancelled) finish(row, false);
      else if (length) finish(row, true);
    }
    keep_rows(s, [](Row& row) { return !row.ended; });
  }

  // The request checked and its prompt encoded; null when it ends at once (max_new_tokens 0).
  std::unique_ptr<Row> make_row(GenerationRequest request) {
    const GenerationOptions& o = request.options;
    api::check_options(o);
    if (o.beam_size != 1) throw Error("GenerationBatch: beam_size must be 1 (beam search runs apart: Generator::generate)");
    if (request.prompt.empty()) throw Error("the prompt is empty; give it some text");
    data::check_utf8(request.prompt, "the prompt");
    auto row = std::make_unique<Row>();
    std::string warning;
    row->prompt = generator.prompt_ids(request.prompt, 0, &warning);
    if (!warning.empty()) {
      if (!request.truncate_prompt)
        throw Error(cat("the prompt has more tokens than the model's context (", generator.model->context_size(),
                        "); shorten it, or allow it to be cut"));
      row->result.warnings.push_back("the prompt" + warning.substr(warning.find(" has ")));
    }
    row->sampling = api::sampling_of(o);
    row->draws = at::detail::createCPUGenerator(row->sampling.seed);
    row->history = row->prompt;
    row->in_window = row->prompt.size();
    row->result.prompt_tokens = static_cast<int64_t>(row->prompt.size());
    row->request = std::move(request);
    Row* raw = row.get();
    row->stream = std::make_unique<TextStream>(*generator.model, o.stop, [raw](const std::string& piece) {
      if (!raw->cancelled && raw->request.on_text && !raw->request.on_text(piece)) raw->cancelled = true;
    });
    if (o.max_new_tokens == 0) {
      finish(*row, /*by_length=*/true);
      return nullptr;
    }
    return row;
  }

  // run()'s loop for one shard, on its own thread: feed, then a step, until the feed ends it.
  void loop(Shard& s, size_t share, const GenerationBatch::Feed& feed, const std::atomic<bool>& failed) {
    const auto add = [&](GenerationRequest r) {
      if (auto row = make_row(std::move(r))) s.joining.push_back(std::move(row));
    };
    while (!failed && feed(s.size(), share > s.size() ? share - s.size() : 0, s.size() == 0, add)) {
      if (s.size() == 0) continue;
      decode(s);
      advance(s);
    }
  }

  void finish(Row& row, bool by_length) {
    row.ended = true;
    if (row.cancelled) return;
    row.stream->finish();
    row.result.text = row.stream->text();
    row.result.tokens = row.stream->tokens();
    row.result.finish_reason = by_length && !row.stream->stopped() ? "length" : "stop";
    if (row.request.on_done) row.request.on_done(std::move(row.result));
  }
};

GenerationBatch::GenerationBatch(const Generator& generator) : impl_(std::make_unique<Impl>(*generator.impl_)) {}
GenerationBatch::~GenerationBatch() = default;
GenerationBatch::GenerationBatch(GenerationBatch&&) noexcept = default;
GenerationBatch& GenerationBatch::operator=(GenerationBatch&&) noexcept = default;

size_t GenerationBatch::size() const {
  size_t n = 0;
  for (const auto& s : impl_->shards) n += s.size();
  return n;
}

void GenerationBatch::add(GenerationRequest request) {
  torch::NoGradGuard no_grad;
  if (auto row = impl_->make_row(std::move(request))) impl_->emptiest().joining.push_back(std::move(row));
}

void GenerationBatch::step() {
  Impl& b = *impl_;
  torch::NoGradGuard no_grad;
  std::vector<Shard*> busy;
  for (auto& s : b.shards)
    if (s.size() > 0) busy.push_back(&s);
  // Several: each shard's step on its own core; one: with every intra-op thread.
  run_side_by_side(busy.size(), [&](size_t i) { b.decode(*busy[i]); });
  for (Shard* s : busy) b.advance(*s);
}

void GenerationBatch::run(size_t max_rows, const Feed& feed) {
  Impl& b = *impl_;
  torch::NoGradGuard no_grad;
  // Fewer rows than shards: one shard, its operations on every intra-op thread (as step() runs
  // a single busy shard); else a loop per thread, each on its own core.
  const auto shares = split_evenly(max_rows, b.shards.size());
  std::atomic<bool> failed{false};
  run_side_by_side(shares.size(), [&](size_t i) {
    try {
      b.loop(b.shards[i], shares[i], feed, failed);
    } catch (...) {
      failed = true;  // the other loops stop before their next step
      throw;
    }
  });
}

}  // namespace zoo
