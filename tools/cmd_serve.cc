// zoo serve --checkpoint [NAME=]DIR...: the checkpoints behind an HTTP server (serve/server.h,
// docs/serve.md) until SIGTERM or SIGINT, which drain it.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "core/error.h"
#include "serve/server.h"
#include "tools/commands.h"
#include "train/device.h"

namespace zoo::cli {

namespace {

volatile std::sig_atomic_t stop_requested = false;

struct ServeArgs {
  std::vector<std::string> checkpoints;
  std::string host = "127.0.0.1";
  int port = 8080;
  std::string device = "auto";
  int64_t max_batch_size = 16, max_queue = 64, max_body_mib = 8, gather_ms = 5;
  double drain_timeout = 30;
  std::string api_key;
  std::string quantize;
};

// "NAME=DIR", or "DIR" named after its folder (a checkpoint-N folder after the run's).
std::pair<std::string, std::string> named(const std::string& given) {
  const auto eq = given.find('=');
  if (eq != std::string::npos && eq > 0 && given.find('/') > eq) return {given.substr(0, eq), given.substr(eq + 1)};
  std::filesystem::path p = std::filesystem::path(given).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  std::string name = p.filename().string();
  if (name.rfind("checkpoint-", 0) == 0 && !p.parent_path().filename().empty())
    name = p.parent_path().filename().string();
  return {name, given};
}

int run_serve(const ServeArgs& a) {
  serve::ServeOptions o;
  std::set<std::string> names;
  for (const auto& given : a.checkpoints) {
    auto [name, dir] = named(given);
    checked_checkpoint_dir(dir);
    if (!names.insert(name).second)
      throw Error(cat("zoo serve: two checkpoints are named '", name, "'; name them: --checkpoint NAME=DIR"));
    o.checkpoints.emplace_back(name, dir);
  }
  o.host = a.host, o.port = a.port, o.device = quantized_device(a.device, a.quantize);
  o.quantize = a.quantize;
  o.max_batch_size = a.max_batch_size, o.max_queue = a.max_queue, o.drain_timeout = a.drain_timeout;
  o.max_body_bytes = a.max_body_mib << 20, o.gather_ms = a.gather_ms;
  o.api_key = a.api_key;
  if (o.api_key.empty())
    if (const char* key = std::getenv("ZOO_API_KEY")) o.api_key = key;
  if (o.host != "127.0.0.1" && o.host != "localhost" && o.host != "::1" && o.api_key.empty())
    std::cerr << "zoo serve: warning: listening on " << o.host << " without an API key: anyone who reaches it may "
              << "use it (--api-key or ZOO_API_KEY)" << std::endl;
  // SIGTERM and SIGINT set a flag (LibTorch's threads exist already, so no mask can keep the
  // signals from them); a thread that watches it drains the server.
  stop_requested = false;
  struct sigaction on_signal {};
  on_signal.sa_handler = [](int) { stop_requested = true; };
  sigemptyset(&on_signal.sa_mask);
  sigaction(SIGTERM, &on_signal, nullptr);
  sigaction(SIGINT, &on_signal, nullptr);
  serve::Server server(o);
  std::atomic<bool> ended{false};
  std::thread waiter([&] {
    while (!stop_requested && !ended) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (stop_requested && !ended) server.shutdown();
  });
  int code = 1;
  try {
    code = server.run();
  } catch (...) {
    ended = true;
    waiter.join();
    throw;
  }
  ended = true;
  waiter.join();
  return code;
}

}  // namespace

void setup_serve(CLI::App& app, int* exit_code) {
  auto a = std::make_shared<ServeArgs>();
  auto* cmd = app.add_subcommand("serve", "Serve checkpoints over HTTP (OpenAI-compatible where OpenAI has the endpoint)");
  cmd->add_option("--checkpoint", a->checkpoints, "[NAME=]DIR: a checkpoint to serve (repeat for several)")
      ->required();
  cmd->add_option("--host", a->host, "address to listen on (127.0.0.1: this machine only)")->capture_default_str();
  cmd->add_option("--port", a->port, "port (0: any free port, printed)")->check(CLI::Range(0, 65535))->capture_default_str();
  cmd->add_option("--device", a->device, "auto | cpu | cuda | cuda:N | mps")->capture_default_str();
  cmd->add_option("--max-batch-size", a->max_batch_size, "completions decoding together; inputs per gathered call")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--max-queue", a->max_queue, "requests waiting per model before 429")
      ->check(CLI::Range(1, 100000))->capture_default_str();
  cmd->add_option("--api-key", a->api_key, "require 'Authorization: Bearer KEY' (also ZOO_API_KEY)");
  cmd->add_option("--drain-timeout", a->drain_timeout, "seconds requests in flight may take after SIGTERM/SIGINT")
      ->check(CLI::Range(0.0, 86400.0))->capture_default_str();
  cmd->add_option("--max-body-mib", a->max_body_mib, "largest request body (MiB; larger: 413)")
      ->check(CLI::Range(1, 1024))->capture_default_str();
  cmd->add_option("--gather-ms", a->gather_ms, "how long translation/classification/embedding requests gather")
      ->check(CLI::Range(0, 1000))->capture_default_str();
  add_quantize_option(cmd, &a->quantize);
  cmd->callback([a, exit_code] { *exit_code = run_serve(*a); });
}

}  // namespace zoo::cli
