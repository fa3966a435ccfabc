#pragma once
// Fine-tuning's start: the tensors of a pretrained directory that the model has, by name.
#include <string>
#include <vector>

#include <torch/torch.h>

namespace zoo {

/// What init_from_pretrained() did, by tensor name (the model's names).
struct PretrainedReport {
  std::vector<std::string> loaded;      // copied from the file
  std::vector<std::string> missing;     // the model's tensors the file does not have: kept as initialised
  std::vector<std::string> unexpected;  // the file's tensors the model does not have (file names): ignored
};
/// Fine-tuning: copies every tensor of DIR/model.safetensors whose name (after the first
/// matching "FROM=TO" prefix rename of `key_map`) the model has; prints the missing and the
/// unexpected names to stderr as Hugging Face's from_pretrained does. A tensor whose shape
/// differs is an error naming it and both shapes; so is a file that matches no tensor at all.
PretrainedReport init_from_pretrained(torch::nn::Module& model, const std::string& dir,
                                      const std::vector<std::string>& key_map, const std::string& model_type = "");

}  // namespace zoo
