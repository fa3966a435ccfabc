#include "core/options.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace zoo {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string nearest(const std::string& key, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::numeric_limits<size_t>::max();
  for (const auto& c : candidates) {
    const size_t d = edit_distance(key, c);
    if (d < best_d) best_d = d, best = c;
  }
  // Close enough to be a typo: at most a third of the key changed.
  if (best.empty() || best_d > std::max<size_t>(2, key.size() / 3)) return "";
  return best;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

namespace detail {

namespace {
std::string shown(const json& j) {
  std::string s = j.dump();
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}
}  // namespace

void read_value(const json& j, const std::string& where, int64_t& out) {
  if (j.is_number_integer()) {
    out = j.get<int64_t>();
  } else if (j.is_number_float() && std::floor(j.get<double>()) == j.get<double>() &&
             std::abs(j.get<double>()) < 9e15) {
    out = static_cast<int64_t>(j.get<double>());  // 1e5 written as a float
  } else {
    throw Error(cat("config: ", where, " must be an integer, got ", shown(j)));
  }
}

void read_value(const json& j, const std::string& where, double& out) {
  if (!j.is_number()) throw Error(cat("config: ", where, " must be a number, got ", shown(j)));
  out = j.get<double>();
}

void read_value(const json& j, const std::string& where, bool& out) {
  if (!j.is_boolean()) throw Error(cat("config: ", where, " must be true or false, got ", shown(j)));
  out = j.get<bool>();
}

void read_value(const json& j, const std::string& where, std::string& out) {
  if (!j.is_string()) throw Error(cat("config: ", where, " must be a string, got ", shown(j)));
  out = j.get<std::string>();
}

void read_value(const json& j, const std::string& where, std::vector<double>& out) {
  if (!j.is_array()) throw Error(cat("config: ", where, " must be a list of numbers, got ", shown(j)));
  out.clear();
  for (size_t i = 0; i < j.size(); ++i) {
    double v = 0;
    read_value(j[i], cat(where, "[", i, "]"), v);
    out.push_back(v);
  }
}

void read_value(const json& j, const std::string& where, std::vector<std::string>& out) {
  if (!j.is_array()) throw Error(cat("config: ", where, " must be a list of strings, got ", shown(j)));
  out.clear();
  for (size_t i = 0; i < j.size(); ++i) {
    std::string v;
    read_value(j[i], cat(where, "[", i, "]"), v);
    out.push_back(v);
  }
}

void read_value(const json& j, const std::string& where, json& out) {
  if (!j.is_object() && !j.is_null()) throw Error(cat("config: ", where, " must be an object (or null), got ", shown(j)));
  out = j;
}

std::string describe_limits(const Limits& l) {
  if (!l.choices.empty()) return "one of: " + join(l.choices);
  const bool has_lo = std::isfinite(l.lo), has_hi = std::isfinite(l.hi);
  std::ostringstream os;
  if (has_lo && has_hi) os << "in [" << l.lo << ", " << l.hi << "]";
  else if (has_lo) os << ">= " << l.lo;
  else if (has_hi) os << "<= " << l.hi;
  return os.str();
}

void check_limits(const std::string& where, double value, const Limits& limits) {
  if (!std::isfinite(value) || value < limits.lo || value > limits.hi)
    throw Error(cat("config: ", where, " must be ", describe_limits(limits), ", got ", value));
}

void check_limits(const std::string& where, const std::string& value, const Limits& limits) {
  if (limits.choices.empty()) return;
  if (std::find(limits.choices.begin(), limits.choices.end(), value) != limits.choices.end()) return;
  const std::string near = nearest(value, limits.choices);
  throw Error(cat("config: ", where, " is \"", value, "\"; must be one of: ", join(limits.choices),
                  near.empty() ? "" : " (did you mean \"" + near + "\"?)"));
}

void Reader::reject_unknown(const std::vector<std::string>& allowed_extra) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    const std::string& key = it.key();
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    if (std::find(allowed_extra.begin(), allowed_extra.end(), key) != allowed_extra.end()) continue;
    const std::string where = section_.empty() ? key : section_ + "." + key;
    const std::string near = nearest(key, known_);
    if (!near.empty())
      throw Error(cat("config: unknown key '", where, "'; did you mean '", near, "'?"));
    throw Error(cat("config: unknown key '", where, "'; valid keys: ", join(known_)));
  }
}

}  // namespace detail

}  // namespace zoo
