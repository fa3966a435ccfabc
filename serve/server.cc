#include "serve/server.h"

#include <httplib.h>

#include <atomic>
#include <iostream>
#include <random>
#include <thread>

#include "serve/models.h"
#include "serve/requests.h"
#include "serve/workers.h"

namespace zoo::serve {

namespace {

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void send_json(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

void send_error(httplib::Response& res, const ApiError& e) {
  if (e.status == 429) res.set_header("Retry-After", "1");
  send_json(res, e.status, e.body());
}

// Compares every byte whatever the first difference (no timing leak of the key's prefix).
bool same_key(const std::string& given, const std::string& key) {
  unsigned char diff = given.size() == key.size() ? 0 : 1;
  for (size_t i = 0; i < given.size(); ++i) diff |= static_cast<unsigned char>(given[i] ^ key[i % key.size()]);
  return diff == 0;
}

}  // namespace

struct Server::Impl {
  ServeOptions options;
  httplib::Server http;
  Metrics metrics;
  Models models;
  std::atomic<bool> ready{false}, draining{false};
  std::atomic<int64_t> answering{0};  // requests being answered (streams included)

  explicit Impl(ServeOptions o) : options(std::move(o)), models(options, metrics) {}

  // Runs `handler` for `route` with the checks every model route shares, and counts it.
  template <class Handler>
  void route(const std::string& route, httplib::Request const& req, httplib::Response& res, Handler handler) {
    const auto start = Clock::now();
    ++answering;
    ++metrics.in_flight;
    bool streaming = false;
    try {
      authorize(req);
      if (!ready) throw ApiError(503, "the models are loading; try again in a moment", "", "server_error", "loading");
      if (draining) throw ApiError(503, "the server is shutting down", "", "server_error", "shutting_down");
      streaming = handler(req, res);
    } catch (const ApiError& e) {
      send_error(res, e);
    } catch (const Error& e) {
      send_error(res, invalid(e.what()));
    } catch (const std::exception& e) {
      send_error(res, ApiError(500, std::string("internal error: ") + e.what()));
    }
    if (!streaming) finished(route, res.status, start);
  }

  void finished(const std::string& route, int status, Clock::time_point start) {
    metrics.request_done(route, status, seconds_since(start));
    --metrics.in_flight;
    --answering;
  }

  void authorize(const httplib::Request& req) const {
    if (options.api_key.empty()) return;
    const std::string header = req.get_header_value("Authorization");
    const std::string prefix = "Bearer ";
    const bool ok = header.compare(0, prefix.size(), prefix) == 0 && same_key(header.substr(prefix.size()), options.api_key);
    if (!ok)
      throw ApiError(401, "a valid API key is required: send the header 'Authorization: Bearer KEY'", "", "",
                     "invalid_api_key");
  }

