#include "io/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "core/error.h"

namespace zoo::safetensors {
namespace {

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "safetensors data is little-endian; big-endian hosts would need byte swapping");

using Json = nlohmann::json;
using OrderedJson = nlohmann::ordered_json;

// The reference implementation's limit; anything larger is corrupt or hostile.
constexpr uint64_t kMaxHeaderSize = 100'000'000;
// A real header nests three deep (header -> tensor entry -> shape). The parser builds a
// DOM, so refuse pathological nesting ("[[[[...") before it allocates a node per bracket.
constexpr int kMaxHeaderDepth = 8;
constexpr size_t kMaxNameInMessage = 200;

struct DtypeInfo {
  const char* name;
  torch::Dtype dtype;
  uint64_t size;
};

constexpr DtypeInfo kDtypes[] = {
    {"F64", torch::kFloat64, 8},   {"F32", torch::kFloat32, 4}, {"F16", torch::kFloat16, 2},
    {"BF16", torch::kBFloat16, 2}, {"I64", torch::kInt64, 8},   {"I32", torch::kInt32, 4},
    {"I16", torch::kInt16, 2},     {"I8", torch::kInt8, 1},     {"U8", torch::kUInt8, 1},
    {"BOOL", torch::kBool, 1},
};

const DtypeInfo* find_dtype(torch::Dtype dtype) {
  for (const auto& d : kDtypes) {
    if (d.dtype == dtype) return &d;
  }
  return nullptr;
}

const DtypeInfo* find_dtype(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

std::string supported_dtypes() {
  std::string s;
  for (const auto& d : kDtypes) s += cat(s.empty() ? "" : ", ", d.name);
  return s;
}

// A name from a (possibly hostile) file, safe to put in a one-line message: JSON-quoted
// (control characters escaped, invalid UTF-8 replaced) and truncated.
std::string quote(const std::string& name) {
  const bool cut = name.size() > kMaxNameInMessage;
  std::string q = Json(cut ? name.substr(0, kMaxNameInMessage) : name)
                      .dump(-1, ' ', false, Json::error_handler_t::replace);
  if (cut) q.insert(q.size() - 1, "...");
  return q;
}

// A JSON value from the file, for a message: compact and truncated.
std::string brief(const Json& value) {
  std::string s = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > kMaxNameInMessage) s = s.substr(0, kMaxNameInMessage) + "...";
  return s;
}

uint64_t read_le64(const unsigned char* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

void read_exact(std::ifstream& in, void* dst, uint64_t n, const std::string& path,
                const char* what) {
  if (n == 0) return;
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n));
  if (static_cast<uint64_t>(in.gcount()) != n) {
    throw Error(cat(path, ": unexpected end of file while reading ", what,
                    " (was the file truncated or modified while loading?)"));
  }
}

void check_nesting(const std::string& path, const std::string& text) {
  int depth = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char c : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > kMaxHeaderDepth) {
        throw Error(cat(path, ": header nests JSON deeper than ", kMaxHeaderDepth,
                        " levels; not a safetensors header"));
      }
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
}

// Parses one header entry and checks it on its own: types, dtype, shape, byte size and
// that its data lies inside the data section (`data_size` bytes).
TensorInfo parse_entry(const std::string& path, const std::string& name, const Json& entry,
                       uint64_t data_size) {
  const std::string where = cat(path, ": tensor ", quote(name));
  if (!entry.is_object()) throw Error(cat(where, ": header entry is not a JSON object"));
  auto field = [&](const char* key) -> const Json& {
    const auto it = entry.find(key);
    if (it == entry.end()) throw Error(cat(where, ": header entry has no \"", key, "\""));
    return *it;
  };

  TensorInfo info;
  info.name = name;

  const Json& dtype = field("dtype");
  if (!dtype.is_string()) throw Error(cat(where, ": \"dtype\" is not a string"));
  const DtypeInfo* d = find_dtype(dtype.get_ref<const std::string&>());
  if (!d) {
    throw Error(cat(where, ": unsupported dtype ", quote(dtype.get_ref<const std::string&>()),
                    " (supported: ", supported_dtypes(), ")"));
  }
  info.dtype = d->dtype;

  const Json& shape = field("shape");
  if (!shape.is_array()) throw Error(cat(where, ": \"shape\" is not an array"));
  uint64_t numel = 1;
  info.shape.reserve(shape.size());
  for (size_t i = 0; i < shape.size(); ++i) {
    if (!shape[i].is_number_unsigned()) {
      throw Error(cat(where, ": shape[", i, "] is not a non-negative integer"));
    }
    const uint64_t dim = shape[i].get<uint64_t>();
    if (dim > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(numel, dim, &numel)) {
      throw Error(cat(where, ": shape ", brief(shape), " overflows the element count"));
    }
    info.shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, d->size, &nbytes)) {
    throw Error(cat(where, ": shape ", brief(shape), " overflows the byte size"));
  }

  const Json& offsets = field("data_offsets");
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    throw Error(cat(where, ": \"data_offsets\" is not [begin, end] with non-negative integers"));
  }
  info.begin = offsets[0].get<uint64_t>();
  info.end = offsets[1].get<uint64_t>();
  if (info.begin > info.end) {
    throw Error(cat(where, ": data_offsets [", info.begin, ", ", info.end, "] begin after end"));
  }
  if (info.end > data_size) {
    throw Error(cat(where, ": data_offsets [", info.begin, ", ", info.end,
                    "] end beyond the data section (", data_size, " bytes)"));
  }
  if (info.end - info.begin != nbytes) {
    throw Error(cat(where, ": data_offsets [", info.begin, ", ", info.end, "] hold ",
                    info.end - info.begin, " bytes but ", d->name, " shape ", brief(shape),
                    " needs ", nbytes));
  }
  return info;
}

