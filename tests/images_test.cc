// Tests of data/images.h and data/image_file.h. Every fixture (IDX, gzip, CIFAR
// batches, PNG/BMP/JPEG/PGM files) is written here into a temporary directory.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <torch/torch.h>

#include "data/image_file.h"
#include "data/images.h"
#include "tests/test_util.h"
#include "core/error.h"

#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb_image_write.h>

namespace zoo::data {
namespace {

using zoo::test::TempDir;
using zoo::test::write_file;

// ---------------------------------------------------------------- fixtures

// An IDX file: magic 00 00 <type> <ndims>, big-endian dims, then the data bytes.
std::string idx_bytes(const std::vector<uint32_t>& dims, const std::string& data,
                      uint8_t type = 0x08) {
  std::string s = {0, 0, static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) {
    for (int shift = 24; shift >= 0; shift -= 8) s.push_back(static_cast<char>(d >> shift));
  }
  return s + data;
}

// Bytes whose values are a deterministic function of their position.
std::string pattern(size_t n, int mul = 7, int add = 3) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * mul + add) % 256);
  return s;
}

void write_gzip(const std::string& path, const std::string& content) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr) << path;
  ASSERT_EQ(gzwrite(f, content.data(), static_cast<unsigned>(content.size())),
            static_cast<int>(content.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

torch::Tensor bytes_tensor(const std::string& s, std::vector<int64_t> shape) {
  return torch::from_blob(const_cast<char*>(s.data()), shape, torch::kUInt8).clone();
}

// Expects `fn` to throw zoo::Error whose message contains every one of `parts`.
template <class Fn>
void expect_error(Fn fn, const std::vector<std::string>& parts) {
  try {
    fn();
    ADD_FAILURE() << "expected zoo::Error containing '" << parts.at(0) << "'";
  } catch (const zoo::Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.find('\n'), std::string::npos) << "message should be one line: " << msg;
    for (const auto& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << msg;
  }
}

// Writes an MNIST-layout split: n images of h x w and n labels (label i = i % 10).
void write_mnist_split(const TempDir& dir, const std::string& prefix, int n, int h, int w,
                       bool gz) {
  std::string labels;
  for (int i = 0; i < n; ++i) labels.push_back(static_cast<char>(i % 10));
  const std::string images = idx_bytes({uint32_t(n), uint32_t(h), uint32_t(w)},
                                       pattern(size_t(n) * h * w));
  const std::string img_name = prefix + "-images-idx3-ubyte" + (gz ? ".gz" : "");
  const std::string lbl_name = prefix + "-labels-idx1-ubyte" + (gz ? ".gz" : "");
  if (gz) {
    write_gzip(dir / img_name, images);
    write_gzip(dir / lbl_name, idx_bytes({uint32_t(n)}, labels));
  } else {
    write_file(dir / img_name, images);
    write_file(dir / lbl_name, idx_bytes({uint32_t(n)}, labels));
  }
}

// ---------------------------------------------------------------- IDX

TEST(ReadIdx, RawRoundTripExactValues) {
  TempDir dir;
  const std::string data = pattern(3 * 4 * 5);
  write_file(dir / "x-idx3-ubyte", idx_bytes({3, 4, 5}, data));
  const torch::Tensor t = read_idx(dir / "x-idx3-ubyte");
  EXPECT_EQ(t.scalar_type(), torch::kUInt8);
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{3, 4, 5}));
  EXPECT_TRUE(torch::equal(t, bytes_tensor(data, {3, 4, 5})));
  EXPECT_EQ(t[2][3][4].item<int>(), static_cast<uint8_t>(data[59]));
}

TEST(ReadIdx, GzipRoundTripExactValues) {
  TempDir dir;
  const std::string data = pattern(100 * 28 * 28, 13, 1);
  write_gzip(dir / "x.gz", idx_bytes({100, 28, 28}, data));
  const torch::Tensor t = read_idx(dir / "x.gz");
  EXPECT_EQ(t.sizes().vec(), (std::vector<int64_t>{100, 28, 28}));
  EXPECT_TRUE(torch::equal(t, bytes_tensor(data, {100, 28, 28})));

  // Gzip is detected from the content, not the name; labels are 1-D.
  const std::string labels = pattern(17, 1, 0);
  write_gzip(dir / "labels-idx1-ubyte", idx_bytes({17}, labels));
  EXPECT_TRUE(torch::equal(read_idx(dir / "labels-idx1-ubyte"), bytes_tensor(labels, {17})));
}

