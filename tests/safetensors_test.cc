// zoo::safetensors: round trips, interop with an independent Python implementation
// (tests/py/safetensors_ref.py) in both directions, and hostile files built byte by byte.
#include "io/safetensors.h"

#include <cmath>
#include <cstdint>
#include <algorithm>
#include <filesystem>
#include <limits>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/torch.h>

#include "tests/test_util.h"
#include "core/error.h"

namespace zoo::safetensors {
namespace {

using nlohmann::json;
using test::TempDir;
using Named = std::vector<std::pair<std::string, torch::Tensor>>;

std::string le64(uint64_t v) {
  std::string s;
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
  return s;
}

/// A file with header `header` (unpadded) followed by `data`.
std::string make_file(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

/// The message of the zoo::Error that load() throws; fails the test if it throws nothing.
/// Any other exception type escapes and fails the test too.
std::string load_error(const std::string& path) {
  try {
    load(path);
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "load(" << path << ") did not throw";
  return "";
}

void expect_same(const torch::Tensor& actual, const torch::Tensor& expected,
                 const std::string& name) {
  SCOPED_TRACE(name);
  ASSERT_TRUE(actual.defined());
  EXPECT_EQ(actual.scalar_type(), expected.scalar_type());
  EXPECT_EQ(actual.sizes(), expected.sizes());
  EXPECT_TRUE(actual.is_contiguous());
  EXPECT_TRUE(torch::equal(actual, expected.to(torch::kCPU)));
}

/// Compares a tensor with the flat "values" list printed by safetensors_ref.py, exactly.
void expect_values(const torch::Tensor& t, const json& values, const std::string& name) {
  SCOPED_TRACE(name);
  const torch::Tensor flat = t.detach().to(torch::kCPU).contiguous().flatten();
  ASSERT_TRUE(values.is_array());
  ASSERT_EQ(static_cast<int64_t>(values.size()), flat.numel());
  for (int64_t i = 0; i < flat.numel(); ++i) {
    if (flat.is_floating_point()) {
      EXPECT_EQ(values[i].get<double>(), flat[i].item<double>()) << "element " << i;
    } else if (flat.scalar_type() == torch::kBool) {
      EXPECT_EQ(values[i].get<bool>(), flat[i].item<bool>()) << "element " << i;
    } else {
      EXPECT_EQ(values[i].get<int64_t>(), flat[i].item<int64_t>()) << "element " << i;
    }
  }
}

// Every dtype, with values at the edges of each type's range.
Named all_dtypes() {
  return {
      {"f64", torch::tensor({0.1, -1e300, 5e-324, 2.0}, torch::kFloat64)},
      {"f32", torch::tensor({1.5f, -2.25f, 1e-3f, 3.4e38f}, torch::kFloat32).reshape({2, 2})},
      {"f16", torch::tensor({0.5, -1.0, 65504.0, std::ldexp(1.0, -24)}).to(torch::kFloat16)},
      {"bf16", torch::tensor({1.0, -2.5, 3.0e38, 0.15625}).to(torch::kBFloat16)},
      {"i64", torch::tensor(std::vector<int64_t>{std::numeric_limits<int64_t>::min(), -1,
                                                 std::numeric_limits<int64_t>::max()})},
      {"i32", torch::tensor({int64_t{std::numeric_limits<int32_t>::min()}, int64_t{0},
                             int64_t{std::numeric_limits<int32_t>::max()}})
                  .to(torch::kInt32)},
      {"i16", torch::tensor({-32768, 32767, 1}).to(torch::kInt16)},
      {"i8", torch::tensor({-128, 127, 0, 5, 6}).to(torch::kInt8)},
      {"u8", torch::tensor({0, 255, 128}).to(torch::kUInt8).reshape({1, 3, 1})},
      {"bool", torch::tensor({1, 0, 1, 1}).to(torch::kBool)},
  };
}

TEST(Safetensors, TestDataCoversEveryDtype) {
  std::set<std::string> names;
  for (const auto& [name, t] : all_dtypes()) names.insert(dtype_name(t.scalar_type()));
  EXPECT_EQ(names, (std::set<std::string>{"F64", "F32", "F16", "BF16", "I64", "I32", "I16", "I8",
                                          "U8", "BOOL"}));
}

TEST(Safetensors, RoundTripsEveryDtype) {
  TempDir dir;
  const std::string path = dir / "all.safetensors";
  Named tensors = all_dtypes();
  torch::manual_seed(0);
  tensors.emplace_back("random_f32", torch::randn({17, 3}));
  tensors.emplace_back("random_bf16", torch::randn({5, 7}).to(torch::kBFloat16));
  tensors.emplace_back("random_i64", torch::randint(-1000000, 1000000, {9}, torch::kInt64));
  tensors.emplace_back("scalar", torch::full({}, 3.25, torch::kFloat64));
  tensors.emplace_back("empty", torch::zeros({0, 3}));
  tensors.emplace_back("empty_i8", torch::zeros({4, 0}, torch::kInt8));
  tensors.emplace_back("transposed", torch::arange(12, torch::kFloat32).reshape({3, 4}).t());
  tensors.emplace_back("strided", torch::arange(20, torch::kInt32).slice(0, 1, 20, 3));
  tensors.emplace_back("param", torch::ones({2, 2}).requires_grad_());
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"epoch", "3"}, {"unicode", "\xc3\xa9t\xc3\xa9"}};
  save(path, tensors, metadata);

  const File file = load(path);
  EXPECT_EQ(file.metadata, metadata);
  ASSERT_EQ(file.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) {
    ASSERT_EQ(file.tensors.count(name), 1u) << name;
    expect_same(file.tensors.at(name), t.detach(), name);
    EXPECT_FALSE(file.tensors.at(name).requires_grad());
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  std::vector<std::string> names;
  for (const auto& [name, t] : tensors) names.push_back(name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(keys(path), names);
}

TEST(Safetensors, LoadedTensorsOwnTheirMemory) {
  TempDir dir;
  const std::string path = dir / "own.safetensors";
  save(path, {{"a", torch::arange(4, torch::kFloat32)}, {"b", torch::arange(3, torch::kInt64)}});
  File file = load(path);
  std::filesystem::remove(path);  // nothing may still refer to the file or a shared buffer
  torch::Tensor a = file.tensors.at("a");
  torch::Tensor b = file.tensors.at("b");
  a.add_(1);
  EXPECT_TRUE(torch::equal(a, torch::arange(1, 5, torch::kFloat32)));
  EXPECT_TRUE(torch::equal(b, torch::arange(3, torch::kInt64)));
  EXPECT_NE(a.data_ptr(), b.data_ptr());
}

TEST(Safetensors, LayoutIsByteExact) {
  // The reference implementation's own test vector: one F32 [1, 2, 3] tensor "attn.0".
  TempDir dir;
  const std::string path = dir / "exact.safetensors";
  save(path, {{"attn.0", torch::arange(6, torch::kFloat32).reshape({1, 2, 3})}});
  const std::string header = R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})";
  ASSERT_EQ(header.size(), 64u);
  std::string data;
  for (float f : {0.f, 1.f, 2.f, 3.f, 4.f, 5.f}) {
    data.append(reinterpret_cast<const char*>(&f), sizeof f);
  }
  EXPECT_EQ(test::read_file(path), le64(64) + header + data);

  // No tensors: "{}" padded with spaces to 8 bytes, like the reference.
  save(path, {});
  EXPECT_EQ(test::read_file(path), le64(8) + "{}      ");
  EXPECT_TRUE(load(path).tensors.empty());
}

TEST(Safetensors, HeaderIsPaddedAndTensorsAligned) {
  TempDir dir;
  const std::string path = dir / "aligned.safetensors";
  // Narrow dtypes first and odd sizes, so a naive writer would misalign the wide ones.
  save(path,
       {{"b", torch::ones({3}, torch::kBool)},
        {"h", torch::ones({1}, torch::kFloat16)},
        {"d", torch::ones({3}, torch::kFloat64)},
        {"i", torch::ones({5}, torch::kInt32)}},
       {{"k", "v"}});
  const std::string bytes = test::read_file(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  EXPECT_EQ((8 + n) % 8, 0u);
  const std::string text = bytes.substr(8, n);
  EXPECT_EQ(text.find_last_not_of(' '), text.rfind('}'));
  EXPECT_EQ(json::parse(text)["__metadata__"], json({{"k", "v"}}));

  std::map<std::string, std::string> metadata;
  const std::vector<TensorInfo> infos = read_header(path, &metadata);
  EXPECT_EQ(metadata.at("k"), "v");
  ASSERT_EQ(infos.size(), 4u);
  for (const auto& info : infos) {
    const uint64_t size = c10::elementSize(info.dtype);
    EXPECT_EQ((8 + n + info.begin) % size, 0u) << info.name;
  }
  EXPECT_EQ(infos.front().name, "d");  // widest first
  EXPECT_EQ(infos.back().end, bytes.size() - 8 - n);
}

TEST(Safetensors, SaveIsAtomicAndRejectsBadInput) {
  TempDir dir;
  const std::string path = dir / "model.safetensors";
  save(path, {{"w", torch::ones({2})}});
  const std::string before = test::read_file(path);

  auto save_error = [&](const Named& tensors) -> std::string {
    try {
      save(path, tensors);
    } catch (const Error& e) {
      return e.what();
    }
    ADD_FAILURE() << "save did not throw";
    return "";
  };
  std::string msg = save_error({{"w", torch::ones({2})}, {"w", torch::zeros({2})}});
  EXPECT_NE(msg.find("duplicate"), std::string::npos) << msg;
  EXPECT_NE(msg.find("\"w\""), std::string::npos) << msg;
  msg = save_error({{"__metadata__", torch::ones({2})}});
  EXPECT_NE(msg.find("reserved"), std::string::npos) << msg;
  msg = save_error({{"c", torch::ones({2}, torch::kComplexFloat)}});
  EXPECT_NE(msg.find("cannot store dtype"), std::string::npos) << msg;
  msg = save_error({{"u", torch::Tensor()}});
  EXPECT_NE(msg.find("undefined"), std::string::npos) << msg;
  msg = save_error({{"\xff\xfe", torch::ones({1})}});
  EXPECT_NE(msg.find("UTF-8"), std::string::npos) << msg;
  // Failed saves leave the previous file intact and no temporary behind.
  EXPECT_EQ(test::read_file(path), before);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));

