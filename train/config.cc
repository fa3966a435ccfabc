#include "train/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/output_file.h"

namespace zoo {

json read_json_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(cat(path, ": no such file"));
  if (std::filesystem::is_directory(path, ec)) throw Error(cat(path, ": is a directory, expected a JSON file"));
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot open for reading"));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    // Turn the byte offset into line:column.
    size_t line = 1, col = 1;
    const size_t end = std::min(text.size(), e.byte > 0 ? e.byte - 1 : 0);
    for (size_t i = 0; i < end; ++i) {
      if (text[i] == '\n') ++line, col = 1;
      else ++col;
    }
    std::string what = e.what();
    const auto pos = what.find("parse error");
    if (pos != std::string::npos) what = what.substr(pos);
    throw Error(cat(path, ":", line, ":", col, ": JSON ", what));
  }
}

void write_json_file(const std::string& path, const json& j) {
  const std::string tmp = path + ".tmp";
  const std::string text = j.dump(2) + "\n";
  {
    OutputFile out(tmp, path);
    out.write(text.data(), text.size());
    out.close();
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    const std::string why = ec.message();
    std::filesystem::remove(tmp, ec);
    throw Error(cat(path, ": cannot write (", why, ")"));
  }
}

void apply_override(json& config, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(cat("--set '", assignment, "': expected section.key=value, e.g. train.max_steps=300"));
  const std::string path = assignment.substr(0, eq);
  const std::string raw = assignment.substr(eq + 1);
  std::vector<std::string> parts;
  std::stringstream ss(path);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  if (parts.size() == 1 && parts[0] == "task") {  // the one top-level value: the task's name
    config["task"] = raw;
    return;
  }
  if (parts.size() < 2 || std::any_of(parts.begin(), parts.end(), [](auto& p) { return p.empty(); }))
    throw Error(cat("--set '", assignment, "': expected section.key=value, e.g. train.max_steps=300"));
  const auto& sections = config_sections();
  if (std::find(sections.begin(), sections.end(), parts[0]) == sections.end()) {
    const std::string near = nearest(parts[0], sections);
    throw Error(cat("--set '", assignment, "': unknown section '", parts[0], "'; sections are ",
                    join(sections), near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
  json value;
  try {
    value = json::parse(raw);
  } catch (const json::parse_error&) {
    value = raw;  // bare word: a string
  }
  json* node = &config;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    json& next = (*node)[parts[i]];
    if (next.is_null()) next = json::object();
    if (!next.is_object())
      throw Error(cat("--set '", assignment, "': '", parts[i], "' is not an object"));
    node = &next;
  }
  (*node)[parts.back()] = value;
}

const std::vector<std::string>& config_sections() {
  static const std::vector<std::string> s{"task", "model", "data", "train"};
  return s;
}

void check_sections(const json& config, const std::string& source) {
  if (!config.is_object()) throw Error(cat(source, ": the config must be a JSON object"));
  const auto& sections = config_sections();
  for (auto it = config.begin(); it != config.end(); ++it) {
    if (std::find(sections.begin(), sections.end(), it.key()) != sections.end()) continue;
    if (it.key().rfind("_", 0) == 0 || it.key() == "$schema") continue;  // comments: "_note"
    const std::string near = nearest(it.key(), sections);
    throw Error(cat(source, ": unknown section '", it.key(), "'; sections are ", join(sections),
                    near.empty() ? "" : " (did you mean '" + near + "'?)"));
  }
}

}  // namespace zoo
