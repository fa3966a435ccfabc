#pragma once
// Checkpoint averaging (train.average_checkpoints, zoo average): the element-wise mean of the
// model weights of a run's newest checkpoints, as Marian and fairseq's average_checkpoints.py
// do, written as a checkpoint directory that zoo eval, translate and export load like any
// other:
//
//   OUT/checkpoint-averaged/
//     model.safetensors     the mean of each floating-point tensor (accumulated in float64,
//                           stored in the files' dtype); other tensors from the newest file
//     averaged_from.json    {"checkpoints": [...], "steps": [...]}
//     config.json + the task's assets, copied from the newest checkpoint
//
// It holds no optimizer or trainer state: it is a model, not a point to resume from.
#include <cstdint>
#include <string>
#include <vector>

namespace zoo {

/// The name of the averaged checkpoint's directory in a run's output directory.
constexpr const char* kAveragedCheckpoint = "checkpoint-averaged";

/// The newest `count` complete checkpoints of the run in `output_dir`, oldest first. Throws
/// zoo::Error naming the directory when it has fewer (and what keeps more: save_steps,
/// save_total_limit).
std::vector<std::string> newest_checkpoints(const std::string& output_dir, int64_t count);

/// Writes the mean of the weights of `checkpoints` (directories; at least one) to
/// `output_dir`/checkpoint-averaged, replacing an earlier one atomically, and returns its
/// path. Every checkpoint must hold the same tensor names, shapes and dtypes as the newest
/// (the last); anything else is a zoo::Error naming the file and the tensor.
std::string average_checkpoints(const std::vector<std::string>& checkpoints, const std::string& output_dir);

}  // namespace zoo
