#include "data/stream_source.h"

#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>

#include "core/hash.h"
#include "core/input_file.h"
#include "core/paths.h"
#include "core/options.h"

namespace fs = std::filesystem;

namespace zoo::data {

namespace {

// Whether zoo may write a derived file at `path`: inside the run's output directory (training
// only: `output_dir` is "" for zoo eval and the other commands) or zoo's cache folder.
bool may_write(const std::string& path, const std::string& output_dir) {
  if (!output_dir.empty() && path_inside(path, output_dir)) return true;
  try {
    return path_inside(path, cache_home());
  } catch (const Error&) {
    return false;
  }
}

// The cache's stream for these sources and tokenizer: one file per (files, meta), so runs
// and commands that need the same stream share it.
std::string cached_stream_path(const std::vector<std::string>& files, const json& meta) {
  const uint64_t h = fnv1a(json{{"files", files}, {"meta", meta}}.dump());
  char name[32];
  std::snprintf(name, sizeof name, "%016llx.bin", static_cast<unsigned long long>(h));
  return (fs::path(cache_home()) / "token-streams" / name).string();
}

std::string stream_path(const StreamRequest& request) {
  if (!request.stream.empty()) return resolve_data_path(request.stream);
  if (!request.output_dir.empty()) return (fs::absolute(request.output_dir) / "tokens.bin").string();
  throw Error("config: data.stream is empty: give the token stream file (zoo train writes OUTPUT_DIR/tokens.bin)");
}

// Progress of a long tokenisation on stderr, every 5%.
std::function<void(int64_t, int64_t)> tokenizing_progress(const std::string& path) {
  auto last = std::make_shared<int64_t>(-1);
  return [path, last](int64_t done, int64_t total) {
    const int64_t pct = total > 0 ? done * 100 / total : 100;
    if (total < (64 << 20) || pct / 5 == *last / 5) return;
    *last = pct;
    std::cerr << "zoo: tokenising into " << path << ": " << pct << "%" << std::endl;
  };
}

// The stream of request.files: where it is current, else built where zoo may write.
std::string built_stream(const StreamRequest& request, const Tokenizer& tokenizer, const json& meta) {
  const auto& files = request.files;
  std::string path = request.stream.empty() && request.output_dir.empty() ? cached_stream_path(files, meta)
                                                                          : stream_path(request);
  json sidecar = current_stream_sidecar(path, files, meta);
  if (sidecar.is_null() && !may_write(path, request.output_dir)) {
    const std::string cached = cached_stream_path(files, meta);
    std::cerr << "zoo: " << path << " is not a current token stream of data.files, and zoo writes derived files "
              << "only in the run's output directory or its cache; using " << cached << std::endl;
    path = cached;
    sidecar = current_stream_sidecar(path, files, meta);
  }
  if (!sidecar.is_null()) return path;
  if (!request.primary)
    throw Error(cat(path, ": rank 0 of this data-parallel run did not leave a current token stream here; the "
                    "processes need a shared output directory (or give every machine data.stream)"));
  std::cerr << "zoo: tokenising " << files.size() << " file(s) into " << path << std::endl;
  const int64_t n = write_token_stream(
      files, path, [&tokenizer](std::string_view text) { return tokenizer.encode(text); }, tokenizer.vocab_size(),
      meta, tokenizing_progress(path));
  std::cerr << "zoo: " << n << " tokens" << std::endl;
  return path;
}

}  // namespace

std::vector<std::string> resolved_text_files(const std::vector<std::string>& files, const std::string& key) {
  std::vector<std::string> out;
  for (const auto& f : files) {
    out.push_back(existing_data_path(f, key));
    check_input_file(out.back(), key);
  }
  return out;
}

TokenStream open_token_stream(const StreamRequest& request, const Tokenizer& tokenizer) {
  const json meta = {{"tokenizer", tokenizer.fingerprint()}};
  const int width = token_width(tokenizer.vocab_size());
  if (!request.files.empty()) return TokenStream(built_stream(request, tokenizer, meta), width);
  const std::string path = stream_path(request);
  if (!fs::exists(path))
    throw Error(cat(path, ": no token stream, and data.files is empty to build one from; give data.files"));
  if (!fs::exists(path + ".json")) return TokenStream(path, width);
  json sidecar;
  try {
    sidecar = json::parse(read_text_input(path + ".json", "token stream sidecar"));
  } catch (const json::exception& e) {
    throw Error(cat(path, ".json: malformed (", e.what(), "); delete it and give data.files to rebuild the stream"));
  }
  const std::string made_with = sidecar.value("meta", json::object()).value("tokenizer", "");
  if (!made_with.empty() && made_with != tokenizer.fingerprint())
    throw Error(cat(path, ": the stream was tokenised with another tokenizer (fingerprint ", made_with,
                    ", this one ", tokenizer.fingerprint(), "); delete it and give data.files to rebuild"));
  return TokenStream(path, sidecar.value("bytes_per_token", width));
}

}  // namespace zoo::data
