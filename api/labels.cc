#include "api/labels.h"

#include "data/text.h"

namespace zoo::api {

std::vector<std::vector<Label>> top_labels(const torch::Tensor& probabilities, const std::vector<std::string>& names,
                                           int top_k) {
  const int64_t k = std::min<int64_t>(top_k, static_cast<int64_t>(names.size()));
  auto [p, index] = probabilities.to(torch::kCPU).topk(k, -1);
  std::vector<std::vector<Label>> out(static_cast<size_t>(probabilities.size(0)));
  for (size_t i = 0; i < out.size(); ++i)
    for (int64_t j = 0; j < k; ++j)
      out[i].push_back({names[static_cast<size_t>(index[static_cast<int64_t>(i)][j].item<int64_t>())],
                        p[static_cast<int64_t>(i)][j].item<float>()});
  return out;
}

void check_not_blank(const std::vector<std::string>& inputs, const char* what) {
  for (size_t i = 0; i < inputs.size(); ++i)
    if (data::python_strip(inputs[i]).empty())
      throw Error(cat(what, " ", i, " is empty; give it some text (or leave it out)"));
}

}  // namespace zoo::api
