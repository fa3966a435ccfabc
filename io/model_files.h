#pragma once
// A model's weights as files: state dicts in Hugging Face's layouts, single or sharded
// safetensors, Hub cache folders, strict loading with dtype and finiteness checks.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "io/config.h"
#include "io/safetensors.h"

namespace zoo {

/// A non-empty run of decimal digits: a checkpoint's step, a layer's index in a tensor name.
bool is_index(const std::string& part);

/// The model's parameters and buffers, by registered name.
std::vector<std::pair<std::string, torch::Tensor>> state_dict(const torch::nn::Module& model);
/// Writes the model's tensors in the file layout of its model type (Hugging Face's; see
/// models::ModelEntry::to_hf_tensors), with config's model_type in the metadata; above
/// `max_shard_bytes` (> 0) as shards beside `path` (save_weights).
void save_model(const torch::nn::Module& model, const std::string& path, const json& config,
                uint64_t max_shard_bytes = 0);
/// How copy_tensors() names the tensors it fills and what its errors suggest.
struct TensorSet {
  std::string prefix;             // the file's names are prefix + the targets' names
  std::string owner = "the model";
  std::string missing_hint = "the checkpoint does not match this model's config";
  std::string shape_hint = "config and weights disagree";
};
/// Copies `file`'s tensors into `targets` strictly: each target present with its shape, a dtype
/// change only between float widths (check_dtype), no tensor of the file left over; errors name
/// `path` and the tensor.
void copy_tensors(const std::string& path, const std::map<std::string, torch::Tensor>& file,
                  const std::vector<std::pair<std::string, torch::Tensor>>& targets, const TensorSet& set);
/// Loads a safetensors state dict into `model`. Every key of the model must be present with
/// the same shape; extra keys are an error (strict). Floating-point widths are converted
/// (fp16/bf16/fp32/fp64); any other change of dtype (an integer tensor where the model holds
/// floats) is an error naming the tensor, and so is a tensor holding an inf or NaN. The file's
/// tensors are converted from the layout of `model_type` ("" = the one in the file's metadata).
void load_model(torch::nn::Module& model, const std::string& path, const std::string& model_type = "");

/// Throws zoo::Error naming `path`, the tensor, how many of its values are inf or NaN and the
/// first of them, for the first floating-point tensor of `tensors` that holds any. One pass
/// (a sum) over each tensor; only a non-finite sum is looked at element by element.
void check_finite(const std::string& path, const std::map<std::string, torch::Tensor>& tensors);

/// A Hugging Face Hub cache folder (`models--ORG--NAME`, holding refs/main and snapshots/HASH)
/// -> the snapshot that refs/main names; a training run's output directory (no weights of its
/// own, checkpoint-N folders with trainer_state.json) -> its newest checkpoint; any other
/// directory as it is.
std::string model_dir(const std::string& dir);
/// Whether DIR has weights: model.safetensors, or the shards of model.safetensors.index.json.
bool has_weights(const std::string& dir);
/// The tensors of DIR/model.safetensors, or of the shards DIR/model.safetensors.index.json
/// lists (Hugging Face's layout for big models): every shard a plain file name in DIR, every
/// tensor in the shard the index names, none twice.
safetensors::File load_weights(const std::string& dir);
/// Writes `tensors` as DIR/model.safetensors, or, when they hold more than `max_shard_bytes`
/// (> 0), as model-0000i-of-0000n.safetensors shards of at most that size (one bigger tensor
/// gets a shard of its own) and model.safetensors.index.json.
void save_weights(const std::string& dir, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                  const std::map<std::string, std::string>& metadata, uint64_t max_shard_bytes = 0);

/// A file's tensors in the layout of `model_type` ("" = the one in its metadata), every one
/// finite; DIR/model.safetensors also reads the shards beside it.
safetensors::File load_converted(const std::string& path, const std::string& model_type);
/// Floating-point widths convert into each other; any other dtype change is an error naming
/// `path` and the tensor.
void check_dtype(const std::string& path, const std::string& name, const torch::Tensor& from, const torch::Tensor& to);

}  // namespace zoo
