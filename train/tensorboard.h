#pragma once
// A minimal TensorBoard event-file writer: scalars only, no TensorFlow or protobuf library.
//
// The file is a sequence of TFRecords, each
//   [u64 length][u32 masked CRC32C of the length bytes][data][u32 masked CRC32C of data]
// (all little-endian), whose data is a hand-encoded tensorflow.Event protobuf.
#include <cstdint>
#include <fstream>
#include <string>
#include <string_view>

namespace zoo {

namespace tfrecord {

/// CRC-32C (Castagnoli; reflected polynomial 0x82F63B78). crc32c("123456789") == 0xE3069283.
uint32_t crc32c(std::string_view data);

/// The CRC as TFRecord stores it: ((crc >> 15) | (crc << 17)) + 0xa282ead8.
uint32_t masked_crc32c(std::string_view data);

/// `data` framed as one TFRecord (length, its masked CRC, data, masked CRC of data).
std::string frame(std::string_view data);

}  // namespace tfrecord

/// Appends scalar summaries to a new event file in `log_dir`, named
/// events.out.tfevents.<unix seconds>.<hostname>.<pid>, which `tensorboard --logdir` reads.
/// Writes are buffered; call flush() to make them visible (the destructor flushes too).
class EventWriter {
 public:
  /// Creates `log_dir` if needed and starts the file. Throws zoo::Error if it cannot.
  explicit EventWriter(const std::string& log_dir);
  /// Flushes; never throws.
  ~EventWriter();
  EventWriter(const EventWriter&) = delete;
  EventWriter& operator=(const EventWriter&) = delete;

  /// Records `value` (stored as float32, as TensorBoard does) under `tag` at `step`.
  void add_scalar(const std::string& tag, double value, int64_t step);

  /// Pushes buffered records to the file. Throws zoo::Error if any write has failed.
  void flush();

  /// The event file being written.
  const std::string& path() const { return path_; }

 private:
  void write_event(const std::string& event);

  std::string path_;
  std::ofstream out_;
};

}  // namespace zoo
