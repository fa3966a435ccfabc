#include "data/images.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iterator>
#include <sstream>

#include "core/error.h"

namespace zoo::data {
namespace {

namespace fs = std::filesystem;

constexpr int64_t kCifarSide = 32;
constexpr int64_t kCifarImageBytes = 3 * kCifarSide * kCifarSide;
constexpr int64_t kCifarRecordBytes = 1 + kCifarImageBytes;

std::string hex(uint64_t value, int digits) {
  std::ostringstream os;
  os << "0x" << std::hex << std::setw(digits) << std::setfill('0') << value;
  return os.str();
}

std::string dims_string(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

// Whole file as bytes; zoo::Error naming the file when it cannot be read.
std::string read_bytes(const std::string& path) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw Error(cat(path, ": is a directory, expected a file"));
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) throw Error(cat(path, ": cannot open: ", std::strerror(errno)));
  const std::streamoff size = in.tellg();
  std::string bytes;
  if (size >= 0) {  // a regular file: one read
    bytes.resize(static_cast<size_t>(size));
    in.seekg(0);
    in.read(bytes.data(), size);
    if (in.gcount() != size) throw Error(cat(path, ": read error: ", std::strerror(errno)));
  } else {  // a pipe or similar
    in.clear();
    bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (in.bad()) throw Error(cat(path, ": read error: ", std::strerror(errno)));
  }
  return bytes;
}

bool is_gzip(const std::string& bytes) {
  return bytes.size() >= 2 && static_cast<uint8_t>(bytes[0]) == 0x1f &&
         static_cast<uint8_t>(bytes[1]) == 0x8b;
}

// Decompresses a gzip file (one or more concatenated members) held in memory.
std::string gunzip(const std::string& in, const std::string& path) {
  // The last four bytes hold the uncompressed size mod 2^32: a good first guess.
  size_t guess = 1 << 16;
  if (in.size() >= 18) {
    const auto* t = reinterpret_cast<const uint8_t*>(in.data() + in.size() - 4);
    const uint64_t isize = t[0] | (t[1] << 8) | (t[2] << 16) | (uint64_t{t[3]} << 24);
    // Trust it only as far as a plausible ratio (the trailer may be garbage in a bad
    // file); beyond that the buffer grows by doubling.
    if (isize / 16 <= in.size()) guess = std::max<size_t>(guess, isize + 1);
  }
  std::string out(guess, '\0');

  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) throw Error(cat(path, ": zlib initialisation failed"));
  struct Cleanup {
    z_stream* zs;
    ~Cleanup() { inflateEnd(zs); }
  } cleanup{&zs};

  size_t in_pos = 0;   // bytes of `in` handed to zlib so far
  size_t out_pos = 0;  // bytes of `out` filled so far
  for (;;) {
    if (zs.avail_in == 0 && in_pos < in.size()) {
      const size_t n = std::min<size_t>(in.size() - in_pos, UINT_MAX);
      zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data() + in_pos));
      zs.avail_in = static_cast<uInt>(n);
      in_pos += n;
    }
    if (out_pos == out.size()) out.resize(out.size() * 2);
    const size_t room = std::min<size_t>(out.size() - out_pos, UINT_MAX);
    zs.next_out = reinterpret_cast<Bytef*>(&out[out_pos]);
    zs.avail_out = static_cast<uInt>(room);
    const int ret = inflate(&zs, Z_NO_FLUSH);
    out_pos += room - zs.avail_out;
    if (ret == Z_STREAM_END) {
      const size_t left = zs.avail_in + (in.size() - in_pos);
      if (left == 0) break;
      // Another gzip member may follow (as `cat a.gz b.gz` makes); anything else is junk.
      const size_t at = in.size() - left;
      if (left < 2 || static_cast<uint8_t>(in[at]) != 0x1f ||
          static_cast<uint8_t>(in[at + 1]) != 0x8b) {
        throw Error(cat(path, ": ", left, " bytes of garbage after the end of the gzip data"));
      }
      inflateReset(&zs);
      continue;
    }
    if (ret == Z_OK) continue;
    if (ret == Z_BUF_ERROR && zs.avail_in == 0 && in_pos == in.size()) {
      throw Error(cat(path, ": truncated gzip data (the file ends before the compressed stream"
                            " does; re-download it)"));
    }
    if (ret == Z_BUF_ERROR) continue;  // no room in `out`: grown at the top of the loop
    if (ret == Z_MEM_ERROR) throw Error(cat(path, ": out of memory while decompressing"));
    throw Error(cat(path, ": corrupt gzip data (", zs.msg ? zs.msg : "unknown zlib error",
                    "); re-download it"));
  }
  out.resize(out_pos);
  return out;
}

