#include "train/signals.h"

#include <csignal>

namespace zoo {

std::atomic<bool>& stop_requested() {
  static std::atomic<bool> flag{false};
  return flag;
}

namespace {
std::atomic<int> first_signal{0};

void on_stop_signal(int sig) {
  int none = 0;
  first_signal.compare_exchange_strong(none, sig);
  if (stop_requested().exchange(true)) {
    // Second signal: the user insists. Checkpoints are atomic, so leaving now is safe.
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}
}  // namespace

int stop_exit_status() { return 128 + (first_signal.load() ? first_signal.load() : SIGTERM); }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

}  // namespace zoo