TEST(ReadIdx, ConcatenatedGzipMembers) {
  TempDir dir;
  const std::string whole = idx_bytes({6, 5}, pattern(30));
  write_gzip(dir / "a.gz", whole.substr(0, 11));
  write_gzip(dir / "b.gz", whole.substr(11));
  write_file(dir / "ab.gz",
             zoo::test::read_file(dir / "a.gz") + zoo::test::read_file(dir / "b.gz"));
  EXPECT_TRUE(torch::equal(read_idx(dir / "ab.gz"), bytes_tensor(pattern(30), {6, 5})));
}

TEST(ReadIdx, MissingFile) {
  TempDir dir;
  expect_error([&] { read_idx(dir / "nope-idx3-ubyte"); }, {"nope-idx3-ubyte", "cannot open"});
}

TEST(ReadIdx, BadMagic) {
  TempDir dir;
  write_file(dir / "bad-magic", "P5\n28 28\n255\n" + pattern(784));
  expect_error([&] { read_idx(dir / "bad-magic"); }, {"bad-magic", "magic"});
  write_file(dir / "short", std::string("\0\0", 2));
  expect_error([&] { read_idx(dir / "short"); }, {"short", "too short"});
}

TEST(ReadIdx, UnsupportedElementType) {
  TempDir dir;
  write_file(dir / "floats", idx_bytes({2}, std::string(8, '\0'), 0x0D));
  expect_error([&] { read_idx(dir / "floats"); }, {"floats", "0x0d", "0x08"});
}

TEST(ReadIdx, TruncatedImages) {
  TempDir dir;
  write_file(dir / "trunc-idx3-ubyte", idx_bytes({10, 28, 28}, pattern(9 * 784 + 5)));
  expect_error([&] { read_idx(dir / "trunc-idx3-ubyte"); },
               {"trunc-idx3-ubyte", "truncated", "10x28x28", "7840"});
  // Dimensions whose product overflows 64 bits are truncation, not a crash.
  write_file(dir / "huge", idx_bytes({0xffffffffu, 0xffffffffu, 0xffffffffu}, "x"));
  expect_error([&] { read_idx(dir / "huge"); }, {"huge", "truncated"});
  // A header cut short.
  write_file(dir / "hdr", idx_bytes({10, 28, 28}, "").substr(0, 9));
  expect_error([&] { read_idx(dir / "hdr"); }, {"hdr", "truncated IDX header"});
}

TEST(ReadIdx, TrailingBytesAreAnError) {
  TempDir dir;
  write_file(dir / "long", idx_bytes({4}, pattern(6)));
  expect_error([&] { read_idx(dir / "long"); }, {"long", "2 unexpected bytes"});
}

TEST(ReadIdx, TruncatedGzip) {
  TempDir dir;
  write_gzip(dir / "full.gz", idx_bytes({50, 28, 28}, pattern(50 * 784, 31, 5)));
  const std::string gz = zoo::test::read_file(dir / "full.gz");
  write_file(dir / "half.gz", gz.substr(0, gz.size() / 2));
  expect_error([&] { read_idx(dir / "half.gz"); }, {"half.gz", "truncated gzip"});
  // Cut inside the 8-byte trailer: all data inflated, the stream still incomplete.
  write_file(dir / "trailer.gz", gz.substr(0, gz.size() - 3));
  expect_error([&] { read_idx(dir / "trailer.gz"); }, {"trailer.gz", "truncated gzip"});
}

TEST(ReadIdx, CorruptGzip) {
  TempDir dir;
  write_gzip(dir / "full.gz", idx_bytes({20, 28, 28}, pattern(20 * 784)));
  std::string gz = zoo::test::read_file(dir / "full.gz");
  gz[gz.size() - 8] ^= 0x55;  // first byte of the CRC-32 trailer
  write_file(dir / "crc.gz", gz);
  expect_error([&] { read_idx(dir / "crc.gz"); }, {"crc.gz", "corrupt gzip"});
  std::string junk = zoo::test::read_file(dir / "full.gz") + "junk";
  write_file(dir / "junk.gz", junk);
  expect_error([&] { read_idx(dir / "junk.gz"); }, {"junk.gz", "garbage"});
}

// ---------------------------------------------------------------- MNIST layout

TEST(MnistLike, LoadsBothSplitsRawAndGzip) {
  TempDir dir;
  write_mnist_split(dir, "train", 12, 28, 28, /*gz=*/true);
  write_mnist_split(dir, "t10k", 5, 28, 28, /*gz=*/false);
  const ImageSet train = load_mnist_like(dir.path().string(), "train", fashion_mnist_classes());
  EXPECT_EQ(train.images.sizes().vec(), (std::vector<int64_t>{12, 1, 28, 28}));
  EXPECT_EQ(train.images.scalar_type(), torch::kUInt8);
  EXPECT_EQ(train.labels.scalar_type(), torch::kLong);
  EXPECT_TRUE(torch::equal(train.labels, torch::arange(12, torch::kLong).remainder(10)));
  EXPECT_TRUE(torch::equal(train.images, bytes_tensor(pattern(12 * 784), {12, 1, 28, 28})));
  EXPECT_EQ(train.class_names.size(), 10u);
  EXPECT_EQ(train.class_names[0], "T-shirt/top");
  EXPECT_EQ(train.class_names[9], "Ankle boot");

  const ImageSet test = load_mnist_like(dir.path().string(), "test", mnist_classes());
  EXPECT_EQ(test.images.size(0), 5);
  EXPECT_EQ(test.class_names[3], "3");
}

