#include "train/heatmap.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <sstream>

#include "core/error.h"

namespace zoo {
namespace {

constexpr const char* kReplacement = "\xEF\xBF\xBD";  // U+FFFD
constexpr double kCell = 30;                          // cell side, px
constexpr double kFontSize = 13;
constexpr double kPad = 8;

// Estimated rendered width of `text` at kFontSize: wide (CJK, fullwidth) code points count
// as one em, others as about half an em. Good enough to size the margins.
double text_width(const std::string& text) {
  double w = 0;
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    const size_t len = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : 4;
    w += len >= 3 ? kFontSize : 0.6 * kFontSize;
    i += len;
  }
  return w;
}

// matplotlib's viridis (document 000's colour map), sampled every 0.1 and interpolated.
std::string viridis(double v) {
  static const std::array<std::array<int, 3>, 11> kStops{{{68, 1, 84},
                                                          {72, 36, 117},
                                                          {65, 68, 135},
                                                          {53, 95, 141},
                                                          {42, 120, 142},
                                                          {33, 145, 140},
                                                          {34, 168, 132},
                                                          {68, 191, 112},
                                                          {122, 209, 81},
                                                          {189, 223, 38},
                                                          {253, 231, 37}}};
  if (!std::isfinite(v)) v = 0;
  v = std::clamp(v, 0.0, 1.0) * 10;
  const auto i = std::min<size_t>(static_cast<size_t>(v), 9);
  const double f = v - static_cast<double>(i);
  std::ostringstream os;
  os << '#' << std::hex << std::setfill('0');
  for (int k = 0; k < 3; ++k) {
    const double c = kStops[i][k] + f * (kStops[i + 1][k] - kStops[i][k]);
    os << std::setw(2) << static_cast<int>(std::lround(c));
  }
  return os.str();
}

std::string fmt(double v) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(1) << v;
  return os.str();
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    const auto u = static_cast<unsigned char>(c);
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        if (u < 0x20 && c != '\t' && c != '\n' && c != '\r') {
          out += kReplacement;  // not allowed in XML 1.0, not even as a character reference
        } else if (u == 0xEF && i + 2 < text.size() &&
                   static_cast<unsigned char>(text[i + 1]) == 0xBF &&
                   (static_cast<unsigned char>(text[i + 2]) & 0xFE) == 0xBE) {
          out += kReplacement;  // U+FFFE, U+FFFF: non-characters XML forbids
          i += 2;
        } else {
          out += c;
        }
    }
  }
  return out;
}

