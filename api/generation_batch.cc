// zoo::GenerationBatch: continuous batching. Rows join a running DecoderState between steps
// (TextGenerator::join left-pads the shorter history), each row is chosen on its own (its
// sampling settings and its own seeded generator, as a prompt alone draws), and rows that end
// leave it (DecoderState::select, then TextGenerator::trim).
#include "zoo/zoo.h"

#include <algorithm>
#include <limits>

#include "api/generator_impl.h"
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

}  // namespace api

using Row = api::BatchRow;

struct GenerationBatch::Impl {
  const Generator::Impl& generator;
  std::shared_ptr<models::StepModel> model;
  models::DecoderState state;
  std::vector<std::unique_ptr<Row>> rows;  // in the state's row order
  int64_t eos = std::numeric_limits<int64_t>::max();
  int64_t steps = 0;

  explicit Impl(const Generator::Impl& g) : generator(g) {
    if (g.model->eos_id() >= 0) eos = g.model->eos_id();
  }

  std::vector<std::unique_ptr<Row>> joining;  // added, or renewed, since the last step

  // The joining rows' last in_window tokens (the last one fed at the next step) read in one
  // left-padded forward, their states appended to the batch's.
  void join_waiting() {
    if (joining.empty()) return;
    std::vector<std::vector<int64_t>> windows;
    for (const auto& row : joining)
      windows.emplace_back(row->history.end() - static_cast<std::ptrdiff_t>(row->in_window), row->history.end());
    auto decoding = windows.size() == 1 ? generator.model->start_decoding(windows[0], /*use_cache=*/true)
                                        : generator.model->start_decoding(windows, /*use_cache=*/true);
    decoding.state.erase("first");  // the batch feeds each row's last token itself
    if (!model) model = decoding.model;
    generator.model->join(state, std::move(decoding.state));
    for (auto& row : joining) rows.push_back(std::move(row));
    joining.clear();
  }

  // Keeps the rows for which keep(row) is true, in order; returns the others.
  template <class Keep>
  std::vector<std::unique_ptr<Row>> keep_rows(Keep keep) {
    std::vector<int64_t> kept;
    std::vector<std::unique_ptr<Row>> still, left;
    for (size_t r = 0; r < rows.size(); ++r) {
      if (keep(*rows[r])) kept.push_back(static_cast<int64_t>(r)), still.push_back(std::move(rows[r]));
      else left.push_back(std::move(rows[r]));
    }
    rows = std::move(still);
    if (left.empty()) return left;
    if (rows.empty()) state = {};
    else state.select(torch::tensor(kept, torch::kLong).to(state.device()));
    if (!rows.empty()) generator.model->trim(state);
    return left;
  }

  // A row whose history fills the context goes on from the last half of its window (as the
  // decoder does for a prompt alone): it leaves the batch and joins again with that half.
  void renew_full_rows() {
    const auto window = static_cast<size_t>(generator.model->context_size());
    auto full = keep_rows([&](Row& row) { return row.in_window <= window; });
    for (auto& row : full) {
      row->in_window = std::max<size_t>(1, window / 2);
      joining.push_back(std::move(row));
    }
  }

  // The next token of each row from the step's log-probabilities (N, V).
  std::vector<int64_t> choose(const torch::Tensor& log_probs) {
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

size_t GenerationBatch::size() const { return impl_->rows.size() + impl_->joining.size(); }

void GenerationBatch::add(GenerationRequest request) {
  const GenerationOptions& o = request.options;
  api::check_options(o);
  if (o.beam_size != 1) throw Error("GenerationBatch: beam_size must be 1 (beam search runs apart: Generator::generate)");
  if (request.prompt.empty()) throw Error("the prompt is empty; give it some text");
  data::check_utf8(request.prompt, "the prompt");
  torch::NoGradGuard no_grad;
  auto row = std::make_unique<Row>();
  std::string warning;
  row->prompt = impl_->generator.prompt_ids(request.prompt, 0, &warning);
  if (!warning.empty()) {
    if (!request.truncate_prompt)
      throw Error(cat("the prompt has more tokens than the model's context (", impl_->generator.model->context_size(),
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
  row->stream = std::make_unique<TextStream>(*impl_->generator.model, o.stop, [raw](const std::string& piece) {
    if (!raw->cancelled && raw->request.on_text && !raw->request.on_text(piece)) raw->cancelled = true;
  });
  if (o.max_new_tokens == 0) {
    impl_->finish(*row, /*by_length=*/true);
    return;
  }
  impl_->joining.push_back(std::move(row));
}

void GenerationBatch::step() {
  Impl& b = *impl_;
  torch::NoGradGuard no_grad;
  b.renew_full_rows();
  b.join_waiting();
  if (b.rows.empty()) return;
  std::vector<int64_t> prev;
  for (const auto& row : b.rows) prev.push_back(row->history.back());
  const auto log_probs =
      models::checked_step(*b.model, torch::tensor(prev, torch::kLong).to(b.state.device()), b.state, b.steps++);
  const std::vector<int64_t> next = b.choose(log_probs);
  const auto chosen = log_probs.gather(1, torch::tensor(next, torch::kLong).to(log_probs.device()).unsqueeze(1))
                          .squeeze(1)
                          .to(torch::kCPU, torch::kDouble)
                          .contiguous();
  for (size_t r = 0; r < b.rows.size(); ++r) {
    Row& row = *b.rows[r];
    const int64_t token = next[r];
    row.result.logprob += chosen.data_ptr<double>()[r];
    row.history.push_back(token);
    ++row.in_window;
    const bool more = row.stream->add(token) && !row.cancelled;
    const bool length = static_cast<int64_t>(row.history.size() - row.prompt.size()) >= row.request.options.max_new_tokens;
    if (token == b.eos || !more || row.cancelled) b.finish(row, false);
    else if (length) b.finish(row, true);
  }
  b.keep_rows([](Row& row) { return !row.ended; });
}

}  // namespace zoo