TEST(MnistLike, CountMismatchNamesTheFile) {
  TempDir dir;
  write_mnist_split(dir, "train", 6, 8, 8, false);
  write_file(dir / "train-labels-idx1-ubyte", idx_bytes({5}, std::string(5, '\1')));
  expect_error([&] { load_mnist_like(dir.path().string(), "train", mnist_classes()); },
               {"train-labels-idx1-ubyte", "5 labels", "6 images"});
}

TEST(MnistLike, LabelOutOfRange) {
  TempDir dir;
  write_mnist_split(dir, "t10k", 4, 8, 8, false);
  write_file(dir / "t10k-labels-idx1-ubyte", idx_bytes({4}, std::string("\1\2\12\3", 4)));
  expect_error([&] { load_mnist_like(dir.path().string(), "test", mnist_classes()); },
               {"t10k-labels-idx1-ubyte", "label 10", "item 2", "10 classes"});
}

TEST(MnistLike, MissingFileAndBadArguments) {
  TempDir dir;
  write_mnist_split(dir, "train", 3, 8, 8, false);
  expect_error([&] { load_mnist_like(dir.path().string(), "test", mnist_classes()); },
               {"t10k-images-idx3-ubyte"});
  expect_error([&] { load_mnist_like(dir.path().string(), "valid", mnist_classes()); },
               {"valid", "train or test"});
  expect_error([&] { load_mnist_like(dir / "absent", "train", mnist_classes()); },
               {"absent", "no such directory"});
  // Images stored as labels (wrong rank) are reported.
  write_file(dir / "train-images-idx3-ubyte", idx_bytes({3}, "abc"));
  expect_error([&] { load_mnist_like(dir.path().string(), "train", mnist_classes()); },
               {"train-images-idx3-ubyte", "3 dimensions"});
}

// ---------------------------------------------------------------- CIFAR-10

// One record: label byte then 3072 image bytes derived from `seed`.
std::string cifar_record(uint8_t label, int seed) {
  return std::string(1, static_cast<char>(label)) + pattern(3072, 2 * seed + 1, seed);
}

TEST(Cifar10, TwoRecordsExactValues) {
  TempDir dir;
  std::filesystem::create_directory(dir / "cifar-10-batches-bin");
  write_file(dir / "cifar-10-batches-bin/test_batch.bin", cifar_record(7, 1) + cifar_record(2, 2));
  const ImageSet set = load_cifar10(dir.path().string(), "test");  // parent folder
  EXPECT_EQ(set.images.sizes().vec(), (std::vector<int64_t>{2, 3, 32, 32}));
  EXPECT_TRUE(torch::equal(set.labels, torch::tensor({7, 2}, torch::kLong)));
  EXPECT_TRUE(torch::equal(set.images[0], bytes_tensor(pattern(3072, 3, 1), {3, 32, 32})));
  EXPECT_TRUE(torch::equal(set.images[1], bytes_tensor(pattern(3072, 5, 2), {3, 32, 32})));
  // Channel-major: image byte 1024 of a record is the first pixel of the green plane.
  EXPECT_EQ(set.images[1][1][0][0].item<int>(), (1024 * 5 + 2) % 256);
  EXPECT_EQ(set.class_names, cifar10_classes());
  EXPECT_EQ(set.class_names[7], "horse");

  // The batches folder itself works too, and batches.meta.txt names the classes.
  std::string meta;
  for (int i = 0; i < 10; ++i) meta += "c" + std::to_string(i) + "\n";
  write_file(dir / "cifar-10-batches-bin/batches.meta.txt", meta + "\n\n");
  const ImageSet again = load_cifar10(dir / "cifar-10-batches-bin", "test");
  EXPECT_TRUE(torch::equal(again.images, set.images));
  ASSERT_EQ(again.class_names.size(), 10u);
  EXPECT_EQ(again.class_names[9], "c9");
}

TEST(Cifar10, TrainReadsFiveBatchesInOrder) {
  TempDir dir;
  for (int i = 1; i <= 5; ++i) {
    write_file(dir / ("data_batch_" + std::to_string(i) + ".bin"),
               cifar_record(uint8_t(i), i) + cifar_record(uint8_t(i + 1), 10 * i));
  }
  const ImageSet set = load_cifar10(dir.path().string(), "train");
  EXPECT_EQ(set.images.size(0), 10);
  EXPECT_TRUE(torch::equal(set.labels,
                           torch::tensor({1, 2, 2, 3, 3, 4, 4, 5, 5, 6}, torch::kLong)));
  EXPECT_TRUE(torch::equal(set.images[9], bytes_tensor(pattern(3072, 101, 50), {3, 32, 32})));
}

