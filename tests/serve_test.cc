// zoo serve (issue 63): the real program on checkpoints the suite trains, over HTTP. Its answers
// against the library's (greedy completions while other requests decode beside them, streamed
// and not; translations; labels; embeddings), OpenAI's error shapes for bad requests, the API
// key, the queue limit, a client that leaves mid-stream, and the drain on SIGTERM.
#include <gtest/gtest.h>

#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <future>
#include <thread>

#include "fixtures.h"
#include "predictor_fixtures.h"
#include "review_fixtures.h"
#include "test_util.h"
#include "translation_fixtures.h"
#include "zoo/zoo.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using nlohmann::json;

namespace zoo {
namespace {

// `zoo serve ARGS` in a child process, on a free port; stopped (SIGTERM, then SIGKILL) at the end.
class ServeProcess {
 public:
  ServeProcess(const std::string& args, const std::string& log) : log_(log) {
    pid_ = fork();
    if (pid_ == 0) {
      const std::string command = "exec " + std::string(ZOO_BINARY) + " serve --port 0 --device cpu " + args +
                                  " 2> " + log;
      execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    for (int i = 0; i < 600 && port_ == 0; ++i) {
      const std::string text = fs::exists(log) ? test::read_file(log) : "";
      const auto at = text.find("listening on http://127.0.0.1:");
      if (at != std::string::npos) port_ = std::stoi(text.substr(at + 30));
      else std::this_thread::sleep_for(std::chrono::milliseconds(100));
      int status = 0;
      if (port_ == 0 && waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        break;
      }
    }
  }
  ~ServeProcess() {
    if (pid_ <= 0) return;
    kill(pid_, SIGTERM);
    for (int i = 0; i < 100; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  int port() const { return port_; }
  pid_t pid() const { return pid_; }
  std::string log() const { return test::read_file(log_); }
  // The exit status after SIGTERM (-1 if it does not end within `seconds`).
  int terminate(double seconds) {
    kill(pid_, SIGTERM);
    for (int i = 0; i < seconds * 20; ++i) {
      int status = 0;
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return -1;
  }
  httplib::Client client() const {
    httplib::Client c("127.0.0.1", port_);
    c.set_read_timeout(120, 0);
    return c;
  }

 private:
  std::string log_;
  pid_t pid_ = -1;
  int port_ = 0;
};

// The text of a server-sent event stream: its data lines' JSON, [DONE] last.
std::vector<std::string> events(const std::string& body) {
  std::vector<std::string> out;
  for (const auto& line : test::lines_of(body))
    if (line.rfind("data: ", 0) == 0) out.push_back(line.substr(6));
  return out;
}

class Serve : public test::TinyPredictorSuite<Serve> {
 public:
  static std::vector<std::string> families() { return {"gpt", "mt", "bert"}; }
  // 1,024 positions: generations long enough to leave, queue and drain.
  static std::map<std::string, std::string> extra() {
    return {{"gpt", "--set model.n_positions=1024 --set data.block_size=32"}};
  }
 protected:
  static std::string all() { return "--checkpoint gpt=" + gpt() + " --checkpoint mt=" + mt() + " --checkpoint cls=" + bert(); }
};

json post(httplib::Client& c, const std::string& path, const json& body, int expect_status = 200) {
  const auto r = c.Post(path.c_str(), body.dump(), "application/json");
  EXPECT_TRUE(r) << path;
  if (!r) return json();
  EXPECT_EQ(r->status, expect_status) << path << " " << body.dump().substr(0, 200) << " -> " << r->body;
  return json::parse(r->body);
}

TEST_F(Serve, AnswersEveryTaskAsTheLibraryDoes) {
  ServeProcess server(all(), *dir_ / "all.log");
  ASSERT_GT(server.port(), 0) << server.log();
  auto c = server.client();
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  const json models = json::parse(c.Get("/v1/models")->body);
  ASSERT_EQ(models.at("data").size(), 3u) << models;
  EXPECT_EQ(models["data"][0]["task"], "completions");
  EXPECT_EQ(models["data"][0]["context_length"], 1024);

  // Greedy completions while sampled ones decode beside them: each equals the library alone.
  const Generator g(gpt());
  GenerationOptions greedy;
  greedy.greedy = true;
  greedy.max_new_tokens = 40;
  const std::vector<std::string> prompts = {"the cat", "a dog ran in the", "we sing"};
  std::vector<std::future<json>> answers;
  for (int round = 0; round < 2; ++round)
    for (const auto& p : prompts) {
      answers.push_back(std::async(std::launch::async, [&, p] {
        auto mine = server.client();
        return post(mine, "/v1/completions", {{"model", "gpt"}, {"prompt", p}, {"max_tokens", 40}, {"temperature", 0}});
      }));
      answers.push_back(std::async(std::launch::async, [&, p] {
        auto mine = server.client();
        return post(mine, "/v1/completions", {{"model", "gpt"}, {"prompt", p}, {"max_tokens", 30}, {"seed", 3}});
      }));
    }
  for (size_t i = 0; i < answers.size(); i += 2) {
    const json a = answers[i].get();
    answers[i + 1].get();
    const auto alone = g.generate({prompts[(i / 2) % prompts.size()]}, greedy)[0];
    ASSERT_EQ(a["choices"].size(), 1u) << a;
    EXPECT_EQ(a["choices"][0]["text"], alone.text) << i;
    EXPECT_EQ(a["choices"][0]["finish_reason"], alone.finish_reason);
    EXPECT_EQ(a["usage"]["completion_tokens"], alone.tokens.size());
    EXPECT_EQ(a["usage"]["prompt_tokens"], g.count_tokens(prompts[(i / 2) % prompts.size()]));
    EXPECT_EQ(a["object"], "text_completion");
  }
  // Streamed: the pieces add up to the same text; a last chunk with the finish reason, then [DONE].
  const auto stream = c.Post("/v1/completions",
                             json({{"model", "gpt"}, {"prompt", "the cat"}, {"max_tokens", 40}, {"temperature", 0},
                                   {"stream", true}, {"stream_options", {{"include_usage", true}}}})
                                 .dump(),
                             "application/json");
  ASSERT_TRUE(stream);
  EXPECT_EQ(stream->get_header_value("Content-Type"), "text/event-stream");
  const auto chunks = events(stream->body);
  ASSERT_GE(chunks.size(), 3u) << stream->body;
  EXPECT_EQ(chunks.back(), "[DONE]");
  std::string text;
  json finish;
  for (size_t i = 0; i + 1 < chunks.size(); ++i) {
    const json chunk = json::parse(chunks[i]);
    if (chunk["choices"].empty()) {
      EXPECT_EQ(chunk["usage"]["completion_tokens"], g.generate({"the cat"}, greedy)[0].tokens.size());
      continue;
    }
    text += chunk["choices"][0]["text"].get<std::string>();
    if (!chunk["choices"][0]["finish_reason"].is_null()) finish = chunk["choices"][0]["finish_reason"];
  }
  EXPECT_EQ(text, g.generate({"the cat"}, greedy)[0].text);
  EXPECT_FALSE(finish.is_null());
  // A list of prompts times n: one choice each, in order.
  const json many = post(c, "/v1/completions", {{"model", "gpt"}, {"prompt", {"the cat", "we sing"}}, {"n", 2},
                                                 {"max_tokens", 5}, {"temperature", 0}});
  ASSERT_EQ(many["choices"].size(), 4u);
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(many["choices"][i]["index"], i);
  GenerationOptions five = greedy;
  five.max_new_tokens = 5;
  EXPECT_EQ(many["choices"][2]["text"], g.generate({"we sing"}, five)[0].text);

  // Translation, labels and embeddings: the library's answers.
  const Translator t(mt());
  TranslationOptions to;
  to.beam_size = 2;
  to.return_attention = true;
  const auto sentences = test::lines_of(test::pair_file_text());
  const std::string source = sentences[0].substr(sentences[0].find('\t') + 1);
  const json tr = post(c, "/v1/translate", {{"model", "mt"}, {"input", {source}}, {"beam_size", 2}, {"return_attention", true}});
  const auto expected = t.translate({source}, to)[0];
  EXPECT_EQ(tr["data"][0]["text"], expected.text) << tr;
  ASSERT_EQ(tr["data"][0]["attention"].size(), expected.attention.size());
  EXPECT_EQ(tr["data"][0]["attention"][0].size(), tr["data"][0]["source_tokens"].size());
  // Requests at once, gathered into groups that run side by side: each the library's answer.
  std::vector<std::string> chinese;  // the pair file's second column
  for (size_t i = 0; i < std::min<size_t>(8, sentences.size()); ++i) {
    const size_t tab = sentences[i].find('\t');
    chinese.push_back(sentences[i].substr(tab + 1, sentences[i].find('\t', tab + 1) - tab - 1));
  }
  std::vector<std::future<json>> translated;
  const size_t n = chinese.size();
  for (size_t i = 0; i < n; ++i)
    translated.push_back(std::async(std::launch::async, [&, i] {
      auto mine = server.client();
      return post(mine, "/v1/translate", {{"model", "mt"}, {"input", {chinese[i]}}, {"beam_size", 2}});
    }));
  for (size_t i = 0; i < n; ++i) {
    const auto one = t.translate({chinese[i]}, to)[0];
    const json got = translated[i].get();
    EXPECT_EQ(got["data"][0]["text"], one.text) << i << " " << got;
    EXPECT_NEAR(got["data"][0]["score"].get<double>(), one.score, 1e-4) << i;
  }
  const Classifier cls(bert());
  const auto labels = cls.classify_texts({"a good film"}, 2)[0];
  const json cl = post(c, "/v1/classify", {{"model", "cls"}, {"input", {"a good film"}}, {"top_k", 2}});
  ASSERT_EQ(cl["data"][0]["labels"].size(), 2u) << cl;
  EXPECT_EQ(cl["data"][0]["labels"][0]["label"], labels[0].name);
  EXPECT_NEAR(cl["data"][0]["labels"][0]["probability"].get<double>(), labels[0].probability, 1e-5);
  const Encoder enc(bert());
  const auto vectors = enc.embed({"a good film", "bad"});
  const json em = post(c, "/v1/embeddings", {{"model", "cls"}, {"input", {"a good film", "bad"}}});
  ASSERT_EQ(em["data"].size(), 2u) << em;
  ASSERT_EQ(em["data"][1]["embedding"].size(), static_cast<size_t>(vectors.size(1)));
  for (int64_t j = 0; j < vectors.size(1); ++j)
    EXPECT_NEAR(em["data"][1]["embedding"][j].get<double>(), vectors[1][j].item<double>(), 1e-5);
  EXPECT_EQ(em["usage"]["prompt_tokens"], enc.count_tokens("a good film") + enc.count_tokens("bad"));

  // The page and the metrics.
  const auto page = c.Get("/");
  ASSERT_TRUE(page);
  EXPECT_NE(page->body.find("<html"), std::string::npos);
  const std::string metrics = c.Get("/metrics")->body;
  EXPECT_NE(metrics.find("zoo_requests_total{route=\"/v1/completions\",status=\"200\"}"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("zoo_time_to_first_token_seconds_count{model=\"gpt\"}"), std::string::npos);
  EXPECT_NE(metrics.find("zoo_tokens_generated_total{model=\"gpt\"}"), std::string::npos);
  EXPECT_NE(metrics.find("zoo_batch_size_bucket{model=\"gpt\",le=\"16\"}"), std::string::npos);
}

TEST_F(Serve, BadRequestsGetOpenAIErrorsAndTheServerStaysUp) {
  ServeProcess server("--checkpoint gpt=" + gpt() + " --checkpoint cls=" + bert() + " --max-body-mib 1",
                      *dir_ / "bad.log");
  ASSERT_GT(server.port(), 0) << server.log();
  auto c = server.client();
  auto error_of = [&](const std::string& path, const std::string& body, int status) {
    const auto r = c.Post(path.c_str(), body, "application/json");
    EXPECT_TRUE(r);
    if (!r) return json();
    EXPECT_EQ(r->status, status) << body.substr(0, 100) << " -> " << r->body;
    const json j = json::parse(r->body);
    EXPECT_TRUE(j["error"].contains("message") && j["error"].contains("type") && j["error"].contains("param") &&
                j["error"].contains("code"))
        << r->body;
    return j["error"];
  };
  EXPECT_EQ(error_of("/v1/completions", "{not json", 400)["code"], "invalid_json");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"gpt","prompt":5})", 400)["param"], "prompt");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"gpt","prompt":"a","max_tokens":"x"})", 400)["param"], "max_tokens");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"gpt","prompt":"a","max_tokens":-1})", 400)["param"], "max_tokens");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"gpt","prompt":"a","temperature":-1})", 400)["param"], "temperature");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"nope","prompt":"a"})", 404)["code"], "model_not_found");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"cls","prompt":"a"})", 400)["param"], "model");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"gpt","prompt":"a","logprobs":3})", 400)["param"], "logprobs");
  EXPECT_EQ(error_of("/v1/completions", R"({"model":"gpt","prompt":"ab\u00ffq"})", 400)["type"],
            "invalid_request_error");  // a character the tokenizer has not learnt
  EXPECT_EQ(error_of("/v1/completions", "{\"model\":\"gpt\",\"prompt\":\"" + std::string(2 << 20, 'a') + "\"}", 413)["code"],
            "request_too_large");
  const std::string long_prompt(2000, 'a');
  EXPECT_EQ(error_of("/v1/completions",
                     json({{"model", "gpt"}, {"prompt", long_prompt}, {"truncate_prompt", false}}).dump(), 400)["param"],
            "prompt");
  const json cut = post(c, "/v1/completions", {{"model", "gpt"}, {"prompt", long_prompt}, {"max_tokens", 1000000000000}});
  ASSERT_EQ(cut["warnings"].size(), 2u) << cut;  // max_tokens capped, the prompt cut
  EXPECT_EQ(cut["usage"]["prompt_tokens"], 1024);
  EXPECT_EQ(error_of("/v1/classify", R"({"model":"cls","images":["@@@"]})", 400)["param"], "images[0]");
  EXPECT_EQ(error_of("/v1/classify", R"({"model":"cls","input":["   "]})", 400)["type"], "invalid_request_error");
  EXPECT_EQ(error_of("/v1/embeddings", R"({"model":"cls","input":[]})", 400)["param"], "input");
  EXPECT_EQ(c.Get("/nowhere")->status, 404);
  EXPECT_EQ(c.Get("/health")->status, 200);
  EXPECT_EQ(post(c, "/v1/completions", {{"model", "gpt"}, {"prompt", "the cat"}, {"max_tokens", 3}})["choices"].size(), 1u);
}

