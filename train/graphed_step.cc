#include "train/graphed_step.h"

#include <cmath>

#include "core/error.h"
#include "train/precision.h"
#include "train/slices.h"

namespace zoo {


GraphedTrainStep::GraphedTrainStep(Task& task, ThreadedAdamW& optimizer, std::vector<torch::Tensor> params, bool bf16,
                                   const torch::Device& device, double max_grad_norm)
    : task_(task), optimizer_(optimizer), params_(std::move(params)), bf16_(bf16), device_(device),
      max_grad_norm_(max_grad_norm) {}

void GraphedTrainStep::step(bool capturing) {
  optimizer_.zero_grad();  // unset: backward allocates them (from the graph's memory while capturing)
  Loss loss;
  {
    AutocastGuard autocast(bf16_, device_);  // the forward pass only, as zoo's eager step
    loss = task_.loss(inputs_);
  }
  loss.total.backward();
  losses_.push_back(loss);
  if (max_grad_norm_ > 0) norms_.push_back(clip_grad_norm_async(params_, max_grad_norm_));
  optimizer_.set_capturing(capturing);
  optimizer_.step();
  optimizer_.set_capturing(false);
}

bool GraphedTrainStep::same_shapes(const Batch& batch) const {
  if (batch.tensors.size() != inputs_.tensors.size()) return false;
  for (const auto& [name, t] : batch.tensors) {
    const auto it = inputs_.tensors.find(name);
    if (it == inputs_.tensors.end() || t.sizes() != it->second.sizes() || t.scalar_type() != it->second.scalar_type())
      return false;
  }
  return true;
}

LossValues GraphedTrainStep::run(const Batch& batch, double* grad_norm) {
  if (graph_ && same_shapes(batch)) {
    for (const auto& [name, t] : batch.tensors) inputs_.tensors.at(name).copy_(t, /*non_blocking=*/true);
    inputs_.size = batch.size;
    optimizer_.before_replay();
    graph_->replay();
    *grad_norm = norms_.empty() ? NAN : norms_.back().item<double>();
    return loss_values(losses_.back());
  }
  // (Re)capture: the step runs for real once on the side stream (this batch's step), then is
  // recorded; the losses and norms of those two runs are kept apart.
  graph_.reset();
  inputs_ = Batch{{}, batch.size, batch.seed};
  for (const auto& [name, t] : batch.tensors) inputs_.tensors[name] = t.clone();
  losses_.clear(), norms_.clear();
  int run = 0;
  graph_ = std::make_unique<CudaGraphStep>([&] { step(/*capturing=*/run++ == 1); }, /*warmup=*/1);
  ++captures_;
  const LossValues real = loss_values(losses_.front());
  *grad_norm = norms_.empty() ? NAN : norms_.front().item<double>();
  losses_.erase(losses_.begin());
  if (!norms_.empty()) norms_.erase(norms_.begin());
  return real;
}

std::string cuda_graphs_refusal(const torch::Device& device, const Task& task, const torch::optim::Optimizer& optimizer,
                                int64_t gradient_accumulation_steps, bool data_parallel) {
  if (!cuda_graphs_available())
    return "train.cuda_graphs needs a LibTorch 2.2 or later with CUDA (this build has neither or is older)";
  if (!device.is_cuda()) return cat("train.cuda_graphs needs a CUDA device (this run trains on ", device.str(), ")");
  if (!task.graphable())
    return "train.cuda_graphs: this task's loss depends on more than the batch's tensors (host-side choices per "
           "batch), which a captured graph would freeze; train without it";
  if (!dynamic_cast<const ThreadedAdamW*>(&optimizer)) return "train.cuda_graphs needs train.optim=adamw";
  if (gradient_accumulation_steps != 1) return "train.cuda_graphs needs train.gradient_accumulation_steps=1";
  if (data_parallel) return "train.cuda_graphs does not run data parallel yet (one process only)";
  return "";
}

}  // namespace zoo
