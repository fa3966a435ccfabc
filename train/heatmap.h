#pragma once
// Attention heat maps as standalone SVG files (no plotting library needed): one cell per
// (target token, source token) pair, darker = more attention, as document 000's
// plot_attention draws them with matplotlib (source tokens on the x axis, at the top;
// target tokens on the y axis). Each cell carries a <title> tooltip with its weight.
#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

namespace zoo {

/// Escapes text for XML character data and attribute values (& < > " '). Characters that
/// XML 1.0 forbids (C0 controls other than tab/LF/CR, U+FFFE, U+FFFF) become U+FFFD, so the
/// file always parses. Input is UTF-8 and is kept as UTF-8.
std::string xml_escape(const std::string& text);

/// Writes `weights` (T, S) — row t is the attention of target token t over the S source
/// tokens — as an SVG heat map to `path` (UTF-8). Throws zoo::Error when the shape does not
/// match the token lists or the file cannot be written. Non-finite weights are drawn as 0.
void write_attention_svg(const std::string& path, const std::vector<std::string>& source_tokens,
                         const std::vector<std::string>& target_tokens,
                         const torch::Tensor& weights);

/// `path` with "-N" inserted before its extension: ("att.svg", 3) -> "att-3.svg",
/// ("dir.v1/att", 2) -> "dir.v1/att-2". Used for one heat map per sentence.
std::string numbered_path(const std::string& path, int64_t n);

}  // namespace zoo
