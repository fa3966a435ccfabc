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

#include "io/checkpoint_assets.h"
#include "io/config.h"
#include "io/model_files.h"
#include "io/pretrained.h"

namespace zoo {

std::string checkpoint_dir_name(int64_t step);
/// The step of a directory named checkpoint-STEP (its name, or a path ending in it); -1 for
/// any other name.
int64_t checkpoint_step(const std::string& dir);
/// Complete checkpoints in `output_dir`, oldest first: (step, path).
std::vector<std::pair<int64_t, std::string>> list_checkpoints(const std::string& output_dir);
/// The newest complete checkpoint, or "" when there is none.
std::string latest_checkpoint(const std::string& output_dir);
/// DIR (or the snapshot of a Hub cache folder) when it is a checkpoint: a directory with
/// config.json and weights; else a zoo::Error naming it and what it lacks.
std::string checked_checkpoint_dir(const std::string& dir);
/// Deletes the oldest checkpoints so that `keep` remain, never deleting `protect`.
void rotate_checkpoints(const std::string& output_dir, int64_t keep, const std::string& protect);

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
