#pragma once
// The config file: {"model": {...}, "data": {...}, "train": {...}}, read and written as
// JSON; the sections are read into options structs by core/options.h.
#include <string>
#include <vector>

#include "core/options.h"

namespace zoo {

/// Reads a JSON file. Missing/unreadable file and syntax errors (with line and column)
/// become zoo::Error naming the path.
json read_json_file(const std::string& path);
/// Writes JSON atomically (temp file + rename), pretty-printed.
void write_json_file(const std::string& path, const json& j);

/// Applies "section.key=value" (value parsed as JSON when it parses, else a string).
/// Nested keys ("model.id2label.0=cat") are allowed. Throws on malformed overrides.
void apply_override(json& config, const std::string& assignment);

/// The top-level sections a config may have.
const std::vector<std::string>& config_sections();
/// Rejects unknown top-level sections (with the nearest one).
void check_sections(const json& config, const std::string& source);

}  // namespace zoo
