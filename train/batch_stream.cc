#include "train/batch_stream.h"

#include "core/error.h"

namespace zoo {

std::vector<int64_t> shard_of(const std::vector<int64_t>& batch, int rank, int world) {
  if (world <= 1 || batch.empty()) return batch;
  const size_t per = (batch.size() + world - 1) / world;
  std::vector<int64_t> part(per);
  for (size_t i = 0; i < per; ++i) part[i] = batch[(rank * per + i) % batch.size()];
  return part;
}

BatchStream::BatchStream(const Task& task, uint64_t seed, int64_t batch_size, int64_t epoch, int64_t index,
                         int64_t prefetch, int rank, int world)
    : task_(task), seed_(seed), batch_size_(batch_size), prefetch_(prefetch), rank_(rank), world_(world) {
  worker_ = std::thread([this, epoch, index] { run(epoch, index); });
}

BatchStream::~BatchStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

BatchStream::Item BatchStream::next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !queue_.empty() || error_; });
  if (error_) std::rethrow_exception(error_);
  Item item = std::move(queue_.front());
  queue_.pop_front();
  cv_.notify_all();
  return item;
}

void BatchStream::run(int64_t epoch, int64_t index) {
  try {
    while (true) {
      auto plan = task_.epoch_plan(seed_, epoch, batch_size_ * world_);
      if (plan.empty()) throw Error("the training set is empty");
      for (; index < static_cast<int64_t>(plan.size()); ++index) {
        // Other ranks draw their own augmentation (a rank's seed mixed in); rank 0 draws
        // what a single process draws.
        const uint64_t bseed = batch_seed(seed_, epoch, index);
        Item item{task_.make_train_batch(shard_of(plan[index], rank_, world_),
                                         rank_ == 0 ? bseed : seed_mix(bseed, static_cast<uint64_t>(rank_))),
                  epoch, index};
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [this] { return done_ || static_cast<int64_t>(queue_.size()) < prefetch_; });
        if (done_) return;
        queue_.push_back(std::move(item));
        cv_.notify_all();
      }
      ++epoch;
      index = 0;
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
    cv_.notify_all();
  }
}

}  // namespace zoo