void write_attention_svg(const std::string& path, const std::vector<std::string>& source_tokens,
                         const std::vector<std::string>& target_tokens,
                         const torch::Tensor& weights) {
  const auto n_src = static_cast<int64_t>(source_tokens.size());
  const auto n_tgt = static_cast<int64_t>(target_tokens.size());
  if (!weights.defined() || weights.dim() != 2 || weights.size(0) != n_tgt ||
      weights.size(1) != n_src) {
    throw Error(cat("attention heat map '", path, "': expected weights of shape (", n_tgt, ", ",
                    n_src, ") for ", n_tgt, " target and ", n_src, " source tokens, got ",
                    weights.defined() ? cat(weights.sizes()) : std::string("none")));
  }
  const auto w = weights.detach().to(torch::kCPU, torch::kDouble).contiguous();
  const auto acc = w.accessor<double, 2>();

  double left = 0, label = 0;
  for (const auto& t : target_tokens) left = std::max(left, text_width(t));
  for (const auto& s : source_tokens) label = std::max(label, text_width(s));
  left += 2 * kPad;
  const double rise = label * std::sqrt(0.5);  // source labels are rotated by 45 degrees
  const double top = rise + 2 * kPad + kFontSize;
  const double grid_w = static_cast<double>(n_src) * kCell;
  const double grid_h = static_cast<double>(n_tgt) * kCell;
  const double legend_x = left + grid_w + 2 * kPad;
  // Wide enough for the colour bar and for the last source label, which leans right.
  const double width = std::max(legend_x + 12 + 4 * kPad + 2 * kFontSize,
                                left + grid_w - kCell / 2 + rise + kFontSize + kPad);
  const double height = top + std::max(grid_h, 5 * kCell) + 2 * kPad + kFontSize;

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << fmt(width) << "\" height=\""
      << fmt(height) << "\" viewBox=\"0 0 " << fmt(width) << ' ' << fmt(height) << "\" "
      << "font-family=\"'Noto Sans CJK SC', 'Noto Sans SC', 'WenQuanYi Micro Hei', 'Microsoft "
         "YaHei', sans-serif\" font-size=\""
      << kFontSize << "\">\n"
      << "<title>attention: " << n_tgt << " target x " << n_src << " source tokens</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  // Source tokens along the top, rotated; target tokens down the left side.
  svg << "<g class=\"source\" text-anchor=\"start\">\n";
  for (int64_t s = 0; s < n_src; ++s) {
    const double x = left + (static_cast<double>(s) + 0.5) * kCell;
    const double y = top - kPad / 2;
    svg << "<text x=\"" << fmt(x) << "\" y=\"" << fmt(y) << "\" transform=\"rotate(-45 " << fmt(x)
        << ' ' << fmt(y) << ")\">" << xml_escape(source_tokens[s]) << "</text>\n";
  }
  svg << "</g>\n<g class=\"target\" text-anchor=\"end\" dominant-baseline=\"middle\">\n";
  for (int64_t t = 0; t < n_tgt; ++t) {
    svg << "<text x=\"" << fmt(left - kPad) << "\" y=\""
        << fmt(top + (static_cast<double>(t) + 0.5) * kCell) << "\">"
        << xml_escape(target_tokens[t]) << "</text>\n";
  }
  svg << "</g>\n<g class=\"cells\" stroke=\"white\" stroke-width=\"0.5\">\n";
  for (int64_t t = 0; t < n_tgt; ++t) {
    for (int64_t s = 0; s < n_src; ++s) {
      double v = acc[t][s];
      if (!std::isfinite(v)) v = 0;
      std::ostringstream value;
      value << std::fixed << std::setprecision(3) << v;
      svg << "<rect x=\"" << fmt(left + static_cast<double>(s) * kCell) << "\" y=\""
          << fmt(top + static_cast<double>(t) * kCell) << "\" width=\"" << kCell << "\" height=\""
          << kCell << "\" fill=\"" << viridis(v) << "\"><title>" << xml_escape(target_tokens[t])
          << " \xE2\x86\x90 " << xml_escape(source_tokens[s]) << ": " << value.str()
          << "</title></rect>\n";
    }
  }
  // Colour bar: 0 at the bottom, 1 at the top.
  const double bar_h = std::max(grid_h, 5 * kCell);
  svg << "</g>\n<g class=\"legend\">\n";
  constexpr int kSteps = 20;
  for (int i = 0; i < kSteps; ++i) {
    const double y = top + bar_h * (1.0 - static_cast<double>(i + 1) / kSteps);
    svg << "<rect x=\"" << fmt(legend_x) << "\" y=\"" << fmt(y) << "\" width=\"12\" height=\""
        << fmt(bar_h / kSteps + 0.5) << "\" fill=\"" << viridis((i + 0.5) / kSteps) << "\"/>\n";
  }
  svg << "<text x=\"" << fmt(legend_x + 16) << "\" y=\"" << fmt(top + kFontSize / 2)
      << "\">1</text>\n"
      << "<text x=\"" << fmt(legend_x + 16) << "\" y=\"" << fmt(top + bar_h) << "\">0</text>\n"
      << "</g>\n</svg>\n";

  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw Error(cat("cannot write attention heat map '", path, "': ", std::strerror(errno)));
  out << svg.str();
  out.flush();
  if (!out) throw Error(cat("cannot write attention heat map '", path, "' (disk full?)"));
}

std::string numbered_path(const std::string& path, int64_t n) {
  const std::filesystem::path p(path);
  const std::string stem = p.stem().string(), ext = p.extension().string();
  const std::filesystem::path name = cat(stem, "-", n, ext);
  return p.has_parent_path() ? (p.parent_path() / name).string() : name.string();
}

}  // namespace zoo
