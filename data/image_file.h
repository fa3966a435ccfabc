#pragma once
// Decoding single image files (PNG, JPEG, BMP, PGM/PPM) into uint8 tensors, e.g. for
// `zoo classify photo.png`. Decoding is done by stb_image.
#include <cstdint>
#include <string>

#include <torch/torch.h>

namespace zoo::data {

/// Decodes the image at `path` into a uint8 (channels, height, width) tensor.
/// channels is 1 (gray), 3 (RGB) or 4 (RGBA): colour becomes gray by luminance,
/// gray is repeated into RGB, a missing alpha channel is opaque. When the file's size
/// differs from height x width the image is resized bilinearly (antialiased when
/// shrinking); height or width 0 keeps the file's size in that dimension. Throws
/// zoo::Error naming the file and the decoder's reason when it cannot be read.
torch::Tensor load_image(const std::string& path, int64_t channels, int64_t height,
                         int64_t width);
/// The same from a file's bytes (`file`, at most ZOO_MAX_IMAGE_MIB), named `name` in errors.
torch::Tensor decode_image(const std::string& file, const std::string& name, int64_t channels, int64_t height,
                           int64_t width);

}  // namespace zoo::data
