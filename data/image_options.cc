#include "data/image_options.h"

namespace zoo::data {

void ImageDataOptions::resolve(int64_t channels) {
  if (mean.empty() != std.empty()) throw Error("config: data.mean and data.std must be given together");
  if (mean.empty()) {
    if (dataset == "fashion_mnist") mean = {0.2860}, std = {0.3530};
    else if (dataset == "mnist") mean = {0.1307}, std = {0.3081};
    else mean = {0.4914, 0.4822, 0.4465}, std = {0.2470, 0.2435, 0.2616};
    if (static_cast<int64_t>(mean.size()) != channels) {  // e.g. a grey model on CIFAR: average
      double m = 0, s = 0;
      for (size_t i = 0; i < mean.size(); ++i) m += mean[i] / mean.size(), s += std[i] / std.size();
      mean.assign(channels, m);
      std.assign(channels, s);
    }
  }
  const auto n = static_cast<int64_t>(mean.size());
  if ((n != 1 && n != channels) || std.size() != mean.size())
    throw Error(cat("config: data.mean/data.std need 1 or ", channels, " values (model.num_channels)"));
  for (double s : std)
    if (!(s > 0)) throw Error("config: data.std values must be > 0");
}

std::vector<double> ImageDataOptions::normalized_black() const {
  std::vector<double> black;
  for (size_t i = 0; i < mean.size(); ++i) black.push_back(-mean[i] / std[i]);
  return black;
}

}  // namespace zoo::data
