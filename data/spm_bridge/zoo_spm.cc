// zoo-spm: the SentencePiece helper process (protocol.h).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "data/spm_bridge/protocol.h"

namespace {

namespace p = zoo::data::spm_protocol;

bool read_all(void* data, size_t n) {
  auto* out = static_cast<char*>(data);
  while (n > 0) {
    const ssize_t got = ::read(0, out, n);
    if (got <= 0) return false;
    out += got, n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_all(const void* data, size_t n) {
  const auto* in = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::write(1, in, n);
    if (put <= 0) return false;
    in += put, n -= static_cast<size_t>(put);
  }
  return true;
}

bool answer(char status, const std::string& payload) {
  const uint64_t n = payload.size();
  return write_all(&status, 1) && write_all(&n, sizeof n) && write_all(payload.data(), payload.size());
}

std::string ints(const std::vector<int>& v) {
  std::string s(v.size() * sizeof(int32_t), '\0');
  for (size_t i = 0; i < v.size(); ++i) {
    const int32_t x = v[i];
    std::memcpy(&s[i * sizeof x], &x, sizeof x);
  }
  return s;
}

int serve() {
  sentencepiece::SentencePieceProcessor sp;
  bool loaded = false;
  while (true) {
    char op = 0;
    uint64_t n = 0;
    if (!read_all(&op, 1) || !read_all(&n, sizeof n)) return 0;  // zoo closed the connection
    std::string payload(n, '\0');
    if (!read_all(payload.data(), n)) return 0;
    if (op != p::kLoad && !loaded) {
      if (!answer(p::kError, "no model loaded")) return 1;
      continue;
    }
    sentencepiece::util::Status status;
    std::string out;
    if (op == p::kLoad) {
      status = sp.LoadFromSerializedProto(payload);
      loaded = status.ok();
      if (loaded) out = ints({sp.GetPieceSize(), sp.eos_id()});
    } else if (op == p::kEncode) {
      std::vector<int> ids;
      status = sp.Encode(payload, &ids);
      out = ints(ids);
    } else if (op == p::kDecode) {
      std::vector<int> ids(payload.size() / sizeof(int32_t));
      for (size_t i = 0; i < ids.size(); ++i) {
        int32_t x;
        std::memcpy(&x, &payload[i * sizeof x], sizeof x);
        ids[i] = x;
      }
      status = sp.Decode(ids, &out);
    } else if (op == p::kPieces) {
      for (int i = 0; i < sp.GetPieceSize(); ++i) {
        out += sp.IdToPiece(i);
        out += '\0';
      }
    } else {
      status = sentencepiece::util::Status(sentencepiece::util::StatusCode::kInvalidArgument, "unknown request");
    }
    if (!(status.ok() ? answer(p::kOk, out) : answer(p::kError, status.ToString()))) return 1;
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "serve" && argc == 2) return serve();
  if (mode == "train") {
    std::unordered_map<std::string, std::string> kwargs;  // key=value per argument: paths may hold spaces
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      const auto eq = a.find('=');
      if (eq == std::string::npos) {
        std::fprintf(stderr, "zoo-spm train: '%s' is not key=value\n", a.c_str());
        return 2;
      }
      kwargs[a.substr(0, eq)] = a.substr(eq + 1);
    }
    const auto status = sentencepiece::SentencePieceTrainer::Train(kwargs);
    if (status.ok()) return 0;
    std::fprintf(stderr, "%s\n", status.ToString().c_str());
    return 1;
  }
  std::fprintf(stderr, "usage: zoo-spm serve | zoo-spm train input=FILE model_prefix=P ... (zoo's SentencePiece helper)\n");
  return 2;
}
