#pragma once
// zoo serve's request bodies: JSON in OpenAI's shapes (and zoo's own for translation and
// classification) read into the library's options, every field checked by type and range. A
// client's mistake is an ApiError (a 4xx status and OpenAI's error shape), never an exception
// that reaches the server.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "zoo/zoo.h"

namespace zoo::serve {

using json = nlohmann::json;

/// An error answered as {"error": {"message", "type", "param", "code"}} with `status`.
struct ApiError : std::runtime_error {
  ApiError(int status, const std::string& message, std::string param = "", std::string type = "",
           std::string code = "");
  int status;
  std::string type, param, code;
  json body() const;
};

/// 400 invalid_request_error naming `param`.
ApiError invalid(const std::string& message, const std::string& param = "");

/// The request body as JSON (an object), or a 400 naming where the JSON breaks.
json parse_body(const std::string& body);

/// POST /v1/completions.
struct CompletionRequest {
  std::string model;
  std::vector<std::string> prompts;
  GenerationOptions options;
  int64_t n = 1;
  bool stream = false;
  bool include_usage = false;      // stream_options.include_usage
  bool truncate_prompt = true;     // false: a prompt longer than the context is a 400
  bool seeded = false;             // the request gave a seed
  std::vector<std::string> warnings;
};
/// `context`: the model's context; max_tokens above it is capped to it, with a warning.
CompletionRequest parse_completion(const json& body, int64_t context);

/// POST /v1/translate.
struct TranslateRequest {
  std::string model;
  std::vector<std::string> input;
  TranslationOptions options;
};
TranslateRequest parse_translate(const json& body);

/// POST /v1/classify: texts (`input`) or base64 images (`images`), decoded.
struct ClassifyRequest {
  std::string model;
  std::vector<std::string> texts, images;
  int64_t top_k = 1;
};
ClassifyRequest parse_classify(const json& body);

/// POST /v1/embeddings.
struct EmbeddingsRequest {
  std::string model;
  std::vector<std::string> input;
  Pooling pooling = Pooling::Mean;
};
EmbeddingsRequest parse_embeddings(const json& body);

/// The body's "model" (a string), or "" when it has none.
std::string requested_model(const json& body);

/// Standard base64 (padding optional, whitespace skipped) to bytes; throws ApiError naming `param`.
std::string decode_base64(const std::string& text, const std::string& param);

}  // namespace zoo::serve
