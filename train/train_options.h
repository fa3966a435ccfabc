#pragma once
// The "train" section of a config: Hugging Face TrainingArguments names where one exists.
#include <cstdint>
#include <string>
#include <vector>

#include "core/options.h"

namespace zoo {

/// The "train" section. Names follow Hugging Face TrainingArguments where one exists.
struct TrainOptions {
  int64_t max_steps = 0;  // > 0 overrides num_train_epochs
  double max_time = 0;  // seconds of training (wall time); > 0: the schedule follows the clock
  double num_train_epochs = 3;
  int64_t per_device_train_batch_size = 8;
  int64_t per_device_eval_batch_size = 64;
  int64_t gradient_accumulation_steps = 1;
  std::string optim = "adamw";
  double learning_rate = 5e-5;
  double weight_decay = 0.0;
  std::vector<std::string> weight_decay_exclude;  // parameter-name fragments kept free of decay
  double layer_lr_decay = 1.0;  // layer-wise learning-rate decay (1 = off)
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_epsilon = 1e-8;
  double momentum = 0.9;  // sgd
  std::string lr_scheduler_type = "linear";
  double min_lr_rate = 0.0;  // cosine_with_min_lr
  int64_t warmup_steps = 0;
  double warmup_ratio = 0.0;
  double max_grad_norm = 1.0;  // 0 disables clipping
  double label_smoothing_factor = 0.0;  // classification losses (Hugging Face's name)
  double r_drop_alpha = 0.0;  // R-Drop's weight of the two dropout passes' KL divergence; 0 = off
  double ema_decay = 0.0;  // exponential moving average of the weights; 0 = off
  int64_t logging_steps = 50;
  int64_t eval_steps = 0;  // 0: evaluate at the end only
  int64_t save_steps = 500;  // 0: save at the end only
  int64_t save_total_limit = 2;  // 0: keep all
  int64_t average_checkpoints = 0;  // at the end: the mean of the newest N checkpoints; 0 = off
  std::string metric_for_best_model;  // "" -> the task's default
  bool greater_is_better = false;  // ignored unless metric_for_best_model is set
  int64_t early_stopping_patience = 0;  // evaluations without improvement; 0 = off
  int64_t seed = 42;
  std::string precision = "fp32";
  int64_t dataloader_prefetch = 4;  // batches prepared ahead by the loader thread
  bool report_to_tensorboard = true;
  std::string init_from;  // checkpoint or Hugging Face directory to start from
  std::vector<std::string> init_from_key_map;  // "from_prefix=to_prefix" renames
  std::string ddp_backend = "auto";  // data parallel (train/distributed.h)
  double ddp_timeout = 1800;
  double ddp_bucket_cap_mb = 25;
  bool cuda_graphs = false;
  bool gradient_checkpointing = false;
  bool check_memory = true;
  json lora;  // null: no adapters (models/lora.h, LoraOptions)