TEST(Cifar10, BadSizeMissingBatchAndBadLabel) {
  TempDir dir;
  write_file(dir / "test_batch.bin", cifar_record(1, 1) + "xyz");
  expect_error([&] { load_cifar10(dir.path().string(), "test"); }, {"test_batch.bin", "3073"});
  write_file(dir / "data_batch_1.bin", cifar_record(1, 1));
  expect_error([&] { load_cifar10(dir.path().string(), "train"); },
               {"data_batch_2.bin", "missing"});
  write_file(dir / "test_batch.bin", cifar_record(1, 1) + cifar_record(10, 1));
  expect_error([&] { load_cifar10(dir.path().string(), "test"); },
               {"test_batch.bin", "label 10", "record 1"});
  write_file(dir / "test_batch.bin", "");
  expect_error([&] { load_cifar10(dir.path().string(), "test"); }, {"test_batch.bin", "size 0"});
}

// ---------------------------------------------------------------- normalisation

TEST(Normalize, SingleMeanStdBroadcast) {
  const torch::Tensor u8 = torch::tensor({0, 51, 255, 128}, torch::kUInt8).view({2, 1, 1, 2});
  const torch::Tensor out = to_float_normalized(u8, {0.5}, {0.25});
  EXPECT_EQ(out.scalar_type(), torch::kFloat);
  EXPECT_EQ(out.sizes(), u8.sizes());
  const torch::Tensor want =
      (torch::tensor({0.0, 51.0, 255.0, 128.0}, torch::kDouble) / 255.0 - 0.5) / 0.25;
  EXPECT_TRUE(torch::allclose(out.flatten().to(torch::kDouble), want, 1e-6, 1e-6)) << out;
  EXPECT_NEAR(out.flatten()[0].item<double>(), -2.0, 1e-6);
  EXPECT_NEAR(out.flatten()[2].item<double>(), 2.0, 1e-6);
}

TEST(Normalize, PerChannel) {
  const torch::Tensor u8 = torch::randint(0, 256, {4, 3, 5, 6}, torch::kUInt8);
  const std::vector<double> mean = {0.4914, 0.4822, 0.4465}, std = {0.2470, 0.2435, 0.2616};
  const torch::Tensor out = to_float_normalized(u8, mean, std);
  const torch::Tensor m = torch::tensor(mean, torch::kDouble).view({1, 3, 1, 1});
  const torch::Tensor s = torch::tensor(std, torch::kDouble).view({1, 3, 1, 1});
  const torch::Tensor want = (u8.to(torch::kDouble) / 255.0 - m) / s;
  EXPECT_TRUE(torch::allclose(out.to(torch::kDouble), want, 1e-5, 1e-5));
  // A single (C, H, W) image gives the same as a batch of one.
  EXPECT_TRUE(torch::equal(to_float_normalized(u8[1], mean, std), out[1]));
}

TEST(Normalize, RejectsBadArguments) {
  const torch::Tensor u8 = torch::zeros({2, 3, 4, 4}, torch::kUInt8);
  expect_error([&] { to_float_normalized(u8, {0.1, 0.2}, {0.3}); }, {"mean", "2 values"});
  expect_error([&] { to_float_normalized(u8, {0.1}, {0.0}); }, {"std must be > 0"});
  expect_error([&] { to_float_normalized(u8.to(torch::kFloat), {0.1}, {0.3}); }, {"uint8"});
}

// ---------------------------------------------------------------- augmentation

torch::Tensor test_batch(int64_t b, int64_t c, int64_t h, int64_t w) {
  torch::Generator gen = at::detail::createCPUGenerator(1234);
  return torch::randint(1, 256, {b, c, h, w}, gen, torch::kUInt8);  // no zeros: padding shows
}

TEST(RandomCrop, PaddingZeroIsIdentity) {
  const torch::Tensor batch = test_batch(8, 1, 28, 28);
  torch::Generator gen = at::detail::createCPUGenerator(1);
  EXPECT_TRUE(torch::equal(random_crop(batch, 0, gen), batch));
}

