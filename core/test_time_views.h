#pragma once
// Test-time augmentation of images: which views of each image a classifier averages. The data
// options say which (data.test_time_hflip, data.test_time_shift); the model forwards them.
#include <cstdint>
#include <vector>

namespace zoo {

struct TestTimeViews {
  /// the mirror image (of every view)
  bool mirror = false;
  /// the image moved this many pixels up, down, left and right; 0 = none
  int64_t shift = 0;
  /// what enters at the edge, per channel (1 value or num_channels): normalised black
  std::vector<double> fill;
};

}  // namespace zoo
