#pragma once
// What `zoo train` and `zoo eval` do, as the library's zoo::train and zoo::evaluate do it: the
// command line adds only its flags, signals and the data-parallel launch.
#include <string>
#include <vector>

#include <torch/torch.h>

#include "train/trainer.h"
#include "zoo/zoo.h"

namespace zoo::api {

struct TrainRequest {
  std::string config_file;
  std::string output_dir;               ///< "": runs/<config name>
  std::vector<std::string> overrides;   ///< section.key=value
  std::string device = "auto";
  bool resume = false;                  ///< continue resume_from, or the newest checkpoint of output_dir
  std::string resume_from;
  std::string init_from;                ///< train.init_from
  std::string config_source;            ///< how the resume hint repeats the config ("" = the file)
  bool data_parallel = false;           ///< join a launched process group (torchrun, Slurm, mpirun)
  ProgressCallback progress;
};

/// Checks everything first (config, device, resume target, memory budget), then trains.
TrainResult run_training(const TrainRequest& request);
/// TrainResult as zoo::train returns it: {"steps", "last_checkpoint", "best_checkpoint", "interrupted", "eval"}.
json train_result_json(const TrainResult& result);
/// zoo eval's line: the metrics of `split` ("" = the task's default), the split and the precision.
/// `quantize` "int8": the model's linear layers quantized (models/quantize.h), the rest in fp32;
/// the line then says "quantize": "int8". With `ensemble` (more checkpoint directories of the
/// same task and data, each loaded with the same overrides and quantization): the metrics of
/// the mean of every member's predicted distribution (classifiers: evaluate_ensemble;
/// translation: at every decoding step, Task::decode_as_ensemble), and "ensemble": the number
/// of members.
json evaluation_json(const std::string& checkpoint_dir, const std::string& split, const torch::Device& device,
                     const std::vector<std::string>& overrides = {}, const std::string& quantize = "",
                     const std::vector<std::string>& ensemble = {});

}  // namespace zoo::api
