#include "data/batch.h"

#include <algorithm>

namespace zoo {

uint64_t seed_mix(uint64_t a, uint64_t b) {
  uint64_t z = a * 0x9E3779B97F4A7C15ULL + b + 0x632BE59BD9B4E019ULL;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

uint64_t batch_seed(uint64_t seed, int64_t epoch, int64_t index) {
  return seed_mix(seed_mix(seed, static_cast<uint64_t>(epoch)), static_cast<uint64_t>(index));
}

namespace data {

std::vector<std::vector<int64_t>> permuted_batches(int64_t n, int64_t batch_size, uint64_t seed, int64_t epoch) {
  auto gen = at::detail::createCPUGenerator(seed * 1000003ULL + static_cast<uint64_t>(epoch));
  auto perm = torch::randperm(n, gen, torch::kLong);
  const int64_t* p = perm.data_ptr<int64_t>();
  std::vector<std::vector<int64_t>> plan;
  for (int64_t i = 0; i < n; i += batch_size) plan.emplace_back(p + i, p + std::min(n, i + batch_size));
  return plan;
}

std::vector<std::vector<int64_t>> consecutive_batches(int64_t n, int64_t batch_size) {
  std::vector<std::vector<int64_t>> plan;
  for (int64_t i = 0; i < n; i += batch_size) {
    plan.emplace_back();
    for (int64_t j = i; j < std::min(n, i + batch_size); ++j) plan.back().push_back(j);
  }
  return plan;
}

}  // namespace data
}  // namespace zoo
