#pragma once
// Reading and writing the safetensors format (https://github.com/huggingface/safetensors):
//
//   [8 bytes: N, little-endian u64][N bytes: JSON header, space-padded][raw tensor data]
//
// The header maps each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the start of the data section) plus an optional "__metadata__"
// object of string -> string. Data is little-endian, C-contiguous, and the tensors tile
// the data section exactly: no gaps, no overlaps, no trailing bytes.
//
// load() treats the file as hostile: every inconsistency is a zoo::Error naming the file
// (and the tensor, where there is one), and nothing is allocated before the header has
// been checked against the file's real size.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace zoo::safetensors {

/// The contents of a safetensors file. Tensors are on the CPU and own their memory.
struct File {
  std::map<std::string, torch::Tensor> tensors;
  std::map<std::string, std::string> metadata;
};

/// One tensor as described by a file's header (no data).
struct TensorInfo {
  std::string name;
  torch::Dtype dtype = torch::kFloat32;
  std::vector<int64_t> shape;
  uint64_t begin = 0;  // data_offsets, relative to the start of the data section
  uint64_t end = 0;
};

/// Writes `tensors` (any device, any layout; copied to the CPU and made contiguous) and
/// `metadata` to `path`. Supported dtypes: float64/32/16, bfloat16, int64/32/16/8, uint8,
/// bool. Tensors are laid out by decreasing element size (so every tensor is aligned to its
/// element size in the file), keeping the given order otherwise. The file is written to
/// `path + ".tmp"` and renamed into place, so `path` never holds a partial file.
/// Throws zoo::Error on a duplicate or reserved name, an unsupported dtype, or an I/O error.
void save(const std::string& path,
          const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
          const std::map<std::string, std::string>& metadata = {});

/// Reads and validates a whole file. Throws zoo::Error on anything malformed.
File load(const std::string& path);

/// Reads and validates only the header (the same checks as load(), without the data).
/// Tensors are returned in file order (by data offset).
std::vector<TensorInfo> read_header(const std::string& path,
                                    std::map<std::string, std::string>* metadata = nullptr);

/// The names of the tensors in `path`, sorted.
std::vector<std::string> keys(const std::string& path);

/// "F32", "BF16", ...; throws zoo::Error for dtypes the format cannot hold.
std::string dtype_name(torch::Dtype dtype);

}  // namespace zoo::safetensors
