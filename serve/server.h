#pragma once
// zoo serve: every loaded checkpoint behind one HTTP server (cpp-httplib), OpenAI-compatible
// where OpenAI has the endpoint (docs/serve.md): /v1/completions (continuous batching,
// server-sent events), /v1/embeddings, zoo's /v1/translate and /v1/classify, /v1/models,
// /health, /metrics and a page to try each model at /.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <torch/types.h>

namespace zoo::serve {

struct ServeOptions {
  std::vector<std::pair<std::string, std::string>> checkpoints;  // (name, directory)
  std::string host = "127.0.0.1";
  int port = 8080;  // 0: any free port (printed)
  torch::Device device = torch::kCPU;
  int64_t max_batch_size = 16;  // rows decoding together; inputs per gathered call
  int64_t max_queue = 64;       // requests waiting per model before 429
  std::string api_key;          // "": no key
  double drain_timeout = 30;    // seconds requests in flight may take after SIGTERM
  int64_t max_body_bytes = 8 << 20;
  int64_t gather_ms = 5;        // how long translation/classification/embedding requests gather
  std::string quantize;         // "" or "int8" (LoadOptions::quantize)
};

class Server {
 public:
  explicit Server(ServeOptions options);
  ~Server();
  /// Binds, loads every checkpoint (GET /health answers 503 meanwhile), prints the address on
  /// stderr and answers until shutdown(); returns the exit code (0 after a drain).
  int run();
  /// Drains: /health turns 503, new requests get 503, requests in flight finish (up to
  /// drain_timeout), then run() returns. Safe from any thread.
  void shutdown();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

/// The page served at / (serve/page.html, built into the program).
extern const char* const kPageHtml;

}  // namespace zoo::serve
