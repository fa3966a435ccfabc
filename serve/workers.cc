#include "serve/workers.h"

#include <algorithm>

#include "core/threads.h"

namespace zoo::serve {

// ---- CompletionJob ------------------------------------------------------------------------------

void CompletionJob::bind(const std::shared_ptr<CompletionJob>& self, Metrics& metrics) {
  results.assign(rows.size(), std::nullopt);
  remaining = rows.size();
  // The rows hold the job weakly: a job its client left may end while its rows still decode.
  const std::weak_ptr<CompletionJob> weak = self;
  for (size_t i = 0; i < rows.size(); ++i) {
    rows[i].on_text = [weak, i, &metrics](const std::string& piece) {
      const auto job = weak.lock();
      if (!job) return false;
      std::lock_guard<std::mutex> lock(job->mutex);
      if (job->cancelled) return false;
      if (!job->first_text) {
        job->first_text = true;
        metrics.first_token(job->model, std::chrono::duration<double>(Clock::now() - job->arrived).count());
      }
      job->pieces.emplace_back(i, piece);
      job->changed.notify_all();
      return true;
    };
    rows[i].on_done = [weak, i, &metrics](Generation g) {
      const auto job = weak.lock();
      if (!job) return;
      metrics.tokens(job->model, static_cast<int64_t>(g.tokens.size()));
      std::lock_guard<std::mutex> lock(job->mutex);
      job->results[i] = std::move(g);
      --job->remaining;
      job->changed.notify_all();
    };
  }
}

void CompletionJob::fail(const ApiError& e) {
  std::lock_guard<std::mutex> lock(mutex);
  if (!error) error = e;
  cancelled = true;
  changed.notify_all();
}

void CompletionJob::cancel() {
  std::lock_guard<std::mutex> lock(mutex);
  cancelled = true;
  changed.notify_all();
}

bool CompletionJob::finished() {
  std::lock_guard<std::mutex> lock(mutex);
  return remaining == 0 || cancelled;
}

// ---- CompletionWorker ---------------------------------------------------------------------------

CompletionWorker::CompletionWorker(const Generator& generator, std::string model, int64_t max_rows, int64_t max_queue,
                                   Metrics& metrics)
    : generator_(generator), model_(std::move(model)), max_rows_(max_rows), max_queue_(max_queue), metrics_(metrics),
      batch_(generator), thread_([this] { run(); }) {}

CompletionWorker::~CompletionWorker() { stop(true); }

void CompletionWorker::submit(const std::shared_ptr<CompletionJob>& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) throw ApiError(503, "the server is shutting down", "", "server_error", "shutting_down");
  if (static_cast<int64_t>(pending_.size() + job->rows.size()) > max_queue_)
    throw ApiError(429,
                   "the queue of " + model_ + " is full (" + std::to_string(max_queue_) +
                       " completions waiting); try again in a moment",
                   "", "", "queue_full");
  for (size_t i = 0; i < job->rows.size(); ++i) pending_.emplace_back(job, i);
  metrics_.queued += static_cast<int64_t>(job->rows.size());
  wake_.notify_all();  // every shard's thread with no rows
}

void CompletionWorker::stop(bool now) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    stop_now_ = stop_now_ || now;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

// GenerationBatch::run's feed, on a shard's thread: up to `room` waiting rows join it; false
// when the shard's loop should end (at once, or draining: nothing waits and it has no rows).
bool CompletionWorker::feed(size_t rows, size_t room, bool idle, const std::function<void(GenerationRequest)>& add) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A timeout, so that a thread with no rows notices when another one's step failed.
  if (idle) wake_.wait_for(lock, std::chrono::milliseconds(50), [&] { return stop_ || !pending_.empty(); });
  if (stop_now_ || (stop_ && pending_.empty() && rows == 0)) return false;
  active_.erase(std::remove_if(active_.begin(), active_.end(), [](const auto& j) { return j->finished(); }),
                active_.end());
  while (room > 0 && !pending_.empty()) {
    auto [job, row] = std::move(pending_.front());
    pending_.pop_front();
    --metrics_.queued;
    if (job->finished()) continue;  // its client left, or another of its rows failed
    try {
      add(job->rows[row]);
      --room, ++rows;
      if (std::find(active_.begin(), active_.end(), job) == active_.end()) active_.push_back(job);
    } catch (const Error& e) {
      job->fail(invalid(e.what(), "prompt"));
    }
  }
  if (rows > 0) metrics_.batch(model_, static_cast<int64_t>(rows));
  return true;
}

