#pragma once
// Training logs: a live progress bar on a terminal (plain lines otherwise),
// OUT/metrics.jsonl (one JSON object per event) and a TensorBoard event file.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "io/config.h"

namespace zoo {

class EventWriter;

class TrainLogger {
 public:
  /// Appends to OUT/metrics.jsonl (so a resumed run continues the same file).
  TrainLogger(const std::string& output_dir, int64_t total_steps, bool tensorboard);
  ~TrainLogger();

  /// Per-step update of the progress bar (cheap; redraws at most ~10 times a second).
  void progress(int64_t step, double loss, double lr, double steps_per_second);
  /// A logging event: {"type":"train","step":…,"loss":…,"lr":…,…} to every sink; the
  /// parts of the loss ("loss_mlm", ...) are shown beside the total.
  void log_train(int64_t step, const json& values);
  /// An evaluation event: {"type":"eval","split":…,"step":…,<metrics>}; TensorBoard's
  /// eval/<metric> scalars too unless `tensorboard` is false (an evaluation of other weights
  /// at the same step, such as the averaged checkpoint's).
  void log_eval(int64_t step, const std::string& split, const json& metrics, bool tensorboard = true);
  /// The run's length changed (train.max_time re-estimates it).
  void set_total(int64_t total_steps) { total_steps_ = total_steps; }
  /// A line for the user (clears the progress bar first).
  void message(const std::string& text);
  void flush();

 private:
  void write_jsonl(const json& j);
  void clear_bar();

  std::ofstream jsonl_;
  std::unique_ptr<EventWriter> tb_;
  int64_t total_steps_;
  bool tty_;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

/// "1h02m", "3m12s", "45s".
std::string format_duration(double seconds);

}  // namespace zoo