// Names the IDX file of one split that exists in `dir`, trying the usual spellings.
std::string find_idx(const std::string& dir, const std::string& prefix, const std::string& kind,
                     const std::string& dotted) {
  const std::vector<std::string> names = {
      prefix + "-" + kind + "-ubyte",
      prefix + "-" + kind + "-ubyte.gz",
      prefix + "-" + dotted + "-ubyte",
      prefix + "-" + dotted + "-ubyte.gz",
  };
  std::error_code ec;
  for (const auto& name : names) {
    const fs::path p = fs::path(dir) / name;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  throw Error(cat(dir, ": missing ", names[0], "[.gz] (expected the MNIST folder layout)"));
}

void check_labels(const torch::Tensor& labels, size_t num_classes, const std::string& path) {
  if (labels.numel() == 0) return;
  const int64_t max_label = labels.max().item<int64_t>();
  if (max_label >= static_cast<int64_t>(num_classes)) {
    const torch::Tensor bad = (labels >= static_cast<int64_t>(num_classes)).nonzero();
    const int64_t at = bad[0][0].item<int64_t>();
    throw Error(cat(path, ": label ", labels[at].item<int64_t>(), " of item ", at,
                    " is out of range for ", num_classes, " classes"));
  }
}

std::string trim(const std::string& s) {
  const char* ws = " \t\r\n";
  const size_t b = s.find_first_not_of(ws);
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(ws) - b + 1);
}

}  // namespace

torch::Tensor read_idx(const std::string& path) {
  std::string bytes = read_bytes(path);
  const bool gz = is_gzip(bytes);
  if (gz) bytes = gunzip(bytes, path);
  const char* what = gz ? " (decompressed)" : "";
  const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());

  if (bytes.size() < 4) {
    throw Error(cat(path, ": too short for an IDX header (", bytes.size(), " bytes", what, ")"));
  }
  const uint32_t magic = (uint32_t{b[0]} << 24) | (b[1] << 16) | (b[2] << 8) | b[3];
  if (b[0] != 0 || b[1] != 0 || b[3] == 0) {
    throw Error(cat(path, ": bad magic number ", hex(magic, 8),
                    ", not an IDX file (expected e.g. 0x00000803 for images)"));
  }
  if (b[2] != 0x08) {
    throw Error(cat(path, ": unsupported IDX element type ", hex(b[2], 2),
                    " (only unsigned bytes, type 0x08, are supported)"));
  }
  const size_t ndims = b[3];
  const size_t header = 4 + 4 * ndims;
  if (bytes.size() < header) {
    throw Error(cat(path, ": truncated IDX header (", ndims, " dimensions need ", header,
                    " bytes, the file has ", bytes.size(), what, ")"));
  }
  std::vector<int64_t> dims(ndims);
  uint64_t count = 1;
  bool overflow = false;
  for (size_t i = 0; i < ndims; ++i) {
    const uint8_t* d = b + 4 + 4 * i;
    dims[i] = (int64_t{d[0]} << 24) | (d[1] << 16) | (d[2] << 8) | d[3];
    // A product beyond the file's size is reported as truncation; avoid overflowing first.
    if (dims[i] != 0 && count > (uint64_t{1} << 62) / static_cast<uint64_t>(dims[i])) {
      overflow = true;
    }
    count *= static_cast<uint64_t>(dims[i]);
  }
  const uint64_t have = bytes.size() - header;
  if (overflow || count > have) {
    throw Error(cat(path, ": truncated IDX data: dimensions ", dims_string(dims), " need ",
                    overflow ? std::string("more") : std::to_string(count), " bytes, the file has ",
                    have, what, " after the header"));
  }
  if (count < have) {
    throw Error(cat(path, ": ", have - count, " unexpected bytes", what,
                    " after the IDX data (dimensions ", dims_string(dims),
                    "); the header does not match the file"));
  }
  torch::Tensor t = torch::empty(dims, torch::kUInt8);
  if (count) std::memcpy(t.data_ptr<uint8_t>(), b + header, count);
  return t;
}

