#pragma once
// Options reflection: options structs <-> JSON, with validation.
//
// Every options struct (ViTOptions, TrainOptions, ImageDataOptions, ...) holds its
// defaults as member initialisers -- the one place defaults live -- and lists its
// fields once in a `fields` function:
//
//   struct FooOptions {
//     int64_t hidden_size = 64;
//     template <class V> void fields(V& v) {
//       v("hidden_size", hidden_size, "width of the hidden states", at_least(1));
//     }
//   };
//
// From that one list: read_options() parses a JSON object (type and range checks,
// unknown keys rejected with the nearest valid key), to_json() writes the resolved
// values, and describe_options() documents the keys (`zoo train --help-config`).
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zoo {

using json = nlohmann::json;

/// Allowed values of a field; empty means anything of the right type.
struct Limits {
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;
};
inline Limits at_least(double lo) { return Limits{lo, std::numeric_limits<double>::infinity(), {}}; }
inline Limits between(double lo, double hi) { return Limits{lo, hi, {}}; }
inline Limits one_of(std::vector<std::string> choices) {
  Limits l;
  l.choices = std::move(choices);
  return l;
}

/// Edit distance, for "did you mean" suggestions.
size_t edit_distance(const std::string& a, const std::string& b);
/// The candidate nearest to `key`, or "" when nothing is close.
std::string nearest(const std::string& key, const std::vector<std::string>& candidates);
/// "a, b, c"
std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");
/// Whether `s` ends with `suffix`.
bool ends_with(const std::string& s, const std::string& suffix);

namespace detail {

// Type checks and conversions shared by the reader; `where` is "model.hidden_size".
void read_value(const json& j, const std::string& where, int64_t& out);
void read_value(const json& j, const std::string& where, double& out);
void read_value(const json& j, const std::string& where, bool& out);
void read_value(const json& j, const std::string& where, std::string& out);
void read_value(const json& j, const std::string& where, std::vector<double>& out);
void read_value(const json& j, const std::string& where, std::vector<std::string>& out);
/// A nested section (an object, or null for "not set"), read by its own options struct.
void read_value(const json& j, const std::string& where, json& out);
void check_limits(const std::string& where, double value, const Limits& limits);
void check_limits(const std::string& where, const std::string& value, const Limits& limits);
inline void check_limits(const std::string& where, int64_t value, const Limits& limits) {
  check_limits(where, static_cast<double>(value), limits);
}
template <class T>
void check_limits(const std::string&, const std::vector<T>&, const Limits&) {}
inline void check_limits(const std::string& where, bool, const Limits&) { (void)where; }
inline void check_limits(const std::string&, const json&, const Limits&) {}

class Reader {
 public:
  Reader(const json& object, std::string section) : object_(object), section_(std::move(section)) {}
  template <class T>
  void operator()(const char* key, T& member, const char* /*doc*/, const Limits& limits = {}) {
    known_.push_back(key);
    auto it = object_.find(key);
    if (it == object_.end()) return;  // default stays
    const std::string where = section_.empty() ? std::string(key) : section_ + "." + key;
    read_value(*it, where, member);
    check_limits(where, member, limits);
  }
  /// Throws on keys that no field claimed (ignoring `allowed_extra`).
  void reject_unknown(const std::vector<std::string>& allowed_extra = {}) const;
  const std::vector<std::string>& known() const { return known_; }

 private:
  const json& object_;
  std::string section_;
  std::vector<std::string> known_;
};

class Writer {
 public:
  explicit Writer(json& out) : out_(out) {}
  template <class T>
  void operator()(const char* key, const T& member, const char* /*doc*/, const Limits& = {}) {
    out_[key] = member;
  }

 private:
  json& out_;
};

struct Doc {
  std::string key, type, default_value, doc, limits;
};
std::string describe_limits(const Limits& l);
inline std::string type_name(int64_t) { return "int"; }
inline std::string type_name(double) { return "float"; }
inline std::string type_name(bool) { return "bool"; }
inline std::string type_name(const std::string&) { return "string"; }
inline std::string type_name(const std::vector<double>&) { return "[float]"; }
inline std::string type_name(const std::vector<std::string>&) { return "[string]"; }
inline std::string type_name(const json&) { return "object"; }

class Describer {
 public:
  explicit Describer(std::vector<Doc>& out) : out_(out) {}
  template <class T>
  void operator()(const char* key, const T& member, const char* doc, const Limits& limits = {}) {
    out_.push_back(Doc{key, type_name(member), json(member).dump(), doc, describe_limits(limits)});
  }

 private:
  std::vector<Doc>& out_;
};

}  // namespace detail

/// Reads `object` (a JSON object; null means all defaults) into `opts`, which keeps its
/// defaults for absent keys. `section` prefixes key names in messages ("model").
/// `allowed_extra` lists keys that some other layer consumes (e.g. "model_type").
template <class Opts>
void read_options(const json& object, const std::string& section, Opts& opts,
                  const std::vector<std::string>& allowed_extra = {}) {
  static const json empty = json::object();
  const json& obj = object.is_null() ? empty : object;
  if (!obj.is_object())
    throw Error(cat("config: '", section, "' must be a JSON object, got ", obj.type_name()));
  detail::Reader reader(obj, section);
  opts.fields(reader);
  reader.reject_unknown(allowed_extra);
}

template <class Opts>
Opts read_options(const json& object, const std::string& section,
                  const std::vector<std::string>& allowed_extra = {}) {
  Opts opts;
  read_options(object, section, opts, allowed_extra);
  return opts;
}

template <class Opts>
json to_json(Opts opts) {  // by value: fields() is non-const
  json out = json::object();
  detail::Writer writer(out);
  opts.fields(writer);
  return out;
}

template <class Opts>
std::vector<detail::Doc> describe_options() {
  Opts opts;
  std::vector<detail::Doc> docs;
  detail::Describer d(docs);
  opts.fields(d);
  return docs;
}

}  // namespace zoo
