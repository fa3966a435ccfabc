// zoo-spm: the SentencePiece helper process (protocol.h).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
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

namespace {

// The lines of the training files, one sentence each. The trainer reads them through this
// iterator rather than from `input`, and writes no files itself, so that the model it returns
// records neither path (temporary names that hold process ids): the same text then trains the
// same bytes, and so the same tokenizer fingerprint (an ensemble's members must share it).
class FileLines : public sentencepiece::SentenceIterator {
 public:
  explicit FileLines(const std::string& comma_separated) {
    for (size_t at = 0; at <= comma_separated.size();) {
      const size_t end = std::min(comma_separated.find(',', at), comma_separated.size());
      files_.push_back(comma_separated.substr(at, end - at));
      at = end + 1;
    }
    Next();
  }
  bool done() const override { return done_; }
  void Next() override {
    while (!done_) {
      if (in_.is_open() && std::getline(in_, value_)) return;
      if (in_.is_open() && in_.bad()) return fail("cannot read " + files_[next_ - 1]);
      in_.close();
      if (next_ == files_.size()) {
        done_ = true;
        return;
      }
      in_.clear();
      in_.open(files_[next_++], std::ios::binary);
      if (!in_) return fail("cannot open " + files_[next_ - 1]);
    }
  }
  const std::string& value() const override { return value_; }
  sentencepiece::util::Status status() const override { return status_; }

 private:
  void fail(const std::string& why) {
    status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound, why);
    done_ = true;
  }
  std::vector<std::string> files_;
  size_t next_ = 0;
  std::ifstream in_;
  std::string value_;
  bool done_ = false;
  sentencepiece::util::Status status_;
};

// zoo-spm train input=FILE[,FILE...] model_prefix=P KEY=VALUE...: writes P.model.
int train(std::unordered_map<std::string, std::string> kwargs) {
  const std::string input = kwargs["input"], prefix = kwargs["model_prefix"];
  if (input.empty() || prefix.empty()) {
    std::fprintf(stderr, "zoo-spm train: input=FILE and model_prefix=P are required\n");
    return 2;
  }
  kwargs.erase("input");
  kwargs.erase("model_prefix");  // the trainer returns the model; it is written below
  FileLines lines(input);
  std::string model;
  auto status = sentencepiece::SentencePieceTrainer::Train(kwargs, &lines, &model);
  if (status.ok() && !lines.status().ok()) status = lines.status();
  if (status.ok()) {
    std::ofstream out(prefix + ".model", std::ios::binary);
    out.write(model.data(), static_cast<std::streamsize>(model.size()));
    if (out.flush()) return 0;
    status = sentencepiece::util::Status(sentencepiece::util::StatusCode::kInternal, "cannot write " + prefix + ".model");
  }
  std::fprintf(stderr, "%s\n", status.ToString().c_str());
  return 1;
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
    return train(kwargs);
  }
  std::fprintf(stderr, "usage: zoo-spm serve | zoo-spm train input=FILE model_prefix=P ... (zoo's SentencePiece helper)\n");
  return 2;
}
