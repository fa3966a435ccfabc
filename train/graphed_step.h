#pragma once
// train.cuda_graphs: the trainer's optimizer step (forward, backward, clipping, AdamW) on
// CUDA as one captured graph, replayed for every batch of the same shapes.
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "train/cuda_graph.h"
#include "train/optimizers.h"
#include "train/task.h"

namespace zoo {

class GraphedTrainStep {
 public:
  /// `optimizer` must be the trainer's ThreadedAdamW over `params`; `bf16` autocasts the
  /// forward pass; `max_grad_norm` 0 means no clipping.
  GraphedTrainStep(Task& task, ThreadedAdamW& optimizer, std::vector<torch::Tensor> params, bool bf16,
                   const torch::Device& device, double max_grad_norm);

  /// One optimizer step on `batch` (already on the device), at the learning rate the
  /// optimizer's groups hold. The first batch, and any batch whose shapes differ from the
  /// captured one, runs for real on the capture's side stream and is captured; the others
  /// are copied into the captured inputs and replayed. Returns the loss values; `grad_norm`
  /// gets the norm before clipping (NaN without clipping).
  LossValues run(const Batch& batch, double* grad_norm);

  /// How many times the step was captured (1 when every batch has the same shapes).
  int captures() const { return captures_; }

 private:
  void step(bool capturing);
  bool same_shapes(const Batch& batch) const;

  Task& task_;
  ThreadedAdamW& optimizer_;
  std::vector<torch::Tensor> params_;
  bool bf16_;
  torch::Device device_;
  double max_grad_norm_;
  Batch inputs_;  // the captured step's inputs: each batch is copied into them
  std::vector<Loss> losses_;  // of the step's runs while capturing: the real run's, then the graph's
  std::vector<torch::Tensor> norms_;
  std::unique_ptr<CudaGraphStep> graph_;
  int captures_ = 0;
};

/// Why train.cuda_graphs cannot be used for this run ("" when it can): the option's
/// conditions, each named with the key to change.
std::string cuda_graphs_refusal(const torch::Device& device, const Task& task, const torch::optim::Optimizer& optimizer,
                                int64_t gradient_accumulation_steps, bool data_parallel);

}  // namespace zoo