struct Header {
  std::vector<TensorInfo> tensors;  // sorted by data offset
  std::map<std::string, std::string> metadata;
};

// Opens `path`, reads and validates the header; leaves `in` at the start of the data.
Header read_header_from(const std::string& path, std::ifstream& in) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw Error(cat(path, ": no such file"));
  if (!std::filesystem::is_regular_file(status)) throw Error(cat(path, ": not a regular file"));
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  if (ec) throw Error(cat(path, ": cannot read the file size: ", ec.message()));
  in.open(path, std::ios::binary);
  if (!in) throw Error(cat(path, ": cannot open for reading: ", std::strerror(errno)));

  if (file_size < 8) {
    throw Error(cat(path, ": not a safetensors file: ", file_size,
                    " bytes is shorter than the 8-byte header size"));
  }
  unsigned char size_bytes[8];
  read_exact(in, size_bytes, 8, path, "the header size");
  const uint64_t n = read_le64(size_bytes);
  if (n > kMaxHeaderSize) {
    throw Error(cat(path, ": header size ", n, " bytes exceeds the ", kMaxHeaderSize,
                    "-byte limit (corrupt or not a safetensors file)"));
  }
  if (n > file_size - 8) {
    throw Error(cat(path, ": header size ", n, " bytes runs past the end of the file (", file_size,
                    " bytes; truncated?)"));
  }
  const uint64_t data_size = file_size - 8 - n;

  std::string text(n, '\0');
  read_exact(in, text.data(), n, path, "the header");
  check_nesting(path, text);
  Json root;
  try {
    root = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw Error(cat(path, ": header is not valid JSON (error at byte ", e.byte, ")"));
  } catch (const Json::exception&) {  // e.g. out_of_range: a number beyond double range
    throw Error(cat(path, ": header is not valid JSON (number out of range)"));
  }
  if (!root.is_object()) throw Error(cat(path, ": header is not a JSON object"));

  Header header;
  for (const auto& [key, value] : root.items()) {
    if (key == "__metadata__") {
      if (value.is_null()) continue;
      if (!value.is_object()) throw Error(cat(path, ": \"__metadata__\" is not a JSON object"));
      for (const auto& [mkey, mvalue] : value.items()) {
        if (!mvalue.is_string()) {
          throw Error(cat(path, ": __metadata__ value of key ", quote(mkey), " is not a string"));
        }
        header.metadata.emplace(mkey, mvalue.get<std::string>());
      }
      continue;
    }
    header.tensors.push_back(parse_entry(path, key, value, data_size));
  }

  // Like the reference implementation: ordered by offset, the tensors must tile the data
  // section exactly, from 0 to its end, without gaps or overlaps.
  auto& ts = header.tensors;
  std::sort(ts.begin(), ts.end(), [](const TensorInfo& a, const TensorInfo& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  uint64_t pos = 0;
  const TensorInfo* prev = nullptr;
  for (const auto& t : ts) {
    if (t.begin < pos) {
      throw Error(cat(path, ": tensor ", quote(t.name), " data_offsets [", t.begin, ", ", t.end,
                      "] overlap tensor ", quote(prev->name), " [", prev->begin, ", ", prev->end,
                      "]"));
    }
    if (t.begin > pos) {
      throw Error(cat(path, ": gap in the data section: bytes [", pos, ", ", t.begin,
                      ") before tensor ", quote(t.name), " belong to no tensor"));
    }
    pos = t.end;
    prev = &t;
  }
  if (pos != data_size) {
    throw Error(cat(path, ": data section not covered: its last ", data_size - pos, " of ",
                    data_size, " bytes belong to no tensor (trailing data or missing entry)"));
  }
  return header;
}

}  // namespace

std::string dtype_name(torch::Dtype dtype) {
  const DtypeInfo* d = find_dtype(dtype);
  if (!d) {
    throw Error(
        cat("safetensors cannot store dtype ", dtype, " (supported: ", supported_dtypes(), ")"));
  }
  return d->name;
}

