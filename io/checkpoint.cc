#include "io/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>

#include "core/error.h"
#include "core/output_file.h"

namespace fs = std::filesystem;

namespace zoo {

std::string checkpoint_dir_name(int64_t step) { return cat("checkpoint-", step); }

int64_t checkpoint_step(const std::string& dir) {
  const std::string name = fs::path(dir).filename().string(), prefix = "checkpoint-";
  if (name.rfind(prefix, 0) != 0) return -1;
  const std::string digits = name.substr(prefix.size());
  if (!is_index(digits) || digits.size() > 18) return -1;  // 18 digits fit an int64_t
  return std::stoll(digits);
}


std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& output_dir) {
  std::vector<std::pair<int64_t, std::string>> out;
  std::error_code ec;
  if (!fs::is_directory(output_dir, ec)) return out;
  for (const auto& entry : fs::directory_iterator(output_dir, ec)) {
    const int64_t step = checkpoint_step(entry.path().string());
    if (step < 0 || !entry.is_directory()) continue;
    if (!fs::exists(entry.path() / "trainer_state.json")) continue;  // not one of ours / incomplete
    out.emplace_back(step, entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string latest_checkpoint(const std::string& output_dir) {
  auto all = list_checkpoints(output_dir);
  return all.empty() ? "" : all.back().second;
}

std::string checked_checkpoint_dir(const std::string& given) {
  std::error_code ec;
  const std::string dir = model_dir(given);
  if (!fs::exists(dir, ec)) throw Error(cat(dir, ": no such checkpoint directory"));
  if (!fs::is_directory(dir, ec)) throw Error(cat(dir, ": not a directory; pass a checkpoint directory"));
  if (!fs::exists(fs::path(dir) / "config.json")) throw Error(cat(dir, ": not a checkpoint (no config.json)"));
  if (!has_weights(dir))
    throw Error(cat(dir, ": not a checkpoint (no model.safetensors, nor model.safetensors.index.json)"));
  return dir;
}

void rotate_checkpoints(const std::string& output_dir, int64_t keep, const std::string& protect) {
  if (keep <= 0) return;
  auto all = list_checkpoints(output_dir);  // oldest first
  std::error_code ec;
  const auto protected_path = protect.empty() ? fs::path() : fs::weakly_canonical(protect, ec);
  const int64_t n = static_cast<int64_t>(all.size());
  for (int64_t i = 0; i + keep < n; ++i) {  // everything but the newest `keep`...
    if (!protect.empty() && fs::weakly_canonical(all[i].second, ec) == protected_path) continue;  // ...and the best
    fs::remove_all(all[i].second, ec);
  }
}

namespace {
void fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

void save_optimizer(const torch::optim::Optimizer& optimizer, const std::string& path) {
  torch::serialize::OutputArchive archive;
  optimizer.save(archive);
  OutputFile out(path);
  // The archive's sink must take every byte (its writer cannot fail cleanly): OutputFile keeps
  // a failure and reports it at close().
  archive.save_to([&](const void* data, size_t n) -> size_t {
    out.write(data, n);
    return n;
  });
  try {
    out.close();
  } catch (const Error& e) {
    throw Error(cat(e.what(), "; this checkpoint is not saved"));
  }
}

CheckpointWriter::CheckpointWriter(const std::string& output_dir, int64_t step) {
  final_ = (fs::path(output_dir) / checkpoint_dir_name(step)).string();
  tmp_ = (fs::path(output_dir) / ("." + checkpoint_dir_name(step) + ".tmp")).string();
  std::error_code ec;
  fs::remove_all(tmp_, ec);  // leftover of a killed run
  fs::create_directories(tmp_, ec);
  if (ec) throw Error(cat(tmp_, ": cannot create checkpoint directory: ", ec.message()));
}

CheckpointWriter::~CheckpointWriter() {
  if (!committed_) {
    std::error_code ec;
    fs::remove_all(tmp_, ec);
  }
}

std::string CheckpointWriter::path(const std::string& file) const { return (fs::path(tmp_) / file).string(); }

std::string CheckpointWriter::commit() {
  for (const auto& e : fs::directory_iterator(tmp_)) fsync_path(e.path());
  fsync_path(tmp_);
  std::error_code ec;
  if (fs::exists(final_)) {
    // Same step saved twice (e.g. periodic save then end of run): replace atomically-ish by
    // moving the old one aside first.
    const std::string old = final_ + ".old";
    fs::remove_all(old, ec);
    fs::rename(final_, old, ec);
    fs::rename(tmp_, final_, ec);
    if (ec) throw Error(cat(final_, ": cannot move checkpoint into place: ", ec.message()));
    fs::remove_all(old, ec);
  } else {
    fs::rename(tmp_, final_, ec);
    if (ec) throw Error(cat(final_, ": cannot move checkpoint into place: ", ec.message()));
  }
  fsync_path(fs::path(final_).parent_path());
  committed_ = true;
  return final_;
}

std::string base64_encode(const std::string& in) {
  static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63], tbl[v & 63]};
  }
  if (i + 1 == in.size()) {
    const uint32_t v = uint8_t(in[i]) << 16;
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], '=', '='};
  } else if (i + 2 == in.size()) {
    const uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += {tbl[v >> 18], tbl[(v >> 12) & 63], tbl[(v >> 6) & 63], '='};
  }
  return out;
}

std::string base64_decode(const std::string& in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = val(c);
    if (v < 0) throw Error("trainer_state.json: corrupt base64 RNG state");
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xFF));
    }
  }
  return out;
}

}  // namespace zoo