TEST(RandomCrop, DeterministicGivenTheSeed) {
  const torch::Tensor batch = test_batch(64, 3, 12, 10);
  torch::Generator g1 = at::detail::createCPUGenerator(42);
  torch::Generator g2 = at::detail::createCPUGenerator(42);
  torch::Generator g3 = at::detail::createCPUGenerator(43);
  const torch::Tensor a = random_crop(batch, 4, g1);
  EXPECT_TRUE(torch::equal(a, random_crop(batch, 4, g2)));
  EXPECT_FALSE(torch::equal(a, random_crop(batch, 4, g3)));
  // The generator advances: a second call with it differs from the first.
  EXPECT_FALSE(torch::equal(a, random_crop(batch, 4, g1)));
}

TEST(RandomCrop, EachImageIsAShiftedWindowOfThePaddedImage) {
  const int64_t b = 32, c = 2, h = 9, w = 7, p = 3;
  const torch::Tensor batch = test_batch(b, c, h, w);
  torch::Generator gen = at::detail::createCPUGenerator(7);
  const torch::Tensor out = random_crop(batch, p, gen);
  ASSERT_EQ(out.sizes(), batch.sizes());
  ASSERT_EQ(out.scalar_type(), torch::kUInt8);
  const torch::Tensor padded = torch::constant_pad_nd(batch, {p, p, p, p}, 0);
  std::set<std::pair<int64_t, int64_t>> offsets;
  for (int64_t i = 0; i < b; ++i) {
    int matches = 0;
    for (int64_t dy = 0; dy <= 2 * p; ++dy) {
      for (int64_t dx = 0; dx <= 2 * p; ++dx) {
        if (torch::equal(out[i], padded[i].narrow(1, dy, h).narrow(2, dx, w))) {
          ++matches;
          offsets.insert({dy, dx});
        }
      }
    }
    EXPECT_EQ(matches, 1) << "image " << i;
  }
  // Offsets vary between images, rows and columns independently.
  EXPECT_GT(offsets.size(), 10u);
  const auto off_diagonal = std::count_if(offsets.begin(), offsets.end(),
                                          [](const auto& o) { return o.first != o.second; });
  EXPECT_GT(off_diagonal, 5);
  // Float batches work the same way.
  torch::Generator g1 = at::detail::createCPUGenerator(7);
  EXPECT_TRUE(torch::equal(random_crop(batch.to(torch::kFloat), p, g1), out.to(torch::kFloat)));
}

TEST(RandomHflip, ProbabilityOneIsFlipZeroIsIdentity) {
  const torch::Tensor batch = test_batch(16, 3, 5, 6);
  torch::Generator gen = at::detail::createCPUGenerator(3);
  EXPECT_TRUE(torch::equal(random_hflip(batch, 1.0, gen), torch::flip(batch, {3})));
  EXPECT_TRUE(torch::equal(random_hflip(batch, 0.0, gen), batch));
  expect_error([&] { random_hflip(batch, 1.5, gen); }, {"p must be in [0, 1]"});
}

TEST(RandomHflip, DeterministicAndPerImage) {
  const torch::Tensor batch = test_batch(64, 1, 6, 6);
  torch::Generator g1 = at::detail::createCPUGenerator(5);
  torch::Generator g2 = at::detail::createCPUGenerator(5);
  torch::Generator g3 = at::detail::createCPUGenerator(6);
  const torch::Tensor a = random_hflip(batch, 0.5, g1);
  EXPECT_TRUE(torch::equal(a, random_hflip(batch, 0.5, g2)));
  EXPECT_FALSE(torch::equal(a, random_hflip(batch, 0.5, g3)));
  int flipped = 0;
  for (int64_t i = 0; i < batch.size(0); ++i) {
    const bool same = torch::equal(a[i], batch[i]);
    const bool mirrored = torch::equal(a[i], batch[i].flip({2}));
    EXPECT_TRUE(same || mirrored) << "image " << i;
    flipped += mirrored;
  }
  EXPECT_GT(flipped, 10);
  EXPECT_LT(flipped, 54);
}