void CompletionWorker::run() {
  for (;;) {
    try {
      batch_.run(static_cast<size_t>(max_rows_), [this](size_t rows, size_t room, bool idle, const auto& add) {
        return feed(rows, room, idle, add);
      });
      break;  // stopped
    } catch (const std::exception& e) {  // the model failed (not finite, out of memory): every row fails
      std::lock_guard<std::mutex> lock(mutex_);
      for (auto& job : active_) job->fail(ApiError(500, std::string("generation failed: ") + e.what()));
      active_.clear();
      batch_ = GenerationBatch(generator_);
    }
  }
  // Stopped: whatever is left fails (nothing, when it drained).
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& job : active_) job->fail(ApiError(503, "the server is shutting down", "", "server_error", "shutting_down"));
  for (auto& [job, row] : pending_)
    job->fail(ApiError(503, "the server is shutting down", "", "server_error", "shutting_down"));
  metrics_.queued -= static_cast<int64_t>(pending_.size());
  pending_.clear();
}

// ---- BatchJob and BatchWorker -------------------------------------------------------------------

void BatchJob::finish(json items) {
  std::lock_guard<std::mutex> lock(mutex);
  result = std::move(items);
  done = true;
  changed.notify_all();
}

void BatchJob::fail(const ApiError& e) {
  std::lock_guard<std::mutex> lock(mutex);
  error = e;
  done = true;
  changed.notify_all();
}

bool BatchJob::wait(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex);
  return changed.wait_for(lock, timeout, [&] { return done; });
}

BatchWorker::BatchWorker(std::string model, Run answer, int64_t max_inputs, int64_t max_queue,
                         std::chrono::milliseconds gather, Metrics& metrics, int64_t lanes)
    : model_(std::move(model)), run_(std::move(answer)), max_inputs_(max_inputs), max_queue_(max_queue),
      lanes_(std::max<int64_t>(1, lanes)), gather_(gather), metrics_(metrics), thread_([this] { this->run(); }) {}

BatchWorker::~BatchWorker() { stop(); }

void BatchWorker::submit(const std::shared_ptr<BatchJob>& job) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (stop_) throw ApiError(503, "the server is shutting down", "", "server_error", "shutting_down");
  if (static_cast<int64_t>(pending_.size()) >= max_queue_)
    throw ApiError(429,
                   "the queue of " + model_ + " is full (" + std::to_string(max_queue_) +
                       " requests waiting); try again in a moment",
                   "", "", "queue_full");
  pending_.push_back(job);
  ++metrics_.queued;
  wake_.notify_all();  // every idle lane
}

void BatchWorker::stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
    wake_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
}

void BatchWorker::run() {
  const auto shares = split_evenly(static_cast<size_t>(max_inputs_), static_cast<size_t>(lanes_));
  run_side_by_side(shares.size(), [&](size_t i) { answer_groups(static_cast<int64_t>(shares[i])); });
}

std::vector<std::shared_ptr<BatchJob>> BatchWorker::next_group(int64_t most) {
  std::vector<std::shared_ptr<BatchJob>> group;
  int64_t taken = 0;  // the group's inputs
  std::unique_lock<std::mutex> lock(mutex_);
  auto inputs = [&] {
    int64_t n = 0;
    for (const auto& j : pending_) n += static_cast<int64_t>(j->inputs);
    return n;
  };
  do {  // until some wait that another lane did not take
    wake_.wait(lock, [&] { return stop_ || !pending_.empty(); });
    if (pending_.empty()) return group;  // stopped, every job answered
    // Gather: wait a little for more requests, unless the first ones fill a batch.
    const auto until = Clock::now() + gather_;
    while (!stop_ && inputs() < most && wake_.wait_until(lock, until) != std::cv_status::timeout) {
    }
  } while (pending_.empty());
  const std::string key = pending_.front()->key;
  for (auto it = pending_.begin(); it != pending_.end();) {
    const bool fits = group.empty() || taken + static_cast<int64_t>((*it)->inputs) <= most;
    if ((*it)->key == key && fits) {
      taken += static_cast<int64_t>((*it)->inputs);
      group.push_back(*it);
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  metrics_.queued -= static_cast<int64_t>(group.size());
  metrics_.batch(model_, taken);
  return group;
}

void BatchWorker::answer_groups(int64_t most) {
  for (auto group = next_group(most); !group.empty(); group = next_group(most)) {
    try {
      run_(group);
    } catch (const std::exception&) {
      // One request's input may fail the whole call: answer each alone, so only it fails.
      for (const auto& job : group) {
        try {
          run_({job});
        } catch (const Error& e) {
          job->fail(invalid(e.what(), "input"));
        } catch (const ApiError& e) {
          job->fail(e);
        } catch (const std::exception& e) {
          job->fail(ApiError(500, e.what()));
        }
      }
    }
  }
}

}  // namespace zoo::serve
