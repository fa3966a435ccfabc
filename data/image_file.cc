#include "data/image_file.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "core/error.h"
#include "core/input_file.h"

// The one translation unit that compiles stb_image. Only the formats zoo documents are
// built in, which keeps the rarely used (and less hardened) decoders out.
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_PNM
#include <stb_image.h>

namespace zoo::data {

namespace {
uint64_t max_image_bytes() { return std::min<uint64_t>(number_from_env("ZOO_MAX_IMAGE_MIB", 256) << 20, INT_MAX); }
}  // namespace

torch::Tensor load_image(const std::string& path, int64_t channels, int64_t height,
                         int64_t width) {
  const std::string file = read_input_file(path, "image", max_image_bytes(), "set ZOO_MAX_IMAGE_MIB to raise it");
  return decode_image(file, path, channels, height, width);
}

torch::Tensor decode_image(const std::string& file, const std::string& path, int64_t channels, int64_t height,
                           int64_t width) {
  if (channels != 1 && channels != 3 && channels != 4) {
    throw Error(cat(path, ": cannot load as ", channels, " channels (use 1, 3 or 4)"));
  }
  if (height < 0 || width < 0) {
    throw Error(cat(path, ": bad target size ", height, "x", width));
  }
  if (file.size() > max_image_bytes())
    throw Error(cat(path, ": ", file.size(), " bytes, above the image cap of ", max_image_bytes(),
                    " (set ZOO_MAX_IMAGE_MIB to raise it)"));
  const auto* bytes = reinterpret_cast<const unsigned char*>(file.data());
  if (file.empty()) throw Error(cat(path, ": empty file, not an image"));

  int w = 0, h = 0, file_channels = 0;
  // The header's size first: a small file can claim a huge image (a 30000x30000 PNG of 875 KB
  // decodes to 5.4 GB).
  if (stbi_info_from_memory(bytes, static_cast<int>(file.size()), &w, &h, &file_channels)) {
    const uint64_t cap = number_from_env("ZOO_MAX_IMAGE_MEGAPIXELS", 100);
    if (static_cast<uint64_t>(w) * static_cast<uint64_t>(h) > cap * 1000000)
      throw Error(cat(path, ": ", w, "x", h, " pixels, above the cap of ", cap,
                      " megapixels (set ZOO_MAX_IMAGE_MEGAPIXELS to raise it)"));
  }
  std::unique_ptr<unsigned char, void (*)(void*)> pixels(
      stbi_load_from_memory(bytes, static_cast<int>(file.size()), &w, &h, &file_channels, static_cast<int>(channels)),
      stbi_image_free);
  if (!pixels) {
    const char* reason = stbi_failure_reason();
    throw Error(cat(path, ": cannot decode image (stb_image: ", reason ? reason : "unknown",
                    "); supported formats are PNG, JPEG, BMP and PGM/PPM"));
  }
  // stb returns rows of interleaved channels (H, W, C); zoo wants (C, H, W). clone()
  // always copies (contiguous() would not for one channel), so `pixels` may be freed.
  torch::Tensor image = torch::from_blob(pixels.get(), {h, w, channels}, torch::kUInt8)
                            .permute({2, 0, 1})
                            .clone(torch::MemoryFormat::Contiguous);
  const int64_t out_h = height > 0 ? height : h;
  const int64_t out_w = width > 0 ? width : w;
  if (out_h == h && out_w == w) return image;

  namespace F = torch::nn::functional;
  const bool shrinking = out_h < h || out_w < w;
  const torch::Tensor resized =
      F::interpolate(image.unsqueeze(0).to(torch::kFloat),
                     F::InterpolateFuncOptions()
                         .size(std::vector<int64_t>{out_h, out_w})
                         .mode(torch::kBilinear)
                         .align_corners(false)
                         .antialias(shrinking));
  return resized.squeeze(0).round().clamp(0, 255).to(torch::kUInt8);
}

}  // namespace zoo::data
