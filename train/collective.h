#pragma once
// What the trainer needs from the other processes of a data-parallel run. The trainer sees
// only this interface; train/distributed.h implements it on PyTorch's c10d (Gloo, NCCL).
// Every call is collective: all processes make the same calls in the same order.
#include <string>
#include <vector>

#include <torch/torch.h>

namespace zoo {

class Collective {
 public:
  virtual ~Collective() = default;
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  /// "gloo" or "nccl", for the logs.
  virtual std::string backend() const = 0;

  /// Makes every process's parameters and buffers equal to rank 0's and sets up the
  /// gradient buckets of the model's trainable parameters. Called once, before training.
  virtual void attach(torch::nn::Module& model) = 0;
  /// Called before the backward pass of an optimizer step's last micro-batch. With `overlap`
  /// the gradients are all-reduced in buckets as backward produces them; without, all at
  /// once in average_gradients() (e.g. when the batch is cut into per-core slices).
  virtual void prepare_backward(bool overlap) = 0;
  /// Leaves in every parameter's .grad the mean of the processes' gradients.
  virtual void average_gradients() = 0;
  /// Element-wise sum of `values` over the processes.
  virtual void sum(std::vector<double>& values) = 0;
  /// One line for the log: e.g. how many gradient buckets there are and how many of their
  /// all-reduces started during backward.
  virtual std::string summary() const = 0;
  /// Every process's `bytes` in rank order (all of the same length).
  virtual std::vector<std::string> gather(const std::string& bytes) = 0;
};

}  // namespace zoo