void save(const std::string& path,
          const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
          const std::map<std::string, std::string>& metadata) {
  struct Item {
    const std::string* name;
    const torch::Tensor* tensor;
    const DtypeInfo* dtype;
    uint64_t nbytes;
  };
  std::vector<Item> items;
  items.reserve(tensors.size());
  std::set<std::string> seen;
  for (const auto& [name, tensor] : tensors) {
    const std::string where = cat(path, ": tensor ", quote(name));
    if (name == "__metadata__") {
      throw Error(cat(where, ": the name is reserved by the safetensors format"));
    }
    if (!seen.insert(name).second) throw Error(cat(where, ": duplicate tensor name"));
    if (!tensor.defined()) throw Error(cat(where, ": tensor is undefined"));
    if (tensor.layout() != torch::kStrided) {
      throw Error(cat(where, ": only dense tensors can be saved (layout ", tensor.layout(), ")"));
    }
    const DtypeInfo* d = find_dtype(tensor.scalar_type());
    if (!d) {
      throw Error(cat(where, ": safetensors cannot store dtype ", tensor.scalar_type(),
                      " (supported: ", supported_dtypes(), ")"));
    }
    items.push_back({&name, &tensor, d, static_cast<uint64_t>(tensor.numel()) * d->size});
  }
  // Largest elements first: with the data section starting 8-aligned, every tensor's data
  // is then aligned to its element size.
  std::stable_sort(items.begin(), items.end(),
                   [](const Item& a, const Item& b) { return a.dtype->size > b.dtype->size; });

  OrderedJson header = OrderedJson::object();
  if (!metadata.empty()) {
    OrderedJson meta = OrderedJson::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const auto& item : items) {
    OrderedJson entry = OrderedJson::object();
    entry["dtype"] = item.dtype->name;
    entry["shape"] = item.tensor->sizes().vec();
    entry["data_offsets"] = OrderedJson::array({offset, offset + item.nbytes});
    header[*item.name] = std::move(entry);
    offset += item.nbytes;
  }
  std::string text;
  try {
    text = header.dump(-1, ' ', false, OrderedJson::error_handler_t::strict);
  } catch (const OrderedJson::exception&) {
    throw Error(cat(path, ": tensor names and metadata must be valid UTF-8"));
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N stays a multiple of 8

  const std::string tmp = path + ".tmp";
  struct RemoveUnlessCommitted {
    const std::string& file;
    bool committed = false;
    ~RemoveUnlessCommitted() {
      if (committed) return;
      std::error_code ec;
      std::filesystem::remove(file, ec);
    }
  } guard{tmp};

  std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
  if (!out) throw Error(cat(tmp, ": cannot open for writing: ", std::strerror(errno)));
  char size_bytes[8];
  for (int i = 0; i < 8; ++i) size_bytes[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  out.write(size_bytes, 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& item : items) {
    if (item.nbytes == 0) continue;
    // One tensor at a time on the CPU, so saving a GPU model never holds a full CPU copy.
    const torch::Tensor cpu = item.tensor->detach().to(torch::kCPU).contiguous();
    out.write(static_cast<const char*>(cpu.data_ptr()), static_cast<std::streamsize>(item.nbytes));
    if (!out) break;
  }
  out.flush();
  if (!out) throw Error(cat(tmp, ": write failed (disk full?): ", std::strerror(errno)));
  out.close();
  if (out.fail()) throw Error(cat(tmp, ": closing the file failed: ", std::strerror(errno)));
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error(cat(path, ": cannot move ", tmp, " into place: ", ec.message()));
  guard.committed = true;
}

std::vector<TensorInfo> read_header(const std::string& path,
                                    std::map<std::string, std::string>* metadata) {
  std::ifstream in;
  Header header = read_header_from(path, in);
  if (metadata) *metadata = std::move(header.metadata);
  return std::move(header.tensors);
}

std::vector<std::string> keys(const std::string& path) {
  std::vector<std::string> names;
  for (const auto& t : read_header(path)) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  return names;
}

File load(const std::string& path) {
  std::ifstream in;
  Header header = read_header_from(path, in);
  File file;
  file.metadata = std::move(header.metadata);
  // Sizes are validated against the real file size above, so these allocations are
  // bounded by the file. Tensors are read in offset order, straight into their own memory.
  for (const auto& info : header.tensors) {
    const bool is_bool = info.dtype == torch::kBool;
    torch::Tensor t = torch::empty(info.shape, torch::dtype(is_bool ? torch::kUInt8 : info.dtype));
    read_exact(in, t.data_ptr(), info.end - info.begin, path,
               cat("tensor ", quote(info.name)).c_str());
    // A bool byte other than 0/1 is undefined behaviour in torch: normalise.
    if (is_bool) t = t.ne(0);
    file.tensors.emplace(info.name, std::move(t));
  }
  return file;
}

}  // namespace zoo::safetensors
