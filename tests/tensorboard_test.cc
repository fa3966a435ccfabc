// zoo::EventWriter and CRC32C, checked by an independent reader (tests/py/tfevents_read.py)
// that verifies every record's CRCs and decodes the Event protobufs itself.
#include "train/tensorboard.h"

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "core/error.h"

namespace zoo {
namespace {

using test::TempDir;

test::RunResult read_events(const std::string& path) {
  return test::run_python("tfevents_read.py", path);
}

std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(Crc32c, StandardCheckValues) {
  EXPECT_EQ(tfrecord::crc32c("123456789"), 0xE3069283u);
  EXPECT_EQ(tfrecord::crc32c(""), 0x00000000u);
  // RFC 3720 (iSCSI) B.4 test vectors.
  EXPECT_EQ(tfrecord::crc32c(std::string(32, '\x00')), 0x8A9136AAu);
  EXPECT_EQ(tfrecord::crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string ascending;
  for (int i = 0; i < 32; ++i) ascending.push_back(static_cast<char>(i));
  EXPECT_EQ(tfrecord::crc32c(ascending), 0x46DD794Eu);
}

TEST(Crc32c, MaskedAndFramed) {
  const uint32_t crc = tfrecord::crc32c("123456789");
  EXPECT_EQ(tfrecord::masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);

  const std::string rec = tfrecord::frame("abc");
  ASSERT_EQ(rec.size(), 8u + 4u + 3u + 4u);
  EXPECT_EQ(rec.substr(0, 8), std::string("\x03\0\0\0\0\0\0\0", 8));
  auto u32 = [&](size_t at) {
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(rec[at + i]);
    return v;
  };
  EXPECT_EQ(u32(8), tfrecord::masked_crc32c(rec.substr(0, 8)));
  EXPECT_EQ(rec.substr(12, 3), "abc");
  EXPECT_EQ(u32(15), tfrecord::masked_crc32c("abc"));
}

TEST(EventWriter, IndependentReaderDecodesScalars) {
  TempDir dir;
  const std::string log_dir = dir / "runs/exp1";  // created on demand
  std::string path;
  {
    EventWriter writer(log_dir);
    path = writer.path();
    writer.add_scalar("loss", 0.5, 0);
    writer.add_scalar("loss", 0.25, 1);
    writer.add_scalar("acc/top1", -1.75, int64_t{1} << 40);  // multi-byte varint
    writer.add_scalar("big", 1e10, 2);
    writer.add_scalar("neg_step", 3.0, -5);  // 10-byte two's complement varint
    writer.add_scalar("", 0.0, 127);
    writer.add_scalar("loss", 0.1, 128);  // float32-rounded
    // No flush(): the destructor must write everything.
  }
  ASSERT_EQ(event_files(log_dir), std::vector<std::string>{path});
  const std::string name = std::filesystem::path(path).filename().string();
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  const std::regex pattern("events\\.out\\.tfevents\\.[0-9]{10,}\\.(.*)\\.([0-9]+)");
  std::smatch m;
  ASSERT_TRUE(std::regex_match(name, m, pattern)) << name;
  EXPECT_EQ(m[1].str(), host);
  EXPECT_EQ(m[2].str(), std::to_string(getpid()));

  const auto r = read_events(path);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "{\"file_version\":\"brain.Event:2\"}\n"
            "{\"step\":0,\"tag\":\"loss\",\"value\":0.5}\n"
            "{\"step\":1,\"tag\":\"loss\",\"value\":0.25}\n"
            "{\"step\":1099511627776,\"tag\":\"acc/top1\",\"value\":-1.75}\n"
            "{\"step\":2,\"tag\":\"big\",\"value\":10000000000.0}\n"
            "{\"step\":-5,\"tag\":\"neg_step\",\"value\":3.0}\n"
            "{\"step\":127,\"tag\":\"\",\"value\":0.0}\n"
            "{\"step\":128,\"tag\":\"loss\",\"value\":0.10000000149011612}\n");
}

TEST(EventWriter, FlushMakesRecordsVisibleWhileOpen) {
  TempDir dir;
  EventWriter writer(dir.path().string());
  // The file-version record is on disk from the start.
  auto r = read_events(writer.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output, "{\"file_version\":\"brain.Event:2\"}\n");

  writer.add_scalar("lr", 0.125, 10);
  writer.flush();
  r = read_events(writer.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output,
            "{\"file_version\":\"brain.Event:2\"}\n"
            "{\"step\":10,\"tag\":\"lr\",\"value\":0.125}\n");
}

TEST(EventWriter, ReaderDetectsCorruption) {
  TempDir dir;
  std::string path;
  {
    EventWriter writer(dir.path().string());
    path = writer.path();
    for (int i = 0; i < 5; ++i) writer.add_scalar("loss", 1.0 / (1 << i), i);
  }
  const std::string good = test::read_file(path);
  auto r = read_events(path);
  ASSERT_EQ(r.exit_code, 0) << r.output;  // the intact file passes

  // One flipped bit in the tag of the last record's data.
  std::string bad = good;
  const size_t tag_at = bad.rfind("loss");
  ASSERT_NE(tag_at, std::string::npos);
  bad[tag_at + 1] ^= 0x01;
  test::write_file(path, bad);
  r = read_events(path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("record 5: data CRC mismatch"), std::string::npos) << r.output;

  // One flipped bit in the length of the second record.
  bad = good;
  const size_t second = 8 + 4 + static_cast<unsigned char>(good[0]) + 4;
  bad[second] ^= 0x10;
  test::write_file(path, bad);
  r = read_events(path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("record 1: length CRC mismatch"), std::string::npos) << r.output;

  // A flipped bit in a stored CRC.
  bad = good;
  bad[bad.size() - 1] ^= 0x80;
  test::write_file(path, bad);
  r = read_events(path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("data CRC mismatch"), std::string::npos) << r.output;

  // A truncated file.
  test::write_file(path, good.substr(0, good.size() - 3));
  r = read_events(path);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("truncated"), std::string::npos) << r.output;
}

TEST(EventWriter, WritersNeverShareAFile) {
  TempDir dir;
  EventWriter a(dir.path().string());
  EventWriter b(dir.path().string());
  EXPECT_NE(a.path(), b.path());
  a.add_scalar("a", 1.0, 0);
  b.add_scalar("b", 2.0, 0);
  a.flush();
  b.flush();
  EXPECT_EQ(event_files(dir.path().string()).size(), 2u);
  auto r = read_events(a.path());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("\"tag\":\"a\""), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("\"tag\":\"b\""), std::string::npos) << r.output;
}

TEST(EventWriter, UnusableLogDirIsAnError) {
  TempDir dir;
  const std::string file = dir / "not_a_dir";
  test::write_file(file, "x");
  try {
    EventWriter writer(file + "/sub");
    ADD_FAILURE() << "no error for a log dir under a regular file";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the TensorBoard log directory"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace zoo
