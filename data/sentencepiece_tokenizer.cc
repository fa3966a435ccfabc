#include "data/sentencepiece_tokenizer.h"
#include "core/output_file.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "data/spm_bridge/protocol.h"
#include "data/text.h"

extern char** environ;

namespace fs = std::filesystem;

namespace zoo::data {

namespace p = spm_protocol;

namespace {

std::string& registered_helper() {
  static std::string path;
  return path;
}

// zoo-spm: $ZOO_SPM, the path a program built against the installed package registered
// (<zoo/zoo.h>: ZOO_SPM_HELPER), or beside the program: in its folder (build/zoo), one folder up
// (build/tests/zoo_tests) or in ../libexec/zoo (an installed bin/zoo).
std::string helper_path() {
  std::vector<std::string> paths;
  if (const char* env = std::getenv("ZOO_SPM")) paths.emplace_back(env);
  if (!registered_helper().empty()) paths.push_back(registered_helper());
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (const auto& dir : {exe.parent_path(), exe.parent_path().parent_path(),
                            exe.parent_path().parent_path() / "libexec" / "zoo"})
      paths.push_back((dir / "zoo-spm").string());
  std::string tried;
  for (const auto& path : paths) {
    if (::access(path.c_str(), X_OK) == 0) return path;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  throw Error(cat("SentencePiece: zoo's helper program zoo-spm is missing (looked for ", tried,
                  "); it is built beside the zoo binary and installed in PREFIX/libexec/zoo: rebuild or reinstall "
                  "zoo, or set ZOO_SPM to its path"));
}

// Runs argv with stdin/stdout on `fd` (or left alone when fd < 0) and stderr into
// `stderr_file` (when given); returns the child's pid.
pid_t spawn(const std::vector<std::string>& args, int fd, const std::string& stderr_file) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, fd, 0);
    posix_spawn_file_actions_adddup2(&actions, fd, 1);
  }
  if (!stderr_file.empty())
    posix_spawn_file_actions_addopen(&actions, 2, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) throw Error(cat("SentencePiece: cannot start ", args[0], " (", std::strerror(rc), ")"));
  return pid;
}

std::string int32_bytes(const std::vector<int64_t>& ids) {
  std::string s(ids.size() * sizeof(int32_t), '\0');
  for (size_t i = 0; i < ids.size(); ++i) {
    const auto x = static_cast<int32_t>(ids[i]);
    std::memcpy(&s[i * sizeof x], &x, sizeof x);
  }
  return s;
}

std::vector<int64_t> int32_values(const std::string& s) {
  std::vector<int64_t> v(s.size() / sizeof(int32_t));
  for (size_t i = 0; i < v.size(); ++i) {
    int32_t x;
    std::memcpy(&x, &s[i * sizeof x], sizeof x);
    v[i] = x;
  }
  return v;
}

}  // namespace

void set_spm_helper(const std::string& path) { registered_helper() = path; }

// One zoo-spm serve process per loaded model, over a socket pair (a helper that dies makes
// the next request an error, not a SIGPIPE). Requests are serialised: data loaders may
// encode from several threads.
class SentencePieceTokenizer::Helper {
 public:
  Helper() {
    int fds[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) != 0)
      throw Error(cat("SentencePiece: socketpair failed (", std::strerror(errno), ")"));
    // The child's end must survive exec: dup2 in the child clears FD_CLOEXEC on 0 and 1.
    try {
      pid_ = spawn({helper_path(), "serve"}, fds[1], "");
    } catch (...) {
      ::close(fds[0]), ::close(fds[1]);
      throw;
    }
    ::close(fds[1]);
    fd_ = fds[0];
  }
  ~Helper() {
    ::close(fd_);  // end of input: zoo-spm exits
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  Helper(const Helper&) = delete;
  Helper& operator=(const Helper&) = delete;

  // Sends one request and returns the answer's payload; an error answer throws.
  std::string request(char op, const std::string& payload) {
    std::lock_guard<std::mutex> lock(mu_);
    const uint64_t n = payload.size();
    if (!send_all(&op, 1) || !send_all(&n, sizeof n) || !send_all(payload.data(), payload.size())) broken();
    char status = 0;
    uint64_t size = 0;
    if (!recv_all(&status, 1) || !recv_all(&size, sizeof size)) broken();
    std::string out(size, '\0');
    if (!recv_all(out.data(), size)) broken();
    if (status != p::kOk) throw Error(cat("SentencePiece: ", out));
    return out;
  }

 private:
  bool send_all(const void* data, size_t n) {
    const auto* in = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t put = ::send(fd_, in, n, MSG_NOSIGNAL);
      if (put < 0 && errno == EINTR) continue;
      if (put <= 0) return false;
      in += put, n -= static_cast<size_t>(put);
    }
    return true;
  }
  bool recv_all(void* data, size_t n) {
    auto* out = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t got = ::recv(fd_, out, n, 0);
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0) return false;
      out += got, n -= static_cast<size_t>(got);
    }
    return true;
  }
  [[noreturn]] void broken() {
    throw Error("SentencePiece: the helper process zoo-spm stopped unexpectedly (out of memory, or killed)");
  }

  int fd_ = -1;
  pid_t pid_ = 0;
  std::mutex mu_;
};

SentencePieceTokenizer::SentencePieceTokenizer(const std::string& model_proto, const std::string& source)
    : proto_(model_proto), helper_(std::make_shared<Helper>()) {
  std::string info;
  try {
    info = helper_->request(p::kLoad, proto_);
  } catch (const Error& e) {
    throw Error(cat(source, ": not a SentencePiece model (", e.what(), ")"));
  }
  const auto v = int32_values(info);
  vocab_size_ = v.at(0);
  eos_id_ = v.at(1);
}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