TEST_F(Serve, ApiKeyAndQueueLimit) {
  setenv("ZOO_API_KEY", "sk-zoo-test", 1);
  ServeProcess server("--checkpoint gpt=" + gpt() + " --max-batch-size 1 --max-queue 1", *dir_ / "key.log");
  unsetenv("ZOO_API_KEY");
  ASSERT_GT(server.port(), 0) << server.log();
  auto c = server.client();
  const std::string body = json({{"model", "gpt"}, {"prompt", "the cat"}, {"max_tokens", 3}}).dump();
  EXPECT_EQ(c.Post("/v1/completions", body, "application/json")->status, 401);
  EXPECT_EQ(c.Post("/v1/completions", {{"Authorization", "Bearer sk-zoo-tesT"}}, body, "application/json")->status, 401);
  EXPECT_EQ(c.Get("/metrics")->status, 401);
  EXPECT_EQ(c.Get("/health")->status, 200);  // health and the page need no key
  const httplib::Headers key = {{"Authorization", "Bearer sk-zoo-test"}};
  EXPECT_EQ(c.Post("/v1/completions", key, body, "application/json")->status, 200);

  // One row decodes, one waits: the others are refused at once with Retry-After, none hangs.
  const std::string slow = json({{"model", "gpt"}, {"prompt", "the cat"}, {"max_tokens", 300}}).dump();
  std::vector<std::future<std::pair<int, std::string>>> replies;
  const auto send = [&] {
    replies.push_back(std::async(std::launch::async, [&] {
      auto mine = server.client();
      const auto r = mine.Post("/v1/completions", key, slow, "application/json");
      return r ? std::pair{r->status, r->get_header_value("Retry-After")} : std::pair{-1, std::string()};
    }));
  };
  send();  // the first is decoding (out of the queue) before the others arrive, however busy the machine
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  for (std::string m; Clock::now() < deadline; std::this_thread::sleep_for(std::chrono::milliseconds(5))) {
    m = c.Get("/metrics", key)->body;
    if (m.find("zoo_requests_in_flight 1\n") != std::string::npos && m.find("zoo_requests_queued 0\n") != std::string::npos)
      break;
  }
  for (int i = 0; i < 7; ++i) send();
  int refused = 0, answered = 0;
  for (auto& r : replies) {
    const auto [status, retry] = r.get();
    if (status == 429) {
      ++refused;
      EXPECT_EQ(retry, "1");
    } else if (status == 200) {
      ++answered;
    } else {
      ADD_FAILURE() << "status " << status;
    }
  }
  EXPECT_GE(refused, 1);
  EXPECT_GE(answered, 2);

  EXPECT_EQ(c.Post("/v1/completions", key, body, "application/json")->status, 200);
}