ImageSet load_mnist_like(const std::string& dir, const std::string& split,
                         std::vector<std::string> class_names) {
  if (split != "train" && split != "test") {
    throw Error(cat("unknown split '", split, "' for ", dir, " (use train or test)"));
  }
  if (class_names.empty()) throw Error(cat(dir, ": no class names given"));
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(cat(dir, ": no such directory"));
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string images_path = find_idx(dir, prefix, "images-idx3", "images.idx3");
  const std::string labels_path = find_idx(dir, prefix, "labels-idx1", "labels.idx1");

  ImageSet set;
  set.images = read_idx(images_path);
  if (set.images.dim() == 3) {
    set.images = set.images.unsqueeze(1);
  } else if (set.images.dim() != 4) {
    throw Error(cat(images_path, ": expected images of 3 dimensions (N, H, W), got ",
                    dims_string(set.images.sizes().vec())));
  }
  torch::Tensor labels = read_idx(labels_path);
  if (labels.dim() != 1) {
    throw Error(cat(labels_path, ": expected labels of 1 dimension (N), got ",
                    dims_string(labels.sizes().vec())));
  }
  if (labels.size(0) != set.images.size(0)) {
    throw Error(cat(labels_path, ": ", labels.size(0), " labels but ", images_path, " has ",
                    set.images.size(0), " images"));
  }
  set.labels = labels.to(torch::kLong);
  check_labels(set.labels, class_names.size(), labels_path);
  set.class_names = std::move(class_names);
  return set;
}

std::vector<std::string> fashion_mnist_classes() {
  return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
          "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
}

std::vector<std::string> mnist_classes() {
  return {"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"};
}

std::vector<std::string> cifar10_classes() {
  return {"airplane", "automobile", "bird", "cat", "deer",
          "dog",      "frog",       "horse", "ship", "truck"};
}

ImageSet load_cifar10(const std::string& dir, const std::string& split) {
  if (split != "train" && split != "test") {
    throw Error(cat("unknown split '", split, "' for ", dir, " (use train or test)"));
  }
  std::error_code ec;
  fs::path base = dir;
  const std::string first = split == "train" ? "data_batch_1.bin" : "test_batch.bin";
  if (!fs::exists(base / first, ec) && fs::is_directory(base / "cifar-10-batches-bin", ec)) {
    base /= "cifar-10-batches-bin";
  }
  if (!fs::is_directory(base, ec)) throw Error(cat(dir, ": no such directory"));

  std::vector<std::string> files;
  if (split == "train") {
    for (int i = 1; i <= 5; ++i) files.push_back((base / cat("data_batch_", i, ".bin")).string());
  } else {
    files.push_back((base / "test_batch.bin").string());
  }
  // Sizes first, so that the whole split is allocated once.
  int64_t total = 0;
  for (const auto& f : files) {
    if (!fs::is_regular_file(f, ec)) {
      throw Error(cat(f, ": missing (expected the CIFAR-10 binary layout, cifar-10-batches-bin)"));
    }
    const auto size = static_cast<int64_t>(fs::file_size(f, ec));
    if (ec) throw Error(cat(f, ": cannot read its size: ", ec.message()));
    if (size == 0 || size % kCifarRecordBytes != 0) {
      throw Error(cat(f, ": size ", size, " bytes is not a positive multiple of ",
                      kCifarRecordBytes, " (1 label byte + 3x32x32 image bytes per record)"));
    }
    total += size / kCifarRecordBytes;
  }

  ImageSet set;
  set.class_names = cifar10_classes();
  const fs::path meta = base / "batches.meta.txt";
  if (fs::is_regular_file(meta, ec)) {
    std::vector<std::string> names;
    std::istringstream lines(read_bytes(meta.string()));
    for (std::string line; std::getline(lines, line);) {
      if (!trim(line).empty()) names.push_back(trim(line));
    }
    if (!names.empty()) set.class_names = std::move(names);
  }

  set.images = torch::empty({total, 3, kCifarSide, kCifarSide}, torch::kUInt8);
  set.labels = torch::empty({total}, torch::kLong);
  uint8_t* images = set.images.data_ptr<uint8_t>();
  int64_t* labels = set.labels.data_ptr<int64_t>();
  int64_t n = 0;
  for (const auto& f : files) {
    const std::string bytes = read_bytes(f);
    if (bytes.size() % kCifarRecordBytes != 0 || n + static_cast<int64_t>(bytes.size()) /
                                                        kCifarRecordBytes > total) {
      throw Error(cat(f, ": changed size while being read"));
    }
    const auto* b = reinterpret_cast<const uint8_t*>(bytes.data());
    const int64_t records = static_cast<int64_t>(bytes.size()) / kCifarRecordBytes;
    for (int64_t r = 0; r < records; ++r, ++n) {
      const uint8_t* rec = b + r * kCifarRecordBytes;
      if (rec[0] >= set.class_names.size()) {
        throw Error(cat(f, ": label ", int{rec[0]}, " of record ", r, " is out of range for ",
                        set.class_names.size(), " classes"));
      }
      labels[n] = rec[0];
      std::memcpy(images + n * kCifarImageBytes, rec + 1, kCifarImageBytes);
    }
  }
  if (n != total) throw Error(cat(base.string(), ": files changed size while being read"));
  return set;
}

