#pragma once
// Registering a submodule or parameter under a dotted path ("attention.output.dense"),
// creating empty holder modules for the leading components. The blocks use it so that each
// model family places the same layers under its own Hugging Face names.
#include <string>

#include <torch/torch.h>

namespace zoo::models {

/// The module at `path` under `root` ("" is root itself), creating empty holders as needed.
inline torch::nn::Module& holder_at(torch::nn::Module& root, const std::string& path) {
  torch::nn::Module* m = &root;
  for (size_t start = 0; start < path.size();) {
    size_t end = path.find('.', start);
    if (end == std::string::npos) end = path.size();
    const std::string name = path.substr(start, end - start);
    const auto children = m->named_children();
    if (const auto* found = children.find(name)) {
      m = found->get();
    } else {
      m = m->register_module(name, std::make_shared<torch::nn::Module>()).get();
    }
    start = end + 1;
  }
  return *m;
}

/// The part of `path` before its last dot ("" if none), and the part after.
inline std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t dot = path.rfind('.');
  if (dot == std::string::npos) return {"", path};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

/// root.register_module at a dotted path: register_at(*this, "attention.output.dense", Linear(...)).
/// Returns what register_module returns (the holder, or the shared_ptr).
template <class M>
auto register_at(torch::nn::Module& root, const std::string& path, M module) {
  const auto [parent, name] = split_path(path);
  return holder_at(root, parent).register_module(name, std::move(module));
}

/// root.register_parameter at a dotted path.
inline torch::Tensor& register_parameter_at(torch::nn::Module& root, const std::string& path, torch::Tensor t) {
  const auto [parent, name] = split_path(path);
  return holder_at(root, parent).register_parameter(name, std::move(t));
}

}  // namespace zoo::models
