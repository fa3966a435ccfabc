#include "serve/requests.h"

#include <limits>

namespace zoo::serve {

namespace {

constexpr size_t kMaxInputs = 256;  // prompts, sentences, texts or images in one request

std::string type_name(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer() || v.is_number_unsigned()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "an array";
  return "an object";
}

const json* find(const json& body, const std::string& key) {
  const auto it = body.find(key);
  return it == body.end() || it->is_null() ? nullptr : &*it;
}

int64_t integer(const json& body, const std::string& key, int64_t fallback, int64_t low, int64_t high) {
  const json* v = find(body, key);
  if (!v) return fallback;
  if (!v->is_number_integer() && !v->is_number_unsigned())
    throw invalid(key + " must be an integer, got " + type_name(*v), key);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    throw invalid(key + " is too large: give " + std::to_string(low) + " to " + std::to_string(high), key);
  const auto x = v->get<int64_t>();
  if (x < low || x > high)
    throw invalid(key + " " + std::to_string(x) + " is out of range: give " + std::to_string(low) + " to " +
                      std::to_string(high),
                  key);
  return x;
}

double number(const json& body, const std::string& key, double fallback, double low, double high) {
  const json* v = find(body, key);
  if (!v) return fallback;
  if (!v->is_number()) throw invalid(key + " must be a number, got " + type_name(*v), key);
  const auto x = v->get<double>();
  if (!(x >= low && x <= high))
    throw invalid(key + " " + v->dump() + " is out of range: give " + json(low).dump() + " to " + json(high).dump(),
                  key);
  return x;
}

bool boolean(const json& body, const std::string& key, bool fallback) {
  const json* v = find(body, key);
  if (!v) return fallback;
  if (!v->is_boolean()) throw invalid(key + " must be true or false, got " + type_name(*v), key);
  return v->get<bool>();
}

// A string or an array of strings (at least one, at most kMaxInputs).
std::vector<std::string> strings(const json& body, const std::string& key, bool required) {
  const json* v = find(body, key);
  if (!v) {
    if (required) throw invalid(key + " is required", key);
    return {};
  }
  if (v->is_string()) return {v->get<std::string>()};
  if (!v->is_array()) throw invalid(key + " must be a string or an array of strings, got " + type_name(*v), key);
  if (v->empty()) throw invalid(key + " is an empty array: give at least one string", key);
  if (v->size() > kMaxInputs)
    throw invalid(key + " has " + std::to_string(v->size()) + " items: at most " + std::to_string(kMaxInputs) +
                      " per request",
                  key);
  std::vector<std::string> out;
  for (size_t i = 0; i < v->size(); ++i) {
    const json& item = (*v)[i];
    if (!item.is_string())
      throw invalid(key + "[" + std::to_string(i) + "] must be a string, got " + type_name(item), key);
    out.push_back(item.get<std::string>());
  }
  return out;
}

void reject_set(const json& body, const std::string& key, const std::string& why) {
  const json* v = find(body, key);
  if (!v) return;
  const bool unset = (v->is_boolean() && !v->get<bool>()) || (v->is_number() && v->get<double>() == 0);
  if (!unset) throw invalid(key + " is not supported: " + why, key);
}

}  // namespace

ApiError::ApiError(int status_, const std::string& message, std::string param_, std::string type_, std::string code_)
    : std::runtime_error(message), status(status_), type(std::move(type_)), param(std::move(param_)),
      code(std::move(code_)) {
  if (type.empty())
    type = status == 401   ? "authentication_error"
           : status == 429 ? "rate_limit_error"
           : status >= 500 ? "server_error"
                           : "invalid_request_error";
}

json ApiError::body() const {
  return {{"error",
           {{"message", what()},
            {"type", type},
            {"param", param.empty() ? json() : json(param)},
            {"code", code.empty() ? json() : json(code)}}}};
}

ApiError invalid(const std::string& message, const std::string& param) { return ApiError(400, message, param); }

json parse_body(const std::string& body) {
  json j;
  try {
    j = json::parse(body);
  } catch (const json::parse_error& e) {
    throw ApiError(400, std::string("the body is not valid JSON: ") + e.what(), "", "", "invalid_json");
  }
  if (!j.is_object()) throw ApiError(400, "the body must be a JSON object, got " + type_name(j), "", "", "invalid_json");
  return j;
}

std::string requested_model(const json& body) {
  const json* v = find(body, "model");
  if (!v) return "";
  if (!v->is_string()) throw invalid("model must be a string, got " + type_name(*v), "model");
  return v->get<std::string>();
}

CompletionRequest parse_completion(const json& body, int64_t context) {
  CompletionRequest r;
  r.model = requested_model(body);
  r.prompts = strings(body, "prompt", true);
  for (const auto& p : r.prompts)
    if (p.empty()) throw invalid("prompt is empty: give some text", "prompt");
  GenerationOptions& o = r.options;
  const int64_t asked = integer(body, "max_tokens", 16, 0, std::numeric_limits<int64_t>::max());
  o.max_new_tokens = std::min(asked, context);
  if (asked > context)
    r.warnings.push_back("max_tokens " + std::to_string(asked) + " is capped to the model's context, " +
                         std::to_string(context));
  const double temperature = number(body, "temperature", 1.0, 0.0, 100.0);
  o.greedy = temperature == 0;
  o.temperature = o.greedy ? 1.0 : temperature;
  o.top_p = number(body, "top_p", 1.0, 0.0, 1.0);
  if (o.top_p == 0) throw invalid("top_p must be above 0 (1 keeps every token)", "top_p");
  o.top_k = integer(body, "top_k", 0, 0, 1000000);
  o.repetition_penalty = number(body, "repetition_penalty", 1.0, 1e-6, 100.0);
  r.n = integer(body, "n", 1, 1, 16);
  if (r.n * static_cast<int64_t>(r.prompts.size()) > static_cast<int64_t>(kMaxInputs))
    throw invalid("n times the prompts is more than " + std::to_string(kMaxInputs) + " completions", "n");
  r.seeded = find(body, "seed") != nullptr;
  o.seed = integer(body, "seed", 0, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (find(body, "stop")) {
    o.stop = strings(body, "stop", false);
    if (o.stop.size() > 4) throw invalid("stop has more than 4 strings", "stop");
    for (const auto& s : o.stop)
      if (s.empty() || s.size() > 256) throw invalid("each stop string must have 1 to 256 bytes", "stop");
  }
  r.stream = boolean(body, "stream", false);
  if (const json* so = find(body, "stream_options")) {
    if (!so->is_object()) throw invalid("stream_options must be an object", "stream_options");
    r.include_usage = boolean(*so, "include_usage", false);
  }
  r.truncate_prompt = boolean(body, "truncate_prompt", true);
  reject_set(body, "echo", "the response holds the continuation only");
  reject_set(body, "logprobs", "zoo serve does not return token log-probabilities");
  reject_set(body, "presence_penalty", "use repetition_penalty");
  reject_set(body, "frequency_penalty", "use repetition_penalty");
  if (const json* best = find(body, "best_of"); best && !(best->is_number_integer() && best->get<int64_t>() == r.n))
    throw invalid("best_of is not supported", "best_of");
  return r;
}

TranslateRequest parse_translate(const json& body) {
  TranslateRequest r;
  r.model = requested_model(body);
  r.input = strings(body, "input", true);
  TranslationOptions& o = r.options;
  o.beam_size = integer(body, "beam_size", 4, 1, 64);
  o.max_length = integer(body, "max_length", 50, 1, 1024);
  o.length_penalty = number(body, "length_penalty", 1.0, -10.0, 10.0);
  o.return_attention = boolean(body, "return_attention", false);
  o.truncate = boolean(body, "truncate", false);
  return r;
}

ClassifyRequest parse_classify(const json& body) {
  ClassifyRequest r;
  r.model = requested_model(body);
  r.texts = strings(body, "input", false);
  const auto images = strings(body, "images", false);
  if (r.texts.empty() == images.empty())
    throw invalid("give either input (texts) or images (base64-encoded files)", r.texts.empty() ? "input" : "images");
  for (size_t i = 0; i < images.size(); ++i)
    r.images.push_back(decode_base64(images[i], "images[" + std::to_string(i) + "]"));
  r.top_k = integer(body, "top_k", 1, 1, 1000);
  return r;
}

EmbeddingsRequest parse_embeddings(const json& body) {
  EmbeddingsRequest r;
  r.model = requested_model(body);
  r.input = strings(body, "input", true);
  if (const json* f = find(body, "encoding_format"); f && !(f->is_string() && f->get<std::string>() == "float"))
    throw invalid("encoding_format: only \"float\" is supported", "encoding_format");
  if (const json* p = find(body, "pooling")) {
    if (!p->is_string() || (p->get<std::string>() != "mean" && p->get<std::string>() != "cls"))
      throw invalid("pooling must be \"mean\" or \"cls\"", "pooling");
    r.pooling = p->get<std::string>() == "cls" ? Pooling::Cls : Pooling::Mean;
  }
  return r;
}

std::string decode_base64(const std::string& text, const std::string& param) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+' || c == '-') return 62;
    if (c == '/' || c == '_') return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() * 3 / 4);
  uint32_t bits = 0;
  int count = 0;
  size_t start = text.rfind("base64,");  // a data: URL's prefix
  start = start == std::string::npos ? 0 : start + 7;
  for (size_t i = start; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '=') break;
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    const int v = value(c);
    if (v < 0) throw invalid(param + " is not base64: byte " + std::to_string(i) + " is not a base64 digit", param);
    bits = (bits << 6) | static_cast<uint32_t>(v);
    if (++count == 4) {
      out.push_back(static_cast<char>((bits >> 16) & 0xff));
      out.push_back(static_cast<char>((bits >> 8) & 0xff));
      out.push_back(static_cast<char>(bits & 0xff));
      bits = 0, count = 0;
    }
  }
  if (count == 1) throw invalid(param + " is not base64: it ends in the middle of a byte", param);
  if (count == 2) out.push_back(static_cast<char>((bits >> 4) & 0xff));
  if (count == 3) {
    out.push_back(static_cast<char>((bits >> 10) & 0xff));
    out.push_back(static_cast<char>((bits >> 2) & 0xff));
  }
  if (out.empty()) throw invalid(param + " is empty", param);
  return out;
}

}  // namespace zoo::serve