const std::vector<std::string>& SentencePieceTokenizer::pieces() const {
  std::lock_guard<std::mutex> lock(pieces_mu_);
  if (pieces_.empty()) {
    const std::string all = helper_->request(p::kPieces, "");
    for (size_t begin = 0; begin < all.size();) {
      const size_t end = all.find('\0', begin);
      pieces_.push_back(all.substr(begin, end - begin));
      begin = end + 1;
    }
  }
  return pieces_;
}

std::vector<std::string> SentencePieceTokenizer::encode_pieces(std::string_view text) const {
  const auto& table = pieces();
  std::vector<std::string> out;
  for (int64_t id : encode(text)) out.push_back(table.at(static_cast<size_t>(id)));
  return out;
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": missing (a SentencePiece model)"));
  std::stringstream ss;
  ss << in.rdbuf();
  return std::make_unique<SentencePieceTokenizer>(ss.str(), path);
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::train(const std::vector<std::string>& files,
                                                                      const std::string& model_type,
                                                                      int64_t vocab_size) {
  std::string inputs;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) throw Error(cat(f, ": cannot open"));
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    if (text.empty()) throw Error(cat(f, ": empty file; give text files with content"));
    const size_t bad = find_invalid_utf8(text);
    if (bad != std::string::npos) throw Error(cat(f, ": invalid UTF-8 at byte ", bad, "; convert the file to UTF-8"));
    if (f.find(',') != std::string::npos)
      throw Error(cat(f, ": SentencePiece cannot read a file whose path holds a comma; rename it"));
    inputs += (inputs.empty() ? "" : ",") + f;
  }
  const fs::path tmp = fs::temp_directory_path() / cat("zoo-spm-", ::getpid());
  fs::create_directories(tmp);
  const std::string prefix = (tmp / "tokenizer").string(), log = (tmp / "log.txt").string();
  const pid_t pid = spawn({helper_path(), "train", "input=" + inputs, "model_prefix=" + prefix,
                           "model_type=" + model_type, cat("vocab_size=", vocab_size), "character_coverage=1.0",
                           "minloglevel=2", "hard_vocab_limit=true"},
                          -1, log);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  std::unique_ptr<SentencePieceTokenizer> out;
  std::string why;
  if (ok) {
    out = load(prefix + ".model");
  } else {
    std::ifstream in(log);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) why = line;  // the last line: the error
  }
  std::error_code ec;
  fs::remove_all(tmp, ec);
  if (!ok)
    throw Error(cat("SentencePiece training (", model_type, ", vocab_size ", vocab_size, ") failed: ",
                    why.empty() ? std::string("zoo-spm stopped") : why,
                    " (a vocab_size too large for the text: use a smaller one)"));
  return out;
}

std::vector<int64_t> SentencePieceTokenizer::encode(std::string_view text) const {
  const size_t bad = find_invalid_utf8(text);
  if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
  return int32_values(helper_->request(p::kEncode, std::string(text)));
}

std::vector<int64_t> SentencePieceTokenizer::sample(std::string_view text, int nbest_size, float alpha,
                                                  uint32_t seed) const {
  return sample(std::vector<std::string>{std::string(text)}, nbest_size, alpha, seed).at(0);
}

std::vector<std::vector<int64_t>> SentencePieceTokenizer::sample(const std::vector<std::string>& texts, int nbest_size,
                                                                 float alpha, uint32_t seed) const {
  if (seed == UINT32_MAX) --seed;  // SentencePiece reserves it: "seed from the device"
  std::string payload(3 * sizeof(int32_t), '\0');
  std::memcpy(&payload[0], &nbest_size, sizeof(int32_t));
  std::memcpy(&payload[4], &alpha, sizeof(float));
  std::memcpy(&payload[8], &seed, sizeof(uint32_t));
  for (const auto& text : texts) {
    const size_t bad = find_invalid_utf8(text);
    if (bad != std::string::npos) throw Error(cat("text: invalid UTF-8 at byte ", bad));
    payload += int32_bytes({static_cast<int64_t>(text.size())}) + text;
  }
  const std::vector<int64_t> all = int32_values(helper_->request(p::kSample, payload));
  std::vector<std::vector<int64_t>> out;
  out.reserve(texts.size());
  for (size_t at = 0; at < all.size();) {  // per text: its id count, its ids
    const auto n = static_cast<size_t>(all[at]);
    if (all[at] < 0 || all.size() - at - 1 < n) break;
    out.emplace_back(all.begin() + static_cast<std::ptrdiff_t>(at + 1), all.begin() + static_cast<std::ptrdiff_t>(at + 1 + n));
    at += 1 + n;
  }
  if (out.size() != texts.size()) throw Error("SentencePiece: the helper's answer to a sample request is malformed");
  return out;
}

std::vector<int64_t> SentencePieceTokenizer::sampleable_ids() const {
  return int32_values(helper_->request(p::kSampleable, ""));
}

std::string SentencePieceTokenizer::decode(const std::vector<int64_t>& ids) const {
  for (int64_t id : ids)
    if (id < 0 || id >= vocab_size())
      throw Error(cat("id ", id, " is outside the SentencePiece vocabulary of ", vocab_size()));
  return helper_->request(p::kDecode, int32_bytes(ids));
}

void SentencePieceTokenizer::save(const std::string& dir) const {
  write_file_checked(dir + "/tokenizer.model", proto_);
  write_file_checked(dir + "/tokenizer_config.json", nlohmann::json{{"zoo_kind", "sentencepiece"}}.dump(2) + "\n");
}

}  // namespace zoo::data