torch::Tensor to_float_normalized(const torch::Tensor& u8, const std::vector<double>& mean,
                                  const std::vector<double>& std) {
  if (!u8.defined() || u8.scalar_type() != torch::kUInt8 || (u8.dim() != 3 && u8.dim() != 4)) {
    throw Error("to_float_normalized: expected uint8 images of shape (B, C, H, W) or (C, H, W)");
  }
  const int64_t channels = u8.size(u8.dim() - 3);
  auto per_channel = [&](const std::vector<double>& v, const char* name) {
    if (v.size() != 1 && static_cast<int64_t>(v.size()) != channels) {
      throw Error(cat("to_float_normalized: ", name, " has ", v.size(),
                      " values, expected 1 or one per channel (", channels, ")"));
    }
    return [&v](int64_t c) { return v.size() == 1 ? v[0] : v[c]; };
  };
  const auto m = per_channel(mean, "mean");
  const auto s = per_channel(std, "std");
  // (x / 255 - m) / s == x * scale + shift, one fused pass after the conversion.
  std::vector<float> scale(channels), shift(channels);
  for (int64_t c = 0; c < channels; ++c) {
    if (!(s(c) > 0)) throw Error(cat("to_float_normalized: std must be > 0, got ", s(c)));
    scale[c] = static_cast<float>(1.0 / (255.0 * s(c)));
    shift[c] = static_cast<float>(-m(c) / s(c));
  }
  const auto opts = torch::TensorOptions().dtype(torch::kFloat).device(u8.device());
  const torch::Tensor scale_t = torch::tensor(scale).view({channels, 1, 1}).to(opts);
  const torch::Tensor shift_t = torch::tensor(shift).view({channels, 1, 1}).to(opts);
  // In place on the fresh float copy (measurably faster than addcmul on LibTorch 1.13).
  return u8.to(torch::kFloat).mul_(scale_t).add_(shift_t);
}