// The decoding steps the server has run for `model` (its zoo_batch_size histogram's count: one
// observation a step).
int64_t decoding_steps(httplib::Client& c, const std::string& model) {
  const std::string key = "zoo_batch_size_count{model=\"" + model + "\"} ";
  const auto r = c.Get("/metrics");
  if (!r) return -1;
  const size_t at = r->body.find(key);
  return at == std::string::npos ? 0 : std::stoll(r->body.substr(at + key.size()));
}

// A stream whose client leaves after its first events: its rows leave the batch at once. Counted
// in decoding steps, not seconds (the tiny model writes a row's 1,000 tokens in a fraction of a
// second): its 16 rows decode one after another (one row a step), and would take 16 rows' steps.
TEST_F(Serve, ClientsThatLeaveStopTheirRows) {
  ServeProcess server("--checkpoint gpt=" + gpt() + " --max-batch-size 1", *dir_ / "leave.log");
  ASSERT_GT(server.port(), 0) << server.log();
  auto c = server.client();
  const json greedy = {{"model", "gpt"}, {"prompt", "the cat"}, {"max_tokens", 1000}, {"temperature", 0}};
  const int64_t before = decoding_steps(c, "gpt");
  httplib::Client leaver("127.0.0.1", server.port());
  int events_seen = 0;
  httplib::Request stream;
  stream.method = "POST";
  stream.path = "/v1/completions";
  stream.set_header("Content-Type", "application/json");
  json leaving = greedy;
  leaving["n"] = 16;
  leaving["stream"] = true;
  stream.body = leaving.dump();
  stream.content_receiver = [&](const char*, size_t, uint64_t, uint64_t) { return ++events_seen < 3; };
  leaver.send(stream);
  // Idle: no request in flight, and no step for 200 ms.
  int64_t steps = -1;
  for (int quiet = 0, i = 0; quiet < 10 && i < 1000; ++i, std::this_thread::sleep_for(std::chrono::milliseconds(20))) {
    const int64_t now = decoding_steps(c, "gpt");
    const bool in_flight = c.Get("/metrics")->body.find("zoo_requests_in_flight 0\n") == std::string::npos;
    quiet = now == steps && !in_flight ? quiet + 1 : 0;
    steps = now;
  }
  const int64_t left = steps - before;
  const json one = post(c, "/v1/completions", greedy);
  const int64_t row = one["usage"]["completion_tokens"];
  ASSERT_GE(row, 200) << "a row this short cannot show whether rows go on";
  EXPECT_GE(left, 1);
  EXPECT_LT(left, 8 * row) << "the rows went on after their client left: " << left << " steps, a row takes " << row;
}

TEST_F(Serve, SigtermDrainsRequestsInFlight) {
  ServeProcess server("--checkpoint gpt=" + gpt() + " --drain-timeout 60 --max-batch-size 64", *dir_ / "drain.log");
  ASSERT_GT(server.port(), 0) << server.log();
  auto reply = std::async(std::launch::async, [&] {
    auto mine = server.client();
    return mine.Post("/v1/completions",
                     json({{"model", "gpt"}, {"prompt", {"the cat", "we sing"}}, {"max_tokens", 1000}, {"n", 16}, {"seed", 1}}).dump(),
                     "application/json");
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  kill(server.pid(), SIGTERM);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto c = server.client();
  const auto health = c.Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 503);
  EXPECT_EQ(c.Post("/v1/completions", R"({"model":"gpt","prompt":"a"})", "application/json")->status, 503);
  const auto r = reply.get();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(json::parse(r->body)["usage"]["completion_tokens"], 32000) << r->body.substr(0, 300);
  EXPECT_EQ(server.terminate(30), 0) << server.log();
  EXPECT_NE(server.log().find("zoo serve: draining"), std::string::npos);
}

}  // namespace
}  // namespace zoo
