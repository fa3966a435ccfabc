#pragma once
// The threads that run zoo serve's models. A CompletionWorker owns one GenerationBatch and runs
// it (GenerationBatch::run: a loop per shard); requests join it between steps (continuous
// batching).
// A BatchWorker gathers translation, classification or embedding requests for a few
// milliseconds and answers them with one call of the library. Both refuse work past their queue
// at once (429), never by waiting.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "serve/metrics.h"
#include "serve/requests.h"
#include "zoo/zoo.h"

namespace zoo::serve {

using Clock = std::chrono::steady_clock;

/// One /v1/completions request: its rows (prompt x n) and what they produce, read by the HTTP
/// thread that answers it.
struct CompletionJob {
  std::string model;
  std::vector<GenerationRequest> rows;  // callbacks bound by make_rows()
  Clock::time_point arrived = Clock::now();

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::pair<size_t, std::string>> pieces;  // (row, text) not yet sent
  std::vector<std::optional<Generation>> results;
  size_t remaining = 0;
  std::optional<ApiError> error;
  bool cancelled = false;  // the client left, or the server gives up on it
  bool first_text = false;

  /// Sets the rows' callbacks (`self` is this job); the first text's delay goes to metrics.
  void bind(const std::shared_ptr<CompletionJob>& self, Metrics& metrics);
  void fail(const ApiError& e);
  void cancel();
  bool finished();  // under no lock: takes it
};

class CompletionWorker {
 public:
  CompletionWorker(const Generator& generator, std::string model, int64_t max_rows, int64_t max_queue,
                   Metrics& metrics);
  ~CompletionWorker();
  /// Queues the job's rows; an ApiError 429 when the queue is full.
  void submit(const std::shared_ptr<CompletionJob>& job);
  /// Ends the thread: at once (rows still decoding are failed), or once every job is done.
  void stop(bool now);

 private:
  void run();
  bool feed(size_t rows, size_t room, bool idle, const std::function<void(GenerationRequest)>& add);
  const Generator& generator_;
  std::string model_;
  int64_t max_rows_, max_queue_;
  Metrics& metrics_;
  GenerationBatch batch_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::pair<std::shared_ptr<CompletionJob>, size_t>> pending_;
  std::vector<std::shared_ptr<CompletionJob>> active_;  // jobs with rows in the batch (under mutex_)
  bool stop_ = false, stop_now_ = false;
  std::thread thread_;
};

/// One translation, classification or embedding request.
struct BatchJob {
  std::string key;        // jobs with equal keys may share a call
  size_t inputs = 0;      // sentences, texts or images
  std::shared_ptr<void> request;
  std::mutex mutex;
  std::condition_variable changed;
  bool done = false;
  json result;            // the response's data items, one per input
  std::optional<ApiError> error;
  void finish(json items);
  void fail(const ApiError& e);
  /// Waits until done; returns false after `timeout`.
  bool wait(std::chrono::milliseconds timeout);
};

class BatchWorker {
 public:
  /// Answers a group of jobs with one call (each job gets its items or its error).
  using Run = std::function<void(const std::vector<std::shared_ptr<BatchJob>>&)>;
  /// `lanes`: groups answered at once, each on its own thread and core with at most its share
  /// of max_inputs (a CPU's threads; 1 on a GPU, or when max_inputs is smaller).
  BatchWorker(std::string model, Run run, int64_t max_inputs, int64_t max_queue, std::chrono::milliseconds gather,
              Metrics& metrics, int64_t lanes = 1);
  ~BatchWorker();
  void submit(const std::shared_ptr<BatchJob>& job);
  void stop();

 private:
  void run();
  void answer_groups(int64_t most);  // one lane: groups of at most `most` inputs until stopped
  std::vector<std::shared_ptr<BatchJob>> next_group(int64_t most);  // empty: stopped
  std::string model_;
  Run run_;
  int64_t max_inputs_, max_queue_, lanes_;
  std::chrono::milliseconds gather_;
  Metrics& metrics_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<BatchJob>> pending_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace zoo::serve