torch::Tensor random_crop(const torch::Tensor& batch, int64_t padding, torch::Generator& gen) {
  if (!batch.defined() || batch.dim() != 4) {
    throw Error("random_crop: expected a batch of shape (B, C, H, W)");
  }
  if (padding < 0) throw Error(cat("random_crop: padding must be >= 0, got ", padding));
  const int64_t n = batch.size(0), c = batch.size(1), h = batch.size(2), w = batch.size(3);
  if (padding == 0 || n == 0) return batch;
  const int64_t hp = h + 2 * padding, wp = w + 2 * padding;
  const torch::Tensor padded =
      torch::constant_pad_nd(batch, {padding, padding, padding, padding}, 0);
  // Offsets of the window in the padded image: (row, col) per image, drawn on the CPU.
  const auto idx_opts = torch::TensorOptions().dtype(torch::kLong).device(batch.device());
  const torch::Tensor offsets = torch::randint(0, 2 * padding + 1, {n, 2}, gen).to(idx_opts);
  const torch::Tensor rows = offsets.select(1, 0).unsqueeze(1) + torch::arange(h, idx_opts);
  const torch::Tensor cols = offsets.select(1, 1).unsqueeze(1) + torch::arange(w, idx_opts);
  // Flat index into each padded plane, shared by all channels of an image.
  const torch::Tensor index =
      (rows.unsqueeze(2) * wp + cols.unsqueeze(1)).view({n, 1, h * w}).expand({n, c, h * w});
  return padded.reshape({n, c, hp * wp}).gather(2, index).view({n, c, h, w});
}

torch::Tensor random_hflip(const torch::Tensor& batch, double p, torch::Generator& gen) {
  if (!batch.defined() || batch.dim() != 4) {
    throw Error("random_hflip: expected a batch of shape (B, C, H, W)");
  }
  if (!(p >= 0.0 && p <= 1.0)) throw Error(cat("random_hflip: p must be in [0, 1], got ", p));
  const int64_t n = batch.size(0);
  if (n == 0) return batch;
  // One draw per image whatever p is, so the generator advances the same way.
  const torch::Tensor chosen = (torch::rand({n}, gen, torch::kDouble) < p).nonzero().squeeze(1);
  torch::Tensor out = batch.clone();
  if (chosen.numel() == 0) return out;
  const torch::Tensor index = chosen.to(batch.device());
  // Flip only the chosen images: cheaper than flipping all and selecting.
  out.index_copy_(0, index, batch.index_select(0, index).flip({3}));
  return out;
}

torch::Tensor random_erasing(const torch::Tensor& batch, double p, const std::vector<double>& fill,
                             torch::Generator& gen) {
  if (!batch.defined() || batch.dim() != 4 || !batch.device().is_cpu()) {
    throw Error("random_erasing: expected a CPU batch of shape (B, C, H, W)");
  }
  if (!(p >= 0.0 && p <= 1.0)) throw Error(cat("random_erasing: p must be in [0, 1], got ", p));
  const int64_t n = batch.size(0), c = batch.size(1), h = batch.size(2), w = batch.size(3);
  if (fill.size() != 1 && static_cast<int64_t>(fill.size()) != c)
    throw Error(cat("random_erasing: fill needs 1 or ", c, " values, got ", fill.size()));
  torch::Tensor out = batch.clone();
  if (n == 0) return out;
  constexpr int kTries = 10;  // torchvision's
  const double log_lo = std::log(0.3), log_hi = std::log(1 / 0.3), area = static_cast<double>(h * w);
  // Per image: the coin, then per try: area share, log aspect ratio, row and column offsets.
  const torch::Tensor u = torch::rand({n, 1 + 4 * kTries}, gen, torch::kDouble);
  const auto draws = u.accessor<double, 2>();
  for (int64_t i = 0; i < n; ++i) {
    if (!(draws[i][0] < p)) continue;
    for (int t = 0; t < kTries; ++t) {
      const double* d = &draws[i][1 + 4 * t];
      const double target = area * (0.02 + d[0] * (0.33 - 0.02));
      const double ratio = std::exp(log_lo + d[1] * (log_hi - log_lo));
      const auto eh = static_cast<int64_t>(std::lround(std::sqrt(target * ratio)));
      const auto ew = static_cast<int64_t>(std::lround(std::sqrt(target / ratio)));
      if (eh < 1 || ew < 1 || eh >= h || ew >= w) continue;
      const auto top = std::min(h - eh, static_cast<int64_t>(d[2] * static_cast<double>(h - eh + 1)));
      const auto left = std::min(w - ew, static_cast<int64_t>(d[3] * static_cast<double>(w - ew + 1)));
      for (int64_t ch = 0; ch < c; ++ch)
        out[i][ch].narrow(0, top, eh).narrow(1, left, ew).fill_(fill.size() == 1 ? fill[0] : fill[ch]);
      break;
    }
  }
  return out;
}

