#include "train/logging.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <iostream>

#include "train/tensorboard.h"

namespace zoo {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const int64_t s = static_cast<int64_t>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) std::snprintf(buf, sizeof buf, "%ldh%02ldm", static_cast<long>(s / 3600), static_cast<long>(s / 60 % 60));
  else if (s >= 60) std::snprintf(buf, sizeof buf, "%ldm%02lds", static_cast<long>(s / 60), static_cast<long>(s % 60));
  else std::snprintf(buf, sizeof buf, "%lds", static_cast<long>(s));
  return buf;
}

TrainLogger::TrainLogger(const std::string& output_dir, int64_t total_steps, bool tensorboard)
    : total_steps_(total_steps), tty_(isatty(STDERR_FILENO)) {
  const std::string path = (std::filesystem::path(output_dir) / "metrics.jsonl").string();
  jsonl_.open(path, std::ios::app);
  if (!jsonl_) throw Error(cat(path, ": cannot open for writing"));
  if (tensorboard) tb_ = std::make_unique<EventWriter>(output_dir);
}

TrainLogger::~TrainLogger() {
  clear_bar();
  flush();
}

void TrainLogger::clear_bar() {
  if (tty_ && bar_shown_) {
    std::cerr << "\r\033[K" << std::flush;
    bar_shown_ = false;
  }
}

void TrainLogger::progress(int64_t step, double loss, double lr, double steps_per_second) {
  if (!tty_) return;
  const auto now = std::chrono::steady_clock::now();
  if (step < total_steps_ && now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  const int width = 24;
  const double frac = total_steps_ > 0 ? static_cast<double>(step) / total_steps_ : 0;
  const int filled = static_cast<int>(frac * width);
  const double eta = steps_per_second > 0 ? (total_steps_ - step) / steps_per_second : NAN;
  char line[256];
  std::snprintf(line, sizeof line, "\r[%s%s] %ld/%ld loss %.4f lr %.2e %.1f it/s ETA %s\033[K",
                std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), static_cast<long>(step),
                static_cast<long>(total_steps_), loss, lr, steps_per_second, format_duration(eta).c_str());
  std::cerr << line << std::flush;
  bar_shown_ = true;
}

void TrainLogger::write_jsonl(const json& j) {
  jsonl_ << j.dump() << "\n";
  jsonl_.flush();
}

void TrainLogger::log_train(int64_t step, const json& values) {
  json j = {{"type", "train"}, {"step", step}};
  j.update(values);
  write_jsonl(j);
  if (tb_) {
    for (auto it = values.begin(); it != values.end(); ++it)
      if (it.value().is_number()) tb_->add_scalar("train/" + it.key(), it.value().get<double>(), step);
  }
  clear_bar();
  // The parts of the loss ("loss_mlm", ...) follow the total in brackets.
  std::string parts;
  for (auto it = values.begin(); it != values.end(); ++it) {
    if (it.key().rfind("loss_", 0) != 0 || !it.value().is_number()) continue;
    char part[96];
    std::snprintf(part, sizeof part, "%s%s %.4f", parts.empty() ? "" : ", ", it.key().substr(5).c_str(),
                  it.value().get<double>());
    parts += part;
  }
  char line[256];
  std::snprintf(line, sizeof line, "step %ld/%ld  loss %.4f%s  lr %.3e  %.0f examples/s  elapsed %s",
                static_cast<long>(step), static_cast<long>(total_steps_), values.value("loss", NAN),
                parts.empty() ? "" : (" (" + parts + ")").c_str(), values.value("lr", NAN),
                values.value("examples_per_second", NAN), format_duration(values.value("elapsed_seconds", NAN)).c_str());
  std::cerr << line << "\n" << std::flush;
}

void TrainLogger::log_eval(int64_t step, const std::string& split, const json& metrics, bool tensorboard) {
  json j = {{"type", "eval"}, {"split", split}, {"step", step}};
  j.update(metrics);
  write_jsonl(j);
  std::string text = cat("eval (", split, ") at step ", step, ":");
  for (auto it = metrics.begin(); it != metrics.end(); ++it) {
    if (tb_ && tensorboard && it.value().is_number()) tb_->add_scalar("eval/" + it.key(), it.value().get<double>(), step);
    text += cat(" ", it.key(), " ", it.value().dump());
  }
  message(text);
}

void TrainLogger::message(const std::string& text) {
  clear_bar();
  std::cerr << text << "\n" << std::flush;
}

void TrainLogger::flush() {
  jsonl_.flush();
  if (tb_) tb_->flush();
}

}  // namespace zoo
