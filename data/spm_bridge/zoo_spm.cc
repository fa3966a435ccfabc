// zoo-spm: the SentencePiece helper process (protocol.h).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
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

sentencepiece::util::Status invalid(const char* why) {
  return sentencepiece::util::Status(sentencepiece::util::StatusCode::kInvalidArgument, why);
}

// Copies n bytes of `payload` from `at` on into `out`; false past its end.
bool take(const std::string& payload, size_t& at, void* out, size_t n) {
  if (payload.size() - at < n) return false;
  std::memcpy(out, payload.data() + at, n);
  at += n;
  return true;
}

// 'S'. SentencePiece draws from a generator of each thread, seeded with SetRandomGeneratorSeed's
// value at the thread's first draw: sampling on a fresh thread makes a request's draws depend on
// its seed alone, not on the requests before it (so a batch is the same however the loader's
// requests interleave, and after a resume).
sentencepiece::util::Status sample(const sentencepiece::SentencePieceProcessor& sp, const std::string& payload,
                                   std::string* out) {
  size_t at = 0;
  int32_t nbest = 0;
  float alpha = 0;
  uint32_t seed = 0;
  if (!take(payload, at, &nbest, sizeof nbest) || !take(payload, at, &alpha, sizeof alpha) ||
      !take(payload, at, &seed, sizeof seed))
    return invalid("malformed sample request");
  if (seed == UINT32_MAX) return invalid("sample seed 2^32-1 is reserved (SentencePiece's 'from the device')");
  std::vector<std::string> texts;
  for (int32_t n = 0; at < payload.size(); at += static_cast<size_t>(n)) {
    if (!take(payload, at, &n, sizeof n) || n < 0 || payload.size() - at < static_cast<size_t>(n))
      return invalid("malformed sample request");
    texts.push_back(payload.substr(at, static_cast<size_t>(n)));
  }
  sentencepiece::SetRandomGeneratorSeed(seed);
  sentencepiece::util::Status status;
  std::thread([&] {
    std::vector<int> ids;
    for (const auto& text : texts) {
      status = sp.SampleEncode(text, nbest, alpha, &ids);
      if (!status.ok()) return;
      *out += ints({static_cast<int>(ids.size())}) + ints(ids);
    }
  }).join();
  return status;
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
    } else if (op == p::kSampleable) {
      std::vector<int> ids;
      for (int i = 0; i < sp.GetPieceSize(); ++i)
        if (!sp.IsControl(i) && !sp.IsUnknown(i) && !sp.IsUnused(i) && !sp.IsByte(i)) ids.push_back(i);
      out = ints(ids);
    } else if (op == p::kSample) {
      status = sample(sp, payload, &out);
    } else {
      status = invalid("unknown request");
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