  bool completions(const httplib::Request& req, httplib::Response& res);
  void stream(const std::shared_ptr<CompletionJob>& job, const CompletionRequest& r, httplib::Response& res,
              Clock::time_point start);
  bool gathered(const std::string& task, const httplib::Request& req, httplib::Response& res);
  void set_routes();
};

// ---- /v1/completions ----------------------------------------------------------------------------

namespace {

json completion_chunk(const std::string& id, const std::string& model, int64_t created, size_t index,
                      const std::string& text, const json& finish_reason) {
  return {{"id", id},
          {"object", "text_completion"},
          {"created", created},
          {"model", model},
          {"choices",
           json::array({{{"index", index}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}})}};
}

json usage_of(const CompletionJob& job) {
  int64_t prompt = 0, completion = 0;
  for (size_t i = 0; i < job.results.size(); ++i) {
    if (!job.results[i]) continue;
    completion += static_cast<int64_t>(job.results[i]->tokens.size());
    prompt += job.results[i]->prompt_tokens;
  }
  return {{"prompt_tokens", prompt}, {"completion_tokens", completion}, {"total_tokens", prompt + completion}};
}

json warnings_of(const CompletionRequest& r, const CompletionJob& job) {
  json w = r.warnings;
  for (const auto& g : job.results)
    if (g)
      for (const auto& x : g->warnings) w.push_back(x);
  return w;
}

std::string completion_id() {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char buf[40];
  std::snprintf(buf, sizeof buf, "cmpl-%016llx%08llx", static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(++counter));
  return buf;
}

}  // namespace

bool Server::Impl::completions(const httplib::Request& req, httplib::Response& res) {
  const auto start = Clock::now();
  const json body = parse_body(req.body);
  ServedModel& model = models.find(requested_model(body), "completions");
  const CompletionRequest r = parse_completion(body, model.generator->context_size());
  auto job = std::make_shared<CompletionJob>();
  job->model = model.name;
  std::random_device random;
  for (const auto& prompt : r.prompts)
    for (int64_t j = 0; j < r.n; ++j) {
      GenerationRequest row;
      row.prompt = prompt;
      row.options = r.options;
      row.options.seed = r.seeded ? r.options.seed + j : static_cast<int64_t>(random() >> 1);
      row.truncate_prompt = r.truncate_prompt;
      job->rows.push_back(std::move(row));
    }
  job->bind(job, metrics);
  model.completions->submit(job);
  if (r.stream) {
    stream(job, r, res, start);
    return true;
  }
  std::unique_lock<std::mutex> lock(job->mutex);
  job->changed.wait(lock, [&] { return job->remaining == 0 || job->error; });
  if (job->error) throw *job->error;
  json choices = json::array();
  for (size_t i = 0; i < job->results.size(); ++i)
    choices.push_back({{"index", i},
                       {"text", job->results[i]->text},
                       {"logprobs", nullptr},
                       {"finish_reason", job->results[i]->finish_reason}});
  json out = {{"id", completion_id()},   {"object", "text_completion"}, {"created", std::time(nullptr)},
              {"model", model.name},     {"choices", choices},          {"usage", usage_of(*job)}};
  if (const json w = warnings_of(r, *job); !w.empty()) out["warnings"] = w;
  send_json(res, 200, out);
  return false;
}

// Server-sent events: a chunk per piece of text as the rows produce it, a last chunk per row
// with its finish_reason, the usage when asked, then [DONE]. A client that leaves is noticed at
// the next write, and its rows leave the batch at their next step.
void Server::Impl::stream(const std::shared_ptr<CompletionJob>& job, const CompletionRequest& r,
                          httplib::Response& res, Clock::time_point start) {
  const std::string id = completion_id();
  const int64_t created = std::time(nullptr);
  auto ended = std::make_shared<std::vector<bool>>(job->rows.size(), false);
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [this, job, r, id, created, ended](size_t, httplib::DataSink& sink) {
        auto send = [&](const json& j) {
          const std::string line = "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
          return sink.write(line.data(), line.size());
        };
        std::unique_lock<std::mutex> lock(job->mutex);
        job->changed.wait(lock, [&] { return !job->pieces.empty() || job->remaining == 0 || job->error; });
        std::vector<json> out;
        while (!job->pieces.empty()) {
          auto [row, text] = std::move(job->pieces.front());
          job->pieces.pop_front();
          out.push_back(completion_chunk(id, job->model, created, row, text, nullptr));
        }
        for (size_t i = 0; i < job->results.size(); ++i)
          if (job->results[i] && !(*ended)[i]) {
            (*ended)[i] = true;
            json last = completion_chunk(id, job->model, created, i, "", job->results[i]->finish_reason);
            if (job->remaining == 0) {
              last["usage"] = usage_of(*job);
              if (const json w = warnings_of(r, *job); !w.empty()) last["warnings"] = w;
            }
            out.push_back(last);
          }
        const bool done = job->remaining == 0 || job->error.has_value();
        const std::optional<ApiError> error = job->error;
        const json usage = done && r.include_usage ? usage_of(*job) : json();
        lock.unlock();
        for (const auto& chunk : out)
          if (!send(chunk)) return job->cancel(), false;
        if (!done) return true;
        if (error) send(error->body());
        if (r.include_usage && !error)
          send({{"id", id}, {"object", "text_completion"}, {"created", created}, {"model", job->model},
                {"choices", json::array()}, {"usage", usage}});
        const std::string end = "data: [DONE]\n\n";
        sink.write(end.data(), end.size());
        sink.done();
        return true;
      },
      [this, job, start](bool) {
        job->cancel();  // a client that left: its rows stop at their next step
        finished("/v1/completions", 200, start);
      });
}

// ---- /v1/translate, /v1/classify, /v1/embeddings -------------------------------------------------

bool Server::Impl::gathered(const std::string& task, const httplib::Request& req, httplib::Response& res) {
  const json body = parse_body(req.body);
  ServedModel& model = models.find(requested_model(body), task);
  auto job = std::make_shared<BatchJob>();
  json out = {{"object", "list"}, {"model", model.name}};
  if (task == "translate") {
    auto r = std::make_shared<TranslateRequest>(parse_translate(body));
    job->inputs = r->input.size();
    job->key = json({r->options.beam_size, r->options.max_length, r->options.length_penalty,
                     r->options.return_attention, r->options.truncate})
                   .dump();
    job->request = r;
  } else if (task == "classify") {
    auto r = std::make_shared<ClassifyRequest>(parse_classify(body));
    const bool images = !r->images.empty();
    if (images != (model.classifier->kind() == "image"))
      throw invalid(model.name + " classifies " + (images ? "texts: give them as input" : "images: give them as images"),
                    images ? "images" : "input");
    job->inputs = images ? r->images.size() : r->texts.size();
    job->key = std::to_string(r->top_k);
    job->request = r;
  } else {
    auto r = std::make_shared<EmbeddingsRequest>(parse_embeddings(body));
    job->inputs = r->input.size();
    job->key = r->pooling == Pooling::Cls ? "cls" : "mean";
    int64_t tokens = 0;
    for (const auto& text : r->input) tokens += model.encoder->count_tokens(text);
    out["usage"] = {{"prompt_tokens", tokens}, {"total_tokens", tokens}};
    job->request = r;
  }
  (task == "embeddings" ? model.embeddings : model.batches)->submit(job);
  std::unique_lock<std::mutex> lock(job->mutex);
  job->changed.wait(lock, [&] { return job->done; });
  if (job->error) throw *job->error;
  out["data"] = std::move(job->result);
  send_json(res, 200, out);
  return false;
}

// ---- Routes and lifetime ------------------------------------------------------------------------

void Server::Impl::set_routes() {
  http.Get("/", [](const httplib::Request&, httplib::Response& res) { res.set_content(kPageHtml, "text/html"); });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    const char* status = draining ? "draining" : ready ? "ok" : "loading";
    send_json(res, ready && !draining ? 200 : 503, {{"status", status}});
  });
  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    try {
      authorize(req);
      res.set_content(metrics.render(), "text/plain; version=0.0.4");
    } catch (const ApiError& e) {
      send_error(res, e);
    }
  });
  http.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    route("/v1/models", req, res, [&](const httplib::Request&, httplib::Response& r) {
      send_json(r, 200, {{"object", "list"}, {"data", models.cards()}});
      return false;
    });
  });
  http.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    route("/v1/completions", req, res, [&](const auto& q, auto& r) { return completions(q, r); });
  });
  for (const std::string task : {"translate", "classify", "embeddings"})
    http.Post("/v1/" + task, [this, task](const httplib::Request& req, httplib::Response& res) {
      route("/v1/" + task, req, res, [&](const auto& q, auto& r) { return gathered(task, q, r); });
    });
  // Errors httplib answers itself (no such route, a body over the cap) in OpenAI's shape.
  http.set_error_handler([this](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 413)
      send_error(res, ApiError(413, "the request body is over " + std::to_string(options.max_body_bytes) +
                                        " bytes (zoo serve --max-body-mib)", "", "", "request_too_large"));
    else if (res.status == 404)
      send_error(res, ApiError(404, "no route " + req.method + " " + req.path + " (see GET /v1/models and docs/serve.md)",
                               "", "", "not_found"));
    else
      send_error(res, ApiError(res.status, "the request could not be read (" + std::to_string(res.status) + ")"));
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr) {
    send_error(res, ApiError(500, "internal error"));
  });
}