  const std::string missing = dir / "no/such/dir/x.safetensors";
  try {
    save(missing, {{"w", torch::ones({2})}});
    ADD_FAILURE() << "save into a missing directory did not throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open for writing"), std::string::npos);
  }
  EXPECT_FALSE(std::filesystem::exists(missing));

  // Overwriting replaces the file.
  save(path, {{"w", torch::zeros({3})}});
  expect_same(load(path).tensors.at("w"), torch::zeros({3}), "w");
}

TEST(Safetensors, SavesFromAcceleratorIfPresent) {
  if (!torch::cuda::is_available()) GTEST_SKIP() << "no CUDA device";
  TempDir dir;
  const std::string path = dir / "cuda.safetensors";
  const torch::Tensor t = torch::arange(10, torch::kFloat32).to(torch::kCUDA).reshape({2, 5}).t();
  save(path, {{"t", t}});
  expect_same(load(path).tensors.at("t"), t.cpu(), "t");
}

TEST(Safetensors, PythonReadsWhatWeWrite) {
  TempDir dir;
  const std::string path = dir / "cpp.safetensors";
  Named tensors = all_dtypes();
  tensors.emplace_back("scalar", torch::full({}, -0.375, torch::kFloat32));
  tensors.emplace_back("empty", torch::zeros({2, 0, 3}, torch::kFloat16));
  tensors.emplace_back("transposed", torch::arange(6, torch::kInt64).reshape({2, 3}).t());
  const std::map<std::string, std::string> metadata = {{"format", "pt"}, {"note", "x y"}};
  save(path, tensors, metadata);

  const auto r = test::run_python("safetensors_ref.py", "read " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json summary = json::parse(r.output);
  EXPECT_TRUE(summary.at("header_padding_ok").get<bool>()) << r.output;
  EXPECT_EQ(summary.at("metadata"), json(metadata));
  const json& ts = summary.at("tensors");
  ASSERT_EQ(ts.size(), tensors.size()) << r.output;
  for (const auto& [name, t] : tensors) {
    SCOPED_TRACE(name);
    ASSERT_TRUE(ts.contains(name)) << r.output;
    const json& s = ts.at(name);
    EXPECT_EQ(s.at("dtype").get<std::string>(), dtype_name(t.scalar_type()));
    EXPECT_EQ(s.at("shape").get<std::vector<int64_t>>(), t.sizes().vec());
    EXPECT_TRUE(s.at("aligned").get<bool>());
    expect_values(t, s.at("values"), name);
  }
}

TEST(Safetensors, WeReadWhatPythonWrites) {
  TempDir dir;
  const std::string path = dir / "py.safetensors";
  const auto r = test::run_python("safetensors_ref.py", "write " + path);
  ASSERT_EQ(r.exit_code, 0) << r.output;

  const File file = load(path);
  const std::map<std::string, std::string> metadata = {
      {"format", "pt"}, {"note", "written by safetensors_ref.py \xc3\xa9\xc3\xa8"}};
  EXPECT_EQ(file.metadata, metadata);
  // Exactly the values of reference_tensors() in safetensors_ref.py.
  const Named expected = {
      {"f32", torch::tensor({1.5f, -2.25f, 3.0f, 0.0f, 1e-3f, -7.0f}).reshape({2, 3})},
      {"f16", torch::tensor({0.5, -1.0, 65504.0, std::ldexp(1.0, -14)}).to(torch::kFloat16)},
      {"bf16", torch::tensor({1.0, -2.5, 256.0, 0.15625}).to(torch::kBFloat16)},
      {"f64", torch::tensor({0.1, -1e300}, torch::kFloat64).reshape({2, 1})},
      {"i64",
       torch::tensor(std::vector<int64_t>{-(int64_t{1} << 62), 0, (int64_t{1} << 62) + 3, -1})},
      {"i32", torch::tensor({int64_t{std::numeric_limits<int32_t>::min()},
                             int64_t{std::numeric_limits<int32_t>::max()}, int64_t{7}})
                  .to(torch::kInt32)},
      {"i16", torch::tensor({-32768, 32767}).to(torch::kInt16)},
      {"i8", torch::tensor({-128, 127, 0}).to(torch::kInt8)},
      {"u8", torch::tensor({0, 1, 255, 128}).to(torch::kUInt8).reshape({2, 2})},
      {"bool", torch::tensor({1, 0, 1}).to(torch::kBool)},
      {"scalar", torch::full({}, 3.25, torch::kFloat64)},
      {"empty", torch::zeros({0, 3}, torch::kFloat32)},
  };
  ASSERT_EQ(file.tensors.size(), expected.size());
  for (const auto& [name, t] : expected) {
    ASSERT_EQ(file.tensors.count(name), 1u) << name;
    expect_same(file.tensors.at(name), t, name);
  }
}

// --- Hostile files ---------------------------------------------------------------------------

struct Hostile {
  const char* what;
  std::string bytes;
  std::vector<std::string> fragments;  // all must appear in the error message
};

std::string entry(const std::string& dtype, const std::string& shape, const std::string& offsets) {
  return R"({"dtype":)" + dtype + R"(,"shape":)" + shape + R"(,"data_offsets":)" + offsets + "}";
}

std::vector<Hostile> hostile_files() {
  const std::string f32x2 = entry(R"("F32")", "[2]", "[0,8]");
  const std::string eight(8, '\0');
  return {
      {"empty file", "", {"shorter than the 8-byte header size"}},
      {"7 bytes", std::string("\x02\0\0\0\0\0\0", 7), {"7 bytes", "shorter"}},
      {"header size past the end", le64(100) + "{}", {"header size 100", "past the end"}},
      {"header size absurd", le64(200'000'000) + "{}", {"200000000", "exceeds"}},
      {"header size 2^64-1", le64(~uint64_t{0}) + "{}", {"exceeds"}},
      {"header size zero", le64(0), {"not valid JSON"}},
      {"not JSON", make_file(R"({"a": nope})"), {"not valid JSON"}},
      {"truncated JSON", make_file(R"({"a":{"dtype":"F32")"), {"not valid JSON"}},
      {"invalid UTF-8", make_file("{\"\xff\":1}"), {"not valid JSON"}},
      {"number out of double range", make_file(R"({"a":{"shape":[1e400]}})"), {"not valid JSON"}},
      {"JSON array", make_file("[1,2]"), {"not a JSON object"}},
      {"JSON string", make_file("\"{}\""), {"not a JSON object"}},
      {"deep nesting",
       make_file(std::string(100000, '[') + std::string(100000, ']')),
       {"nests JSON deeper"}},
      {"entry not object", make_file(R"({"a":5})"), {"tensor \"a\"", "not a JSON object"}},
      {"missing dtype",
       make_file(R"({"a":{"shape":[2],"data_offsets":[0,8]}})", eight),
       {"tensor \"a\"", "no \"dtype\""}},
      {"missing shape",
       make_file(R"({"a":{"dtype":"F32","data_offsets":[0,8]}})", eight),
       {"tensor \"a\"", "no \"shape\""}},
      {"missing data_offsets",
       make_file(R"({"a":{"dtype":"F32","shape":[2]}})", eight),
       {"tensor \"a\"", "no \"data_offsets\""}},
      {"dtype not string",
       make_file(R"({"a":)" + entry("4", "[2]", "[0,8]") + "}", eight),
       {"tensor \"a\"", "\"dtype\" is not a string"}},
      {"unknown dtype",
       make_file(R"({"a":)" + entry(R"("F8_E4M3")", "[8]", "[0,8]") + "}", eight),
       {"tensor \"a\"", "unsupported dtype \"F8_E4M3\"", "BF16"}},
      {"shape not array",
       make_file(R"({"a":)" + entry(R"("F32")", "2", "[0,8]") + "}", eight),
       {"tensor \"a\"", "\"shape\" is not an array"}},
      {"negative dim",
       make_file(R"({"a":)" + entry(R"("F32")", "[-2]", "[0,8]") + "}", eight),
       {"tensor \"a\"", "shape[0] is not a non-negative integer"}},
      {"fractional dim",
       make_file(R"({"a":)" + entry(R"("F32")", "[1,2.5]", "[0,8]") + "}", eight),
       {"tensor \"a\"", "shape[1] is not a non-negative integer"}},
      {"float dim",
       make_file(R"({"a":)" + entry(R"("F32")", "[2.0]", "[0,8]") + "}", eight),
       {"shape[0] is not a non-negative integer"}},
      {"string dim",
       make_file(R"({"a":)" + entry(R"("F32")", R"(["2"])", "[0,8]") + "}", eight),
       {"shape[0] is not a non-negative integer"}},
      {"element count overflow",
       make_file(R"({"a":)" + entry(R"("U8")", "[4294967296,4294967296,2]", "[0,8]") + "}", eight),
       {"tensor \"a\"", "overflows the element count"}},
      {"byte size overflow",
       make_file(R"({"a":)" + entry(R"("F64")", "[4611686018427387904]", "[0,8]") + "}", eight),
       {"tensor \"a\"", "overflows the byte size"}},
      {"dim beyond int64 with a zero dim",
       make_file(R"({"a":)" + entry(R"("F32")", "[0,18446744073709551615]", "[0,0]") + "}"),
       {"tensor \"a\"", "overflows"}},
      {"data_offsets one number",
       make_file(R"({"a":)" + entry(R"("F32")", "[2]", "[8]") + "}", eight),
       {"tensor \"a\"", "\"data_offsets\" is not [begin, end]"}},
      {"data_offsets negative",
       make_file(R"({"a":)" + entry(R"("F32")", "[2]", "[-8,0]") + "}", eight),
       {"\"data_offsets\" is not [begin, end]"}},
      {"data_offsets float",
       make_file(R"({"a":)" + entry(R"("F32")", "[2]", "[0,8.0]") + "}", eight),
       {"\"data_offsets\" is not [begin, end]"}},
      {"begin after end",
       make_file(R"({"a":)" + entry(R"("F32")", "[2]", "[8,0]") + "}", eight),
       {"tensor \"a\"", "[8, 0] begin after end"}},
      {"end beyond the data",
       make_file(R"({"a":)" + entry(R"("F32")", "[4]", "[0,16]") + "}", eight),
       {"tensor \"a\"", "end beyond the data section (8 bytes)"}},
      {"size mismatch",
       make_file(R"({"a":)" + entry(R"("F32")", "[3]", "[0,8]") + "}", eight),
       {"tensor \"a\"", "hold 8 bytes but F32 shape [3] needs 12"}},
      {"overlap",
       make_file(R"({"a":)" + f32x2 + R"(,"b":)" + entry(R"("F32")", "[2]", "[4,12]") + "}",
                 std::string(12, '\0')),
       {"tensor \"b\"", "overlap tensor \"a\""}},
      {"gap",
       make_file(R"({"a":)" + entry(R"("F32")", "[1]", "[0,4]") + R"(,"b":)" +
                     entry(R"("F32")", "[1]", "[8,12]") + "}",
                 std::string(12, '\0')),
       {"gap", "bytes [4, 8)", "tensor \"b\""}},
      {"gap at the start",
       make_file(R"({"a":)" + entry(R"("F32")", "[1]", "[4,8]") + "}", eight),
       {"gap", "bytes [0, 4)"}},
      {"trailing bytes",
       make_file(R"({"a":)" + entry(R"("F32")", "[1]", "[0,4]") + "}", eight),
       {"not covered", "last 4 of 8 bytes"}},
      {"data but no tensors", make_file("{}", eight), {"not covered"}},
      {"metadata value not string",
       make_file(R"({"__metadata__":{"ok":"x","k":1},"a":)" + f32x2 + "}", eight),
       {"__metadata__ value of key \"k\" is not a string"}},
      {"metadata not object",
       make_file(R"({"__metadata__":["x"]})"),
       {"\"__metadata__\" is not a JSON object"}},
      {"control characters in a name",
       make_file("{\"a\\nb\\u0007\":5}"),
       {R"(tensor "a\nb\u0007")", "not a JSON object"}},
  };
}

TEST(Safetensors, RejectsHostileFiles) {
  TempDir dir;
  const std::string path = dir / "hostile.safetensors";
  const auto cases = hostile_files();
  for (const auto& c : cases) {
    SCOPED_TRACE(c.what);
    test::write_file(path, c.bytes);
    ASSERT_EQ(test::read_file(path), c.bytes);
    const std::string msg = load_error(path);
    EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;      // starts with the path
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // one line
    for (const auto& fragment : c.fragments) {
      EXPECT_NE(msg.find(fragment), std::string::npos)
          << "missing \"" << fragment << "\" in: " << msg;
    }
    // The header-only reader applies the same checks.
    EXPECT_THROW(read_header(path), Error);
  }
}

TEST(Safetensors, AcceptsValidEdgeCases) {
  TempDir dir;
  const std::string path = dir / "edge.safetensors";
  // Entries in any header order, unknown extra fields ignored, metadata null, empty tensors
  // sharing an offset, bool bytes other than 0/1 normalised.
  const std::string header = R"({"z":)" + entry(R"("F32")", "[0]", "[0,0]") +
                             R"(,"__metadata__":null,"b":{"data_offsets":[0,3],"shape":[3],)"
                             R"("dtype":"BOOL","extra":{"x":[1]}},"e":)" +
                             entry(R"("I8")", "[2,0]", "[3,3]") + "}";
  test::write_file(path, make_file(header, std::string("\x00\x01\x07", 3)));
  const File file = load(path);
  EXPECT_TRUE(file.metadata.empty());
  ASSERT_EQ(file.tensors.size(), 3u);
  expect_same(file.tensors.at("b"), torch::tensor({0, 1, 1}).to(torch::kBool), "b");
  EXPECT_EQ(file.tensors.at("b").to(torch::kUInt8).max().item<int>(), 1);
  expect_same(file.tensors.at("z"), torch::zeros({0}), "z");
  expect_same(file.tensors.at("e"), torch::zeros({2, 0}, torch::kInt8), "e");
}

TEST(Safetensors, MissingFileAndDirectory) {
  TempDir dir;
  std::string msg = load_error(dir / "nope.safetensors");
  EXPECT_NE(msg.find("nope.safetensors: no such file"), std::string::npos) << msg;
  msg = load_error(dir.path().string());
  EXPECT_NE(msg.find("not a regular file"), std::string::npos) << msg;
}

}  // namespace
}  // namespace zoo::safetensors
