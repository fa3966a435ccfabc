#include "models/kernels/beam_topk.h"

#include <algorithm>
#include <limits>

#include <ATen/Parallel.h>

#include "core/error.h"
#include "models/kernels/vectorize.h"

namespace zoo::models {

namespace {

constexpr int64_t kTopkColumns = 128;  // columns skipped at once when their maximum cannot enter
constexpr float kNoCandidate = -std::numeric_limits<float>::infinity();

// The `width` best candidates of one block of rows, sorted best first; ties keep the order seen.
class TopCandidates {
 public:
  explicit TopCandidates(int64_t width) : width_(static_cast<size_t>(width)) { items_.reserve(width_ + 1); }
  // Candidates at or under this cannot enter.
  float threshold() const { return items_.size() < width_ ? kNoCandidate : items_.back().first; }
  void offer(float score, int64_t number) {
    auto at = std::upper_bound(items_.begin(), items_.end(), score,
                               [](float s, const std::pair<float, int64_t>& item) { return s > item.first; });
    items_.insert(at, {score, number});
    if (items_.size() > width_) items_.pop_back();
  }
  void write(double* scores, int64_t* numbers) const {
    for (size_t i = 0; i < width_; ++i) {
      scores[i] = i < items_.size() ? items_[i].first : kNoCandidate;
      numbers[i] = i < items_.size() ? items_[i].second : 0;
    }
  }

 private:
  size_t width_;
  std::vector<std::pair<float, int64_t>> items_;
};

void block_topk(const float* rows, int64_t stride, int64_t vocab, const double* row_scores, int64_t beams, TopCandidates& best) {
  for (int64_t k = 0; k < beams; ++k) {
    if (row_scores[k] == -std::numeric_limits<double>::infinity()) continue;  // every candidate -inf
    const auto add = static_cast<float>(row_scores[k]);
    const float* row = rows + k * stride;
    for (int64_t i = 0; i < vocab; i += kTopkColumns) {
      const int64_t n = std::min(kTopkColumns, vocab - i);
      if (!(max_of(row + i, n) + add > best.threshold())) continue;  // rounding keeps the order
      for (int64_t j = i; j < i + n; ++j) {
        const float s = row[j] + add;
        if (s > best.threshold()) best.offer(s, k * vocab + j);
      }
    }
  }
}

std::pair<torch::Tensor, torch::Tensor> with_torch_topk(const torch::Tensor& log_probs,
                                                        const std::vector<double>& row_scores, int64_t beams,
                                                        int64_t width) {
  const auto scores = torch::tensor(row_scores, torch::kDouble).to(log_probs.options());
  auto [top, numbers] = (log_probs + scores.unsqueeze(1)).view({-1, beams * log_probs.size(1)}).topk(width, 1);
  return {top.to(torch::kCPU, torch::kDouble).contiguous(), numbers.to(torch::kCPU).contiguous()};
}

}  // namespace

std::pair<torch::Tensor, torch::Tensor> beam_topk(const torch::Tensor& log_probs, const std::vector<double>& row_scores,
                                                  int64_t beams, int64_t width) {
  const int64_t n = log_probs.size(0), vocab = log_probs.size(1);
  if (beams < 1 || n % beams != 0 || static_cast<int64_t>(row_scores.size()) != n || width < 1 ||
      width > beams * vocab)
    throw std::logic_error(cat("beam_topk: ", n, " rows, ", row_scores.size(), " scores, ", beams, " beams, width ",
                               width));
  if (!log_probs.device().is_cpu() || log_probs.scalar_type() != torch::kFloat || log_probs.stride(1) != 1)
    return with_torch_topk(log_probs, row_scores, beams, width);
  const int64_t blocks = n / beams, stride = log_probs.stride(0);
  auto scores = torch::empty({blocks, width}, torch::kDouble);
  auto numbers = torch::empty({blocks, width}, torch::kLong);
  const float* x = log_probs.data_ptr<float>();
  at::parallel_for(0, blocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t a = begin; a < end; ++a) {
      TopCandidates best(width);
      block_topk(x + a * beams * stride, stride, vocab, row_scores.data() + a * beams, beams, best);
      best.write(scores.data_ptr<double>() + a * width, numbers.data_ptr<int64_t>() + a * width);
    }
  });
  return {scores, numbers};
}

}  // namespace zoo::models
