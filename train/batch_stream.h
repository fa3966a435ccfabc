#pragma once
// The training batches, built in order on a background thread from (epoch, index in the
// epoch), so the model never waits on I/O or augmentation and resume is exact: each batch
// depends on its position and the seed only.
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include "train/task.h"

namespace zoo {

/// Process `rank`'s part of a global batch of a data-parallel run: the r-th of `world`
/// contiguous equal parts. A batch that does not divide evenly is first padded with its own
/// first examples (as PyTorch's DistributedSampler pads), so every process gets as many.
std::vector<int64_t> shard_of(const std::vector<int64_t>& batch, int rank, int world);

class BatchStream {
 public:
  struct Item {
    Batch batch;
    int64_t epoch, index;  // position of this batch
  };

  /// Starts at batch `index` of `epoch`, keeping up to `prefetch` batches ready. In a
  /// data-parallel run of `world` processes the epoch is planned in global batches of
  /// batch_size x world and this process (`rank`) takes its shard_of() each.
  BatchStream(const Task& task, uint64_t seed, int64_t batch_size, int64_t epoch, int64_t index, int64_t prefetch,
              int rank = 0, int world = 1);
  ~BatchStream();
  BatchStream(const BatchStream&) = delete;
  BatchStream& operator=(const BatchStream&) = delete;
  /// The next batch; rethrows what the loader thread threw.
  Item next();

 private:
  void run(int64_t epoch, int64_t index);

  const Task& task_;
  uint64_t seed_;
  int64_t batch_size_, prefetch_;
  int rank_, world_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Item> queue_;
  bool done_ = false;
  std::exception_ptr error_;
  std::thread worker_;
};

}  // namespace zoo
