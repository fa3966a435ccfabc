#pragma once
// zoo serve's /metrics: counters, gauges and histograms in Prometheus' text format (0.0.4).
// Thread-safe; every series is created on first use.
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace zoo::serve {

class Metrics {
 public:
  Metrics();
  void request_done(const std::string& route, int status, double seconds);
  void batch(const std::string& model, int64_t rows);
  void tokens(const std::string& model, int64_t count);
  void first_token(const std::string& model, double seconds);
  std::atomic<int64_t> in_flight{0};  ///< requests being answered
  std::atomic<int64_t> queued{0};     ///< requests waiting for a batch
  /// The text GET /metrics answers.
  std::string render() const;

 private:
  struct Histogram {
    std::vector<double> bounds;
    std::vector<int64_t> counts;  // one per bound, then +Inf
    double sum = 0;
    int64_t count = 0;
    void observe(double x);
  };
  // all[key], made with `bounds` on first use.
  static Histogram& series(std::map<std::string, Histogram>& all, const std::string& key,
                           const std::vector<double>& bounds);
  static void render_histogram(std::string& out, const std::string& name, const std::string& labels,
                               const Histogram& h);
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, int64_t> requests_;
  std::map<std::string, Histogram> latency_, first_token_, batch_;
  std::map<std::string, int64_t> tokens_;
  std::vector<double> seconds_bounds_, batch_bounds_;
};

}  // namespace zoo::serve