TEST(RandomErasing, OneRectanglePerChosenImageFilledPerChannel) {
  torch::manual_seed(0);
  const int64_t n = 200, c = 3, h = 20, w = 16;
  const torch::Tensor batch = torch::randint(0, 200, {n, c, h, w}, torch::kLong).to(torch::kByte);
  torch::Generator gen = at::detail::createCPUGenerator(11);
  const std::vector<double> fill{250, 251, 252};  // values the batch never has
  const torch::Tensor before = batch.clone();
  const torch::Tensor out = random_erasing(batch, 0.5, fill, gen);
  EXPECT_TRUE(torch::equal(batch, before));  // the input is untouched
  int erased = 0;
  for (int64_t i = 0; i < n; ++i) {
    const torch::Tensor changed = out[i].ne(batch[i]);  // (C, H, W)
    const int64_t count = changed[0].sum().item<int64_t>();
    if (count == 0) continue;
    ++erased;
    for (int64_t ch = 0; ch < c; ++ch) {
      EXPECT_TRUE(torch::equal(changed[ch], changed[0])) << "image " << i << ": channels differ";
      EXPECT_TRUE(out[i][ch].masked_select(changed[ch]).eq(static_cast<int64_t>(fill[ch])).all().item<bool>());
    }
    // The changed pixels fill their bounding box: a rectangle.
    const torch::Tensor rows = changed[0].any(1).nonzero(), cols = changed[0].any(0).nonzero();
    const int64_t eh = rows.max().item<int64_t>() - rows.min().item<int64_t>() + 1;
    const int64_t ew = cols.max().item<int64_t>() - cols.min().item<int64_t>() + 1;
    EXPECT_EQ(count, eh * ew) << "image " << i;
    EXPECT_LT(eh, h);
    EXPECT_LT(ew, w);
    const double share = static_cast<double>(count) / (h * w);
    EXPECT_GE(share, 0.01) << "image " << i;  // 2-33% before rounding the sides
    EXPECT_LE(share, 0.40) << "image " << i;
  }
  EXPECT_GT(erased, 70);
  EXPECT_LT(erased, 130);
  // Deterministic in the generator; another seed erases elsewhere; p = 0 is the identity.
  torch::Generator g1 = at::detail::createCPUGenerator(11), g2 = at::detail::createCPUGenerator(12);
  EXPECT_TRUE(torch::equal(random_erasing(batch, 0.5, fill, g1), out));
  EXPECT_FALSE(torch::equal(random_erasing(batch, 0.5, fill, g2), out));
  EXPECT_TRUE(torch::equal(random_erasing(batch, 0.0, fill, g2), batch));
  expect_error([&] { random_erasing(batch, 1.5, fill, gen); }, {"p must be in [0, 1]"});
  expect_error([&] { random_erasing(batch, 0.5, {1, 2}, gen); }, {"fill needs 1 or 3 values"});
}

// Image i is the constant i + 1: a mixed image's pixels tell which image each came from.
TEST(MixImages, MixupBlendsEachImageWithItsPartnerByItsLambda) {
  const int64_t n = 64;
  const torch::Tensor batch = (torch::arange(1, n + 1, torch::kFloat)).view({n, 1, 1, 1}).expand({n, 2, 6, 5}).contiguous();
  torch::Generator gen = at::detail::createCPUGenerator(3);
  const MixedImages out = mix_images(batch, {0.4, 0.0, 1.0}, gen);
  ASSERT_EQ(out.lambda.sizes(), (std::vector<int64_t>{n}));
  int mixed = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double lam = out.lambda[i].item<double>(), own = i + 1.0, partner = n - i;
    ASSERT_GE(lam, 0.0);
    ASSERT_LE(lam, 1.0);
    EXPECT_TRUE(torch::allclose(out.images[i], torch::full({2, 6, 5}, lam * own + (1 - lam) * partner), 1e-5, 1e-4)) << i;
    mixed += lam < 0.99 && lam > 0.01;
  }
  EXPECT_GT(mixed, 20);  // Beta(0.4, 0.4) puts most draws near 0 or 1, not all
  torch::Generator again = at::detail::createCPUGenerator(3);
  EXPECT_TRUE(torch::equal(mix_images(batch, {0.4, 0.0, 1.0}, again).images, out.images));
  torch::Generator none = at::detail::createCPUGenerator(3);
  const MixedImages kept = mix_images(batch, {0.4, 0.0, 0.0}, none);  // prob 0: nothing mixed
  EXPECT_TRUE(torch::equal(kept.images, batch));
  EXPECT_TRUE(kept.lambda.eq(1).all().item<bool>());
}

