#pragma once
// Checkpoint directories, the unit users move around:
//
//   OUT/checkpoint-STEP/
//     config.json          the resolved zoo config ({"model","data","train"})
//     model.safetensors    the model's state dict, names = registered module names
//     optimizer.pt         optimizer state (LibTorch archive)
//     trainer_state.json   step, epoch, data position, best metric, RNG states
//     training_weights.safetensors  with train.ema_decay only: the weights being trained
//                          (model.safetensors then holds their moving average)
//     (+ task assets such as vocabularies)
//
// A checkpoint is written into OUT/.checkpoint-STEP.tmp and renamed into place, so a kill
// at any moment leaves either the whole new checkpoint or none, never a half one.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "io/safetensors.h"

#include "io/config.h"

namespace zoo {

std::string checkpoint_dir_name(int64_t step);
/// Complete checkpoints in `output_dir`, oldest first: (step, path).
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& output_dir);
/// The newest complete checkpoint, or "" when there is none.
std::string latest_checkpoint(const std::string& output_dir);
/// Deletes the oldest checkpoints so that `keep` remain, never deleting `protect`.
void rotate_checkpoints(const std::string& output_dir, int64_t keep, const std::string& protect);

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

/// A Hugging Face Hub cache folder (`models--ORG--NAME`, holding refs/main and snapshots/HASH)
/// -> the snapshot that refs/main names; any other directory as it is.
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

/// Reads DIR/config.json: a zoo config, or a Hugging Face config.json (top-level
/// "model_type"), which becomes {"model": …} with default data/train sections.
json load_checkpoint_config(const std::string& dir);

/// The files of `dir` not named in `before` (the assets a task's save_assets() wrote: vocabularies,
/// tokenizer models) -> {file: FNV-1a of its bytes}, for trainer_state.json's "asset_fingerprints".
json asset_fingerprints(const std::string& dir, const std::set<std::string>& before);
/// The regular files in `dir` (names only).
std::set<std::string> file_names(const std::string& dir);
/// When DIR/trainer_state.json lists "asset_fingerprints", every listed file must still hold
/// the bytes it was saved with (a shuffled vocab.txt of the same size is not the model's);
/// throws zoo::Error naming the file and the fix. Hugging Face directories list none.
void check_asset_fingerprints(const std::string& dir);

/// Directory writer: files go to a temporary sibling until commit() renames it.
class CheckpointWriter {
 public:
  CheckpointWriter(const std::string& output_dir, int64_t step);
  ~CheckpointWriter();  // removes the temporary directory if not committed
  std::string path(const std::string& file) const;
  const std::string& tmp_dir() const { return tmp_; }
  /// fsyncs and renames into place; returns the final directory.
  std::string commit();

 private:
  std::string tmp_, final_;
  bool committed_ = false;
};

/// torch::save(optimizer, path) with its I/O checked: a failed write (a full disk) is one
/// zoo::Error naming the file and the reason, and removes the partial file. (LibTorch's own
/// file writer throws from a destructor there, which terminates the process.)
void save_optimizer(const torch::optim::Optimizer& optimizer, const std::string& path);

/// Base64 (RFC 4648) for RNG states in trainer_state.json.
std::string base64_encode(const std::string& bytes);
std::string base64_decode(const std::string& text);

}  // namespace zoo
