#pragma once
// Where data sets live. A user has the repository and tools/fetch_data.sh, which fills one
// folder, the data home; recipes name their data inside it ("cmn-eng/cmn.txt"), so the same
// recipe works on every machine without editing. The rule for a data path (data.path):
//
//   /abs/file, ./file, ../file   used as given (relative ones from the current folder)
//   ~/file                       under $HOME (JSON configs get no shell tilde expansion)
//   cmn-eng/cmn.txt              looked up in the data home
//
// The data home is $ZOO_DATA_DIR, else $XDG_DATA_HOME/zoo/data, else
// $HOME/.local/share/zoo/data; tools/fetch_data.sh applies the same rule.
#include <string>

namespace zoo {

/// The data home (see above), made absolute. Throws zoo::Error when ZOO_DATA_DIR is not
/// set and neither XDG_DATA_HOME (absolute) nor HOME is.
std::string data_home();

/// True when `path` is looked up in the data home: relative and starting with none of
/// "./", "../", "~/" (nor being ".", ".." or "~").
bool in_data_home(const std::string& path);

/// `path` as zoo opens it, following the rule above. Reads only the environment; "" stays "".
std::string resolve_data_path(const std::string& path);

/// resolve_data_path(path) when that exists; otherwise throws zoo::Error naming `key`, the
/// path as written, the resolved path, where it was looked for and the fix.
std::string existing_data_path(const std::string& path, const std::string& key = "data.path");

/// Whether resolve_data_path(path) exists; false (never a throw) when it cannot be resolved.
bool data_path_exists(const std::string& path) noexcept;

/// zoo's cache folder, where derived files that belong to no run go (token streams built for
/// `zoo eval`): $XDG_CACHE_HOME/zoo, else $HOME/.cache/zoo. Throws zoo::Error when neither
/// variable is set.
std::string cache_home();

/// Whether `path` is `dir` or lies below it, both made absolute and normalised, with the
/// symbolic links of their existing parts resolved (so a link inside `dir` that points out of
/// it is outside).
bool path_inside(const std::string& path, const std::string& dir);

}  // namespace zoo