TEST(MixImages, CutMixPastesABoxOfThePartnerAndLambdaIsTheShareLeft) {
  const int64_t n = 64, h = 12, w = 10;
  const torch::Tensor batch = (torch::arange(1, n + 1, torch::kFloat)).view({n, 1, 1, 1}).expand({n, 3, h, w}).contiguous();
  torch::Generator gen = at::detail::createCPUGenerator(5);
  const MixedImages out = mix_images(batch, {0.0, 1.0, 1.0}, gen);
  int boxes = 0;
  for (int64_t i = 0; i < n; ++i) {
    const torch::Tensor from_partner = out.images[i][0].eq(static_cast<float>(n - i));  // (H, W)
    const torch::Tensor own = out.images[i][0].eq(static_cast<float>(i + 1));
    if (n - i == i + 1) continue;  // no middle image in an even batch; kept for clarity
    EXPECT_TRUE(from_partner.logical_or(own).all().item<bool>()) << i;  // pasted, not blended
    const int64_t pasted = from_partner.sum().item<int64_t>();
    EXPECT_NEAR(out.lambda[i].item<double>(), 1.0 - static_cast<double>(pasted) / (h * w), 1e-6) << i;
    for (int64_t c = 1; c < 3; ++c) EXPECT_TRUE(torch::equal(out.images[i][c], out.images[i][0]));
    if (pasted == 0) continue;
    ++boxes;
    const torch::Tensor rows = from_partner.any(1).nonzero(), cols = from_partner.any(0).nonzero();
    EXPECT_EQ(pasted, (rows.max().item<int64_t>() - rows.min().item<int64_t>() + 1) *
                          (cols.max().item<int64_t>() - cols.min().item<int64_t>() + 1))
        << "image " << i << ": not a rectangle";
  }
  EXPECT_GT(boxes, 40);
  // Both on: each mixed image takes one of the two.
  torch::Generator both = at::detail::createCPUGenerator(6);
  const MixedImages either = mix_images(batch, {1.0, 1.0, 1.0}, both);
  int blended = 0, pasted = 0;
  for (int64_t i = 0; i < n; ++i) {
    const torch::Tensor v = either.images[i][0];
    const bool pure = v.eq(static_cast<float>(i + 1)).logical_or(v.eq(static_cast<float>(n - i))).all().item<bool>();
    (pure ? pasted : blended) += 1;
  }
  EXPECT_GT(blended, 15);
  EXPECT_GT(pasted, 15);
  expect_error([&] { mix_images(batch.to(torch::kByte), {1.0, 0.0, 1.0}, gen); }, {"float CPU batch"});
}

// ---------------------------------------------------------------- image files

// A w x h image with `c` interleaved channels (HWC, as stb writes it).
std::vector<uint8_t> hwc_pattern(int w, int h, int c) {
  std::vector<uint8_t> v(size_t(w) * h * c);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<uint8_t>((i * 37 + 11) % 256);
  return v;
}

torch::Tensor hwc_to_chw(const std::vector<uint8_t>& v, int w, int h, int c) {
  return torch::from_blob(const_cast<uint8_t*>(v.data()), {h, w, c}, torch::kUInt8)
      .permute({2, 0, 1})
      .clone(torch::MemoryFormat::Contiguous);
}

TEST(ImageFile, PngRgbAndGrayExact) {
  TempDir dir;
  const int w = 7, h = 5;
  const auto rgb = hwc_pattern(w, h, 3);
  ASSERT_TRUE(stbi_write_png((dir / "rgb.png").c_str(), w, h, 3, rgb.data(), w * 3));
  const torch::Tensor img = load_image(dir / "rgb.png", 3, h, w);
  EXPECT_EQ(img.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(img, hwc_to_chw(rgb, w, h, 3)));
  EXPECT_TRUE(torch::equal(load_image(dir / "rgb.png", 3, 0, 0), img));  // 0 keeps the size

  // RGB -> gray is a luminance: compare with 0.299 R + 0.587 G + 0.114 B within 1.
  const torch::Tensor gray = load_image(dir / "rgb.png", 1, h, w);
  ASSERT_EQ(gray.sizes().vec(), (std::vector<int64_t>{1, h, w}));
  const torch::Tensor f = img.to(torch::kDouble);
  const torch::Tensor lum = 0.299 * f[0] + 0.587 * f[1] + 0.114 * f[2];
  EXPECT_LE((gray[0].to(torch::kDouble) - lum).abs().max().item<double>(), 1.5);

  // Gray PNG -> 1 channel exact; -> 3 channels repeats it; -> 4 adds opaque alpha.
  const auto g = hwc_pattern(w, h, 1);
  ASSERT_TRUE(stbi_write_png((dir / "gray.png").c_str(), w, h, 1, g.data(), w));
  const torch::Tensor g1 = load_image(dir / "gray.png", 1, h, w);
  EXPECT_TRUE(torch::equal(g1, hwc_to_chw(g, w, h, 1)));
  const torch::Tensor g3 = load_image(dir / "gray.png", 3, h, w);
  EXPECT_TRUE(torch::equal(g3, g1.expand({3, h, w})));
  const torch::Tensor g4 = load_image(dir / "gray.png", 4, h, w);
  EXPECT_TRUE(torch::equal(g4[3], torch::full({h, w}, 255, torch::kUInt8)));
}

