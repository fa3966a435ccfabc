#include "core/paths.h"

#include <cstdlib>
#include <filesystem>

#include "core/error.h"

namespace zoo {

namespace fs = std::filesystem;

namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct DataHome {
  std::string dir;
  std::string from;  // which variable gave it, for error messages
};

DataHome find_data_home() {
  if (const auto dir = env("ZOO_DATA_DIR"); !dir.empty())
    return {fs::absolute(dir).lexically_normal().string(), "ZOO_DATA_DIR"};
  // The XDG spec says to ignore a relative XDG_DATA_HOME.
  if (const auto xdg = env("XDG_DATA_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
    return {(fs::path(xdg) / "zoo" / "data").lexically_normal().string(),
            "$XDG_DATA_HOME/zoo/data, as ZOO_DATA_DIR is not set"};
  if (const auto home = env("HOME"); !home.empty())
    return {(fs::path(home) / ".local" / "share" / "zoo" / "data").lexically_normal().string(),
            "$HOME/.local/share/zoo/data, as ZOO_DATA_DIR is not set"};
  throw Error("cannot find the data home: ZOO_DATA_DIR, XDG_DATA_HOME and HOME are all unset; "
              "set ZOO_DATA_DIR to the folder tools/fetch_data.sh --dest filled");
}

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

bool under_home(const std::string& path) { return path == "~" || starts_with(path, "~/"); }

bool exists(const std::string& path) {
  std::error_code ec;
  return fs::exists(path, ec);
}

}  // namespace

std::string data_home() { return find_data_home().dir; }

std::string cache_home() {
  if (const auto xdg = env("XDG_CACHE_HOME"); !xdg.empty() && fs::path(xdg).is_absolute())
    return (fs::path(xdg) / "zoo").lexically_normal().string();
  if (const auto home = env("HOME"); !home.empty()) return (fs::path(home) / ".cache" / "zoo").lexically_normal().string();
  throw Error("cannot find zoo's cache folder: XDG_CACHE_HOME and HOME are both unset; set XDG_CACHE_HOME");
}

bool path_inside(const std::string& path, const std::string& dir) {
  std::error_code ec;
  auto p = fs::weakly_canonical(fs::absolute(path), ec);
  if (ec) return false;
  auto d = fs::weakly_canonical(fs::absolute(dir), ec);
  if (ec) return false;
  if (d.filename().empty()) d = d.parent_path();  // "out/" is "out"
  if (p.filename().empty()) p = p.parent_path();
  const auto rel = p.lexically_relative(d);
  return !rel.empty() && *rel.begin() != "..";
}

bool in_data_home(const std::string& path) {
  if (path.empty() || fs::path(path).is_absolute() || under_home(path)) return false;
  for (const char* explicit_start : {".", ".."})
    if (path == explicit_start || starts_with(path, std::string(explicit_start) + "/")) return false;
  return true;
}

std::string resolve_data_path(const std::string& path) {
  if (under_home(path)) {
    const auto home = env("HOME");
    if (home.empty()) throw Error(cat("data path '", path, "' starts with ~ but HOME is not set; write the full path"));
    return (fs::path(home) / path.substr(path.size() > 1 ? 2 : 1)).string();
  }
  if (!in_data_home(path)) return path;
  return (fs::path(data_home()) / path).string();
}

std::string existing_data_path(const std::string& path, const std::string& key) {
  const std::string resolved = resolve_data_path(path);
  if (exists(resolved)) return resolved;
  if (in_data_home(path)) {
    const DataHome home = find_data_home();
    // The first folder names the set as tools/fetch_data.sh knows it ("cmn-eng/cmn.txt");
    // a first part with a dot is a file name ("cmn.txt"), not a set.
    const std::string set = path.substr(0, path.find('/'));
    const std::string fetch =
        set.find('.') == std::string::npos ? cat("fetch it with tools/fetch_data.sh ", set, ", or ") : "";
    const std::string local = exists(path) ? cat("; ./", path, " exists in the current folder: write ./", path,
                                                 " to use that instead")
                                           : "";
    throw Error(cat(key, " '", path, "': ", resolved, " does not exist (a path without a leading /, ./, ../ or ~/ ",
                    "is looked up in the data home ", home.dir, ", from ", home.from, "); ", fetch,
                    "set ZOO_DATA_DIR to the folder that holds ", path, local));
  }
  const std::string absolute = fs::absolute(resolved).lexically_normal().string();
  throw Error(cat(key, " '", path, "': ", absolute, " does not exist (a path with a leading /, ./, ../ or ~/ ",
                  "is used as given); correct ", key, ", or fetch the data with tools/fetch_data.sh NAME and write ",
                  key, " relative to the data home (NAME/...)"));
}

bool data_path_exists(const std::string& path) noexcept {
  try {
    return !path.empty() && exists(resolve_data_path(path));
  } catch (...) {
    return false;
  }
}

}  // namespace zoo
