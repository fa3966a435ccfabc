#include "serve/metrics.h"

#include <cstdio>

namespace zoo::serve {

namespace {
std::string number(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}
// A label value with Prometheus' escapes.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}
}  // namespace

Metrics::Metrics()
    : seconds_bounds_{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120},
      batch_bounds_{1, 2, 4, 8, 16, 32, 64, 128, 256} {}

Metrics::Histogram& Metrics::series(std::map<std::string, Histogram>& all, const std::string& key,
                                    const std::vector<double>& bounds) {
  auto [it, fresh] = all.try_emplace(key);
  if (fresh) it->second = {bounds, std::vector<int64_t>(bounds.size() + 1), 0, 0};
  return it->second;
}

void Metrics::Histogram::observe(double x) {
  size_t i = 0;
  while (i < bounds.size() && x > bounds[i]) ++i;
  ++counts[i];
  sum += x;
  ++count;
}

void Metrics::request_done(const std::string& route, int status, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{route, status}];
  series(latency_, route, seconds_bounds_).observe(seconds);
}

void Metrics::batch(const std::string& model, int64_t rows) {
  std::lock_guard<std::mutex> lock(mutex_);
  series(batch_, model, batch_bounds_).observe(static_cast<double>(rows));
}

void Metrics::tokens(const std::string& model, int64_t count) {
  std::lock_guard<std::mutex> lock(mutex_);
  tokens_[model] += count;
}

void Metrics::first_token(const std::string& model, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  series(first_token_, model, seconds_bounds_).observe(seconds);
}

void Metrics::render_histogram(std::string& out, const std::string& name, const std::string& labels,
                               const Histogram& h) {
  int64_t cumulative = 0;
  for (size_t i = 0; i <= h.bounds.size(); ++i) {
    cumulative += h.counts[i];
    const std::string le = i < h.bounds.size() ? number(h.bounds[i]) : "+Inf";
    out += name + "_bucket{" + labels + ",le=\"" + le + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_sum{" + labels + "} " + number(h.sum) + "\n";
  out += name + "_count{" + labels + "} " + std::to_string(h.count) + "\n";
}

std::string Metrics::render() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::string out;
  out += "# HELP zoo_requests_total Requests answered, by route and HTTP status.\n# TYPE zoo_requests_total counter\n";
  for (const auto& [key, n] : requests_)
    out += "zoo_requests_total{route=" + quoted(key.first) + ",status=\"" + std::to_string(key.second) + "\"} " +
           std::to_string(n) + "\n";
  out += "# HELP zoo_requests_in_flight Requests being answered.\n# TYPE zoo_requests_in_flight gauge\n";
  out += "zoo_requests_in_flight " + std::to_string(in_flight.load()) + "\n";
  out += "# HELP zoo_requests_queued Requests waiting to join a batch.\n# TYPE zoo_requests_queued gauge\n";
  out += "zoo_requests_queued " + std::to_string(queued.load()) + "\n";
  out += "# HELP zoo_tokens_generated_total Tokens generated, by model.\n# TYPE zoo_tokens_generated_total counter\n";
  for (const auto& [model, n] : tokens_)
    out += "zoo_tokens_generated_total{model=" + quoted(model) + "} " + std::to_string(n) + "\n";
  out += "# HELP zoo_batch_size Rows in each decoding step or gathered batch, by model.\n"
         "# TYPE zoo_batch_size histogram\n";
  for (const auto& [model, h] : batch_) render_histogram(out, "zoo_batch_size", "model=" + quoted(model), h);
  out += "# HELP zoo_request_duration_seconds Time to answer a request, by route.\n"
         "# TYPE zoo_request_duration_seconds histogram\n";
  for (const auto& [route, h] : latency_)
    render_histogram(out, "zoo_request_duration_seconds", "route=" + quoted(route), h);
  out += "# HELP zoo_time_to_first_token_seconds Time from a completion's arrival to its first text, by model.\n"
         "# TYPE zoo_time_to_first_token_seconds histogram\n";
  for (const auto& [model, h] : first_token_)
    render_histogram(out, "zoo_time_to_first_token_seconds", "model=" + quoted(model), h);
  return out;
}

}  // namespace zoo::serve