TEST(ImageFile, PgmBmpJpeg) {
  TempDir dir;
  const int w = 6, h = 4;
  const auto g = hwc_pattern(w, h, 1);
  write_file(dir / "img.pgm",
             "P5\n# a comment\n" + std::to_string(w) + " " + std::to_string(h) + "\n255\n" +
                 std::string(g.begin(), g.end()));
  EXPECT_TRUE(torch::equal(load_image(dir / "img.pgm", 1, h, w), hwc_to_chw(g, w, h, 1)));

  const auto rgb = hwc_pattern(w, h, 3);
  ASSERT_TRUE(stbi_write_bmp((dir / "img.bmp").c_str(), w, h, 3, rgb.data()));
  EXPECT_TRUE(torch::equal(load_image(dir / "img.bmp", 3, h, w), hwc_to_chw(rgb, w, h, 3)));

  // JPEG is lossy: a flat colour survives to within a few levels.
  std::vector<uint8_t> flat(16 * 16 * 3);
  for (size_t i = 0; i < flat.size(); ++i) flat[i] = i % 3 == 0 ? 200 : (i % 3 == 1 ? 100 : 50);
  ASSERT_TRUE(stbi_write_jpg((dir / "img.jpg").c_str(), 16, 16, 3, flat.data(), 95));
  const torch::Tensor jpg = load_image(dir / "img.jpg", 3, 16, 16).to(torch::kInt);
  EXPECT_LE((jpg - hwc_to_chw(flat, 16, 16, 3).to(torch::kInt)).abs().max().item<int>(), 4);
}

TEST(ImageFile, ResizeShapeAndValues) {
  TempDir dir;
  const int w = 8, h = 6;
  std::vector<uint8_t> flat(size_t(w) * h * 3, 77);
  ASSERT_TRUE(stbi_write_png((dir / "flat.png").c_str(), w, h, 3, flat.data(), w * 3));
  const torch::Tensor up = load_image(dir / "flat.png", 3, 12, 16);
  EXPECT_EQ(up.sizes().vec(), (std::vector<int64_t>{3, 12, 16}));
  EXPECT_EQ(up.scalar_type(), torch::kUInt8);
  EXPECT_TRUE(torch::equal(up, torch::full({3, 12, 16}, 77, torch::kUInt8)));
  const torch::Tensor down = load_image(dir / "flat.png", 1, 3, 5);
  EXPECT_TRUE(torch::equal(down, torch::full({1, 3, 5}, 77, torch::kUInt8)));

  // A horizontal ramp stays a non-decreasing ramp over its range after resizing.
  std::vector<uint8_t> ramp(size_t(w) * h);
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) ramp[size_t(y) * w + x] = static_cast<uint8_t>(x * 30);
  }
  ASSERT_TRUE(stbi_write_png((dir / "ramp.png").c_str(), w, h, 1, ramp.data(), w));
  const torch::Tensor r = load_image(dir / "ramp.png", 1, 28, 28)[0].to(torch::kInt);
  EXPECT_TRUE((r.diff(1, 1) >= 0).all().item<bool>());
  EXPECT_TRUE(torch::equal(r[0], r[27]));
  EXPECT_LE(r.min().item<int>(), 5);
  EXPECT_GE(r.max().item<int>(), 205);
}

TEST(ImageFile, ErrorsNameTheFileAndReason) {
  TempDir dir;
  write_file(dir / "notes.png", "this is not an image at all");
  expect_error([&] { load_image(dir / "notes.png", 3, 8, 8); },
               {"notes.png", "cannot decode", "unknown image type"});
  // A PNG cut in half: stb reports why.
  const auto rgb = hwc_pattern(32, 32, 3);
  ASSERT_TRUE(stbi_write_png((dir / "ok.png").c_str(), 32, 32, 3, rgb.data(), 32 * 3));
  const std::string png = zoo::test::read_file(dir / "ok.png");
  write_file(dir / "cut.png", png.substr(0, png.size() / 2));
  expect_error([&] { load_image(dir / "cut.png", 3, 32, 32); },
               {"cut.png", "cannot decode image (stb_image: "});
  expect_error([&] { load_image(dir / "missing.png", 3, 8, 8); }, {"missing.png", "no such file"});
  write_file(dir / "empty.jpg", "");
  expect_error([&] { load_image(dir / "empty.jpg", 3, 8, 8); }, {"empty.jpg", "empty"});
  expect_error([&] { load_image(dir / "ok.png", 2, 8, 8); }, {"ok.png", "1, 3 or 4"});
}

// ---------------------------------------------------------------- real data

TEST(RealData, FashionMnistTestSplit) {
  const std::string dir = "/usr/share/datasets/fashion-mnist";
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << dir << " does not exist (apt-get install dataset-fashion-mnist)";
  }
  const ImageSet set = load_mnist_like(dir, "test", fashion_mnist_classes());
  EXPECT_EQ(set.images.sizes().vec(), (std::vector<int64_t>{10000, 1, 28, 28}));
  EXPECT_EQ(set.labels.sizes().vec(), (std::vector<int64_t>{10000}));
  EXPECT_TRUE(torch::equal(torch::bincount(set.labels, {}, 10),
                           torch::full({10}, 1000, torch::kLong)));
  EXPECT_GT(set.images.to(torch::kFloat).mean().item<double>(), 40.0);  // not all black
}

}  // namespace
}  // namespace zoo::data
