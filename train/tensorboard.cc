#include "train/tensorboard.h"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>

#include "core/error.h"

namespace zoo {
namespace tfrecord {
namespace {

constexpr std::array<uint32_t, 256> make_crc32c_table() {
  std::array<uint32_t, 256> table{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    table[i] = c;
  }
  return table;
}

constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFFu;
  for (const char ch : data) {
    crc = kCrc32cTable[(crc ^ static_cast<unsigned char>(ch)) & 0xFF] ^ (crc >> 8);
  }
  return ~crc;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

}  // namespace tfrecord

namespace {

// Protobuf wire format, just what tensorflow.Event needs.
enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
}

void put_tag(std::string& out, uint32_t field, WireType type) {
  put_varint(out, (static_cast<uint64_t>(field) << 3) | type);
}

void put_double(std::string& out, uint32_t field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_tag(out, field, kFixed64);
  put_le(out, bits, 8);
}

void put_float(std::string& out, uint32_t field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_tag(out, field, kFixed32);
  put_le(out, bits, 4);
}

void put_int64(std::string& out, uint32_t field, int64_t value) {
  put_tag(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(value));  // negative: 10-byte two's complement
}

void put_bytes(std::string& out, uint32_t field, std::string_view bytes) {
  put_tag(out, field, kLengthDelimited);
  put_varint(out, bytes.size());
  out.append(bytes);
}

// tensorflow.Event fields.
constexpr uint32_t kEventWallTime = 1;     // double
constexpr uint32_t kEventStep = 2;         // int64
constexpr uint32_t kEventFileVersion = 3;  // string
constexpr uint32_t kEventSummary = 5;      // Summary
// tensorflow.Summary / Summary.Value fields.
constexpr uint32_t kSummaryValue = 1;      // repeated Value
constexpr uint32_t kValueTag = 1;          // string
constexpr uint32_t kValueSimpleValue = 2;  // float

double wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  return buf;
}

}  // namespace

namespace tfrecord {

std::string frame(std::string_view data) {
  std::string length;
  put_le(length, data.size(), 8);
  std::string out;
  out.reserve(data.size() + 16);
  out += length;
  put_le(out, masked_crc32c(length), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

}  // namespace tfrecord

EventWriter::EventWriter(const std::string& log_dir) {
  std::error_code ec;
  std::filesystem::create_directories(log_dir, ec);
  if (ec)
    throw Error(cat(log_dir, ": cannot create the TensorBoard log directory: ", ec.message()));
  const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::string base = (std::filesystem::path(log_dir) /
                            cat("events.out.tfevents.", seconds, ".", hostname(), ".", getpid()))
                               .string();
  // Two writers of one process in one second would share a name: never clobber a file.
  path_ = base;
  for (int i = 1; std::filesystem::exists(path_, ec); ++i) path_ = cat(base, ".", i);
  out_.open(path_, std::ios::binary | std::ios::trunc);
  if (!out_) throw Error(cat(path_, ": cannot open for writing: ", std::strerror(errno)));

  std::string event;
  put_double(event, kEventWallTime, wall_time());
  put_bytes(event, kEventFileVersion, "brain.Event:2");
  write_event(event);
  flush();
}

EventWriter::~EventWriter() { out_.flush(); }

void EventWriter::add_scalar(const std::string& tag, double value, int64_t step) {
  std::string summary_value;
  put_bytes(summary_value, kValueTag, tag);
  put_float(summary_value, kValueSimpleValue, static_cast<float>(value));
  std::string summary;
  put_bytes(summary, kSummaryValue, summary_value);

  std::string event;
  put_double(event, kEventWallTime, wall_time());
  put_int64(event, kEventStep, step);
  put_bytes(event, kEventSummary, summary);
  write_event(event);
}

void EventWriter::flush() {
  out_.flush();
  if (!out_) throw Error(cat(path_, ": writing TensorBoard events failed (disk full?)"));
}

void EventWriter::write_event(const std::string& event) {
  const std::string record = tfrecord::frame(event);
  out_.write(record.data(), static_cast<std::streamsize>(record.size()));
}

}  // namespace zoo
