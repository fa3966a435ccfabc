#include "io/config.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/input_file.h"
#include "core/output_file.h"

namespace zoo {

namespace {

// Line and column (from 1) of byte `offset` of `text`.
std::string line_and_column(const std::string& text, size_t offset) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return cat(line, ":", col);
}

// nlohmann's "number overflow parsing '1e999'" has no position: find the number, and the key
// whose value it is.
std::string overflow_message(const std::string& path, const std::string& text, const std::string& what) {
  const size_t open = what.find('\''), close = what.rfind('\'');
  const std::string number = open < close ? what.substr(open + 1, close - open - 1) : "";
  const size_t at = number.empty() ? std::string::npos : text.find(number);
  if (at == std::string::npos) return cat(path, ": JSON ", what);
  std::string key;
  const size_t colon = text.rfind(':', at);
  if (colon != std::string::npos && text.find_first_not_of(" \t\r\n", colon + 1) == at) {
    const size_t end = text.rfind('"', colon), begin = end == 0 || end == std::string::npos ? end : text.rfind('"', end - 1);
    if (begin != std::string::npos && end != std::string::npos && begin < end) key = text.substr(begin + 1, end - begin - 1);
  }
  return cat(path, ":", line_and_column(text, at), ": JSON number ", number, " is out of range",
             key.empty() ? std::string() : cat(" (the value of \"", key, "\")"),
             "; write a number a double can hold");
}

}  // namespace

json read_json_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw Error(cat(path, ": no such file"));
  if (std::filesystem::is_directory(path, ec)) throw Error(cat(path, ": is a directory, expected a JSON file"));
  const std::string text = read_text_input(path, "JSON file");
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    std::string what = e.what();
    const auto pos = what.find("parse error");
    if (pos != std::string::npos) what = what.substr(pos);
    throw Error(cat(path, ":", line_and_column(text, e.byte > 0 ? e.byte - 1 : 0), ": JSON ", what));
  } catch (const json::out_of_range& e) {
    throw Error(overflow_message(path, text, e.what()));
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
  } catch (const json::out_of_range&) {
    throw Error(cat("--set ", path, ": the number ", raw.substr(0, 40), " is out of range; write a number a double can hold"));
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