namespace {
// lambda ~ Beta(alpha, alpha) for every image, from two Gamma(alpha) draws each.
torch::Tensor beta_draws(int64_t n, double alpha, torch::Generator& gen) {
  const torch::Tensor g = at::_standard_gamma(torch::full({n, 2}, alpha, torch::kDouble), gen);
  const torch::Tensor sum = g.sum(1);
  return torch::where(sum > 0, g.select(1, 0) / sum, torch::full_like(sum, 0.5));
}
}  // namespace

MixedImages mix_images(const torch::Tensor& batch, const MixOptions& o, torch::Generator& gen) {
  if (!batch.defined() || batch.dim() != 4 || !batch.device().is_cpu() || !batch.is_floating_point())
    throw Error("mix_images: expected a float CPU batch of shape (B, C, H, W)");
  if (!(o.mixup_alpha >= 0 && o.cutmix_alpha >= 0 && o.prob >= 0 && o.prob <= 1))
    throw Error(cat("mix_images: alphas must be >= 0 and prob in [0, 1], got ", o.mixup_alpha, ", ", o.cutmix_alpha,
                    ", ", o.prob));
  const int64_t n = batch.size(0), h = batch.size(2), w = batch.size(3);
  MixedImages out{batch.clone(), torch::ones({n}, torch::kFloat)};
  if (n == 0 || (o.mixup_alpha == 0 && o.cutmix_alpha == 0)) return out;
  // Per image: the coin, the choice, the box's centre row and column; then the Beta draws.
  const torch::Tensor u = torch::rand({n, 4}, gen, torch::kDouble);
  const torch::Tensor mix_lam = o.mixup_alpha > 0 ? beta_draws(n, o.mixup_alpha, gen).contiguous() : torch::Tensor();
  const torch::Tensor cut_lam = o.cutmix_alpha > 0 ? beta_draws(n, o.cutmix_alpha, gen).contiguous() : torch::Tensor();
  const auto d = u.accessor<double, 2>();
  const double* mix = mix_lam.defined() ? mix_lam.data_ptr<double>() : nullptr;
  const double* cut_share = cut_lam.defined() ? cut_lam.data_ptr<double>() : nullptr;
  float* lambda = out.lambda.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) {
    if (!(d[i][0] < o.prob)) continue;
    const torch::Tensor partner = batch[n - 1 - i];
    const bool cut = o.mixup_alpha == 0 || (o.cutmix_alpha > 0 && d[i][1] < 0.5);
    if (!cut) {
      const double lam = mix[i];
      out.images[i].mul_(lam).add_(partner, 1 - lam);
      lambda[i] = static_cast<float>(lam);
      continue;
    }
    const double ratio = std::sqrt(1 - cut_share[i]);
    const auto cut_h = static_cast<int64_t>(static_cast<double>(h) * ratio);
    const auto cut_w = static_cast<int64_t>(static_cast<double>(w) * ratio);
    const auto cy = std::min(h - 1, static_cast<int64_t>(d[i][2] * static_cast<double>(h)));
    const auto cx = std::min(w - 1, static_cast<int64_t>(d[i][3] * static_cast<double>(w)));
    const int64_t y1 = std::clamp<int64_t>(cy - cut_h / 2, 0, h), y2 = std::clamp<int64_t>(cy + cut_h / 2, 0, h);
    const int64_t x1 = std::clamp<int64_t>(cx - cut_w / 2, 0, w), x2 = std::clamp<int64_t>(cx + cut_w / 2, 0, w);
    if (y2 > y1 && x2 > x1)
      out.images[i].narrow(1, y1, y2 - y1).narrow(2, x1, x2 - x1).copy_(partner.narrow(1, y1, y2 - y1).narrow(2, x1, x2 - x1));
    lambda[i] = static_cast<float>(1 - static_cast<double>((y2 - y1) * (x2 - x1)) / static_cast<double>(h * w));
  }
  return out;
}

}  // namespace zoo::data