  template <class V>
  void fields(V& v) {
    v("max_steps", max_steps, "total optimizer steps; > 0 overrides num_train_epochs", at_least(0));
    v("num_train_epochs", num_train_epochs, "epochs when max_steps is 0", at_least(0));
    v("max_time", max_time,
      "seconds of wall time to train (evaluations included) instead of a number of steps: the learning-rate "
      "schedule runs over this budget, its length re-estimated from the speed so far before every step "
      "(max_steps / num_train_epochs give only the first estimate), and the run ends, evaluated and saved, when "
      "the time is spent. The steps it makes depend on the machine. One process only; 0 = off",
      between(0, 1.0e7));
    v("per_device_train_batch_size", per_device_train_batch_size, "examples per micro-batch", at_least(1));
    v("per_device_eval_batch_size", per_device_eval_batch_size, "examples per evaluation batch", at_least(1));
    v("gradient_accumulation_steps", gradient_accumulation_steps, "micro-batches per optimizer step", at_least(1));
    v("optim", optim, "optimizer", one_of({"adamw", "adam", "sgd"}));
    v("learning_rate", learning_rate, "peak learning rate", between(0, 100));
    v("weight_decay", weight_decay, "decoupled (adamw) or L2 (adam, sgd) decay; not applied to biases/norms",
      between(0, 10));
    v("weight_decay_exclude", weight_decay_exclude,
      "parameters whose name contains one of these fragments get no weight decay either, e.g. "
      "[\"wte.\", \"wpe.\"] for embeddings (nanoGPT until February 2023)");
    v("layer_lr_decay", layer_lr_decay,
      "layer-wise learning-rate decay for fine-tuning (ELECTRA, BEiT): the head keeps the learning rate, "
      "the top layer gets it times this, each layer below one factor more, the embeddings last (layers: "
      "parameter names with .layer.N., .layers.N. or .h.N.; embeddings: names with embed, wte or wpe); "
      "0.65-0.9 usual; 1 = off",
      between(0.01, 1));
    v("adam_beta1", adam_beta1, "Adam beta1", between(0, 1));
    v("adam_beta2", adam_beta2, "Adam beta2", between(0, 1));
    v("adam_epsilon", adam_epsilon, "Adam epsilon", between(0, 1));
    v("momentum", momentum, "SGD momentum", between(0, 1));
    v("lr_scheduler_type", lr_scheduler_type, "learning-rate schedule",
      one_of({"constant", "constant_with_warmup", "linear", "cosine", "cosine_with_min_lr", "inverse_sqrt"}));
    v("min_lr_rate", min_lr_rate, "cosine_with_min_lr: the final learning rate as a fraction of the peak",
      between(0, 1));
    v("warmup_steps", warmup_steps, "linear warmup steps", at_least(0));
    v("warmup_ratio", warmup_ratio, "warmup as a fraction of the total steps (if warmup_steps is 0)", between(0, 1));
    v("max_grad_norm", max_grad_norm, "clip gradients to this global norm; 0 = off", at_least(0));
    v("label_smoothing_factor", label_smoothing_factor,
      "classification: cross-entropy against (1 - e) one-hot + e uniform targets", between(0, 1));
    v("r_drop_alpha", r_drop_alpha,
      "R-Drop (Liang et al. 2021): each training batch runs twice through the model (one forward pass of the batch "
      "concatenated with itself, so two dropout masks), and the loss is the two copies' mean cross-entropy + alpha "
      "x the symmetric KL divergence of their predictions (mean per example, per target token in translation); "
      "about twice the compute and activation memory per step; translation, text and image classification; 0 = off",
      between(0, 100));
    v("ema_decay", ema_decay,
      "keep an exponential moving average of the weights (decay per step, e.g. 0.9998; 0 = off): evaluations, "
      "keep-best and each checkpoint's model.safetensors use the average",
      between(0, 0.999999));
    v("logging_steps", logging_steps, "log every N optimizer steps", at_least(1));
    v("eval_steps", eval_steps, "evaluate every N steps (and at the end); 0 = end only", at_least(0));
    v("save_steps", save_steps, "checkpoint every N steps (and at the end); 0 = end only", at_least(0));
    v("save_total_limit", save_total_limit, "keep the newest N checkpoints (plus the best); 0 = all", at_least(0));
    v("average_checkpoints", average_checkpoints,
      "at the end, write the mean of the weights of the newest N checkpoints to OUTPUT/checkpoint-averaged and "
      "evaluate it (Marian's and fairseq's checkpoint averaging; save_steps sets how far apart they are, and "
      "save_total_limit must keep N: 0 or at least N); 0 = off",
      at_least(0));
    v("metric_for_best_model", metric_for_best_model, "eval metric that picks the best checkpoint");
    v("greater_is_better", greater_is_better, "whether a larger metric_for_best_model is better");
    v("early_stopping_patience", early_stopping_patience, "stop after N evals without improvement; 0 = off",
      at_least(0));
    v("seed", seed, "seed for init, data order, augmentation and dropout", between(0, 9.0e15));
    v("precision", precision,
      "fp32; bf16 autocast (CUDA with LibTorch >= 2, CPUs with AVX512-BF16 or AMX); fp16 autocast with dynamic "
      "loss scaling (CUDA only; scale 2^16, halved on inf/NaN with the step skipped, doubled after 2,000 clean "
      "steps); auto: bf16 where the device has it, else fp32",
      one_of({"fp32", "bf16", "fp16", "auto"}));
    v("dataloader_prefetch", dataloader_prefetch, "batches prepared ahead by the loader thread", between(1, 64));
    v("report_to_tensorboard", report_to_tensorboard, "write a TensorBoard event file in the output directory");
    v("init_from", init_from,
      "fine-tune: start from the matching weights of this zoo checkpoint or Hugging Face directory "
      "(model.safetensors); the rest keeps its fresh initialisation");
    v("init_from_key_map", init_from_key_map,
      "with init_from: tensor-name prefix renames \"FROM=TO\" applied to the file's names, e.g. "
      "\"bert.=\" or \"=vit.\" (the first matching prefix wins)");
    v("ddp_backend", ddp_backend,
      "data-parallel launches (torchrun, tools/launch.sh, Slurm, mpirun): the c10d backend; auto = nccl on CUDA, "
      "gloo on CPU",
      one_of({"auto", "gloo", "nccl"}));
    v("ddp_timeout", ddp_timeout,
      "data parallel: seconds to wait for the other processes (rendezvous and every collective) before every rank "
      "stops with an error",
      between(1, 1e7));
    v("cuda_graphs", cuda_graphs,
      "CUDA (LibTorch >= 2.2): capture the optimizer step (forward, backward, clipping, AdamW) once as a CUDA "
      "graph and replay it for every batch of the same shapes; language modelling and image classification, "
      "adamw, one process, no gradient accumulation");
    v("gradient_checkpointing", gradient_checkpointing,
      "recompute each transformer block's activations in backward instead of keeping them (less memory, about a "
      "third more arithmetic); GPT, BERT, ViT and the Transformer");
    v("lora", lora,
      "LoRA adapters: {\"r\": 8, \"alpha\": 16, \"dropout\": 0.05, \"target_modules\": [\"c_attn\"]} trains only "
      "low-rank updates of those linear layers (and the task's new head), the rest frozen; checkpoints add PEFT's "
      "adapter_model.safetensors and adapter_config.json; null = off");
    v("check_memory", check_memory,
      "refuse, before building anything, a run whose estimated memory (weights, gradients, optimizer state, "
      "one micro-batch's activations) exceeds what the machine or GPU has; false to try anyway");
    v("ddp_bucket_cap_mb", ddp_bucket_cap_mb, "data parallel: size of the gradient buckets all-reduced during backward",
      between(0.001, 1e4));
  }
};

}  // namespace zoo