Server::Server(ServeOptions options) : impl_(std::make_unique<Impl>(std::move(options))) {}
Server::~Server() = default;

int Server::run() {
  Impl& s = *impl_;
  const ServeOptions& o = s.options;
  s.set_routes();
  s.http.set_payload_max_length(static_cast<size_t>(o.max_body_bytes));
  s.http.set_tcp_nodelay(true);  // else each event of a stream waits for the previous one's ACK (~40 ms)
  // Every waiting or streaming request holds a thread: enough for the queues to be the limit.
  const size_t threads = static_cast<size_t>(o.max_queue + o.max_batch_size) * s.models.size() + 16;
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  const int port = o.port == 0 ? s.http.bind_to_any_port(o.host) : (s.http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0)
    throw Error("zoo serve: cannot listen on " + o.host + ":" + std::to_string(o.port) +
                " (in use, or not an address of this machine); give another --port or --host");
  std::thread listener([&s] { s.http.listen_after_bind(); });
  std::cerr << "zoo serve: loading " << o.checkpoints.size() << " model(s) (GET /health answers 503 until they are)"
            << std::endl;
  try {
    s.models.load();
  } catch (...) {
    s.http.stop();
    listener.join();
    throw;
  }
  s.ready = true;
  std::cerr << "zoo serve: listening on http://" << (o.host.find(':') != std::string::npos ? "[" + o.host + "]" : o.host)
            << ":" << port << std::endl;
  listener.join();  // until shutdown() stops it
  s.models.stop();
  std::cerr << "zoo serve: stopped" << std::endl;
  return 0;
}

void Server::shutdown() {
  Impl& s = *impl_;
  if (s.draining.exchange(true)) return;
  std::cerr << "zoo serve: draining (up to " << s.options.drain_timeout << " s for the requests in flight)" << std::endl;
  const auto deadline = Clock::now() + std::chrono::duration<double>(s.options.drain_timeout);
  while (s.answering > 0 && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  if (s.answering > 0) std::cerr << "zoo serve: " << s.answering << " request(s) still open at the drain timeout" << std::endl;
  s.models.stop();  // what is left fails (503), so that no handler waits on it
  s.http.stop();
}

}  // namespace zoo::serve
