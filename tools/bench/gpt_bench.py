#!/usr/bin/python3
"""Python side of the GPT step benchmark: a nanoGPT-style model in eager PyTorch (model.py's
CausalSelfAttention with one c_attn Linear and the causal mask as a buffer, MLP with GELU,
pre-norm Blocks, tied lm_head), the same step as the recipes (forward, cross-entropy, backward,
clipping to norm 1, AdamW), the same shapes, threads and batch as tools/bench/zoo_bench_gpt.
With torch >= 2 it uses F.scaled_dot_product_attention as nanoGPT does; on CUDA, --precision
bf16 autocasts the forward pass and AdamW is fused where torch has it, as nanoGPT's train.py;
--compile runs the model through torch.compile (nanoGPT's compile=True). ZOO_BENCH_KERNELS=FILE
writes a trace with the GPU kernels of the timed steps (torch.profiler) for
tools/bench/kernel_table.py. Prints JSON."""
import argparse
import inspect
import json
import math
import os
import time

import torch
from torch import nn
from torch.nn import functional as F

p = argparse.ArgumentParser()
for name, default in [("layers", 4), ("heads", 4), ("embd", 128), ("block", 64), ("vocab", 65), ("batch", 12),
                      ("steps", 30), ("warmup", 5), ("threads", 2)]:
    p.add_argument("--" + name, type=int, default=default)
p.add_argument("--mode", default="train")
p.add_argument("--dropout", type=float, default=0.0, help="nanoGPT's dropout: attention weights, residuals, embeddings")
p.add_argument("--device", default="cpu")
p.add_argument("--precision", default="fp32", choices=["fp32", "bf16", "fp16"],
               help="bf16 autocast; fp16 autocast with torch's GradScaler (CUDA)")
p.add_argument("--compile", action="store_true", help="torch.compile the model (torch >= 2), as nanoGPT's compile=True")
p.add_argument("--pad-vocab", action="store_true",
               help="round the vocabulary up to a multiple of 64, as nanoGPT does (50,257 -> 50,304): another model")
p.add_argument("--default-threads", action="store_true",
               help="leave torch's thread count at its default (no torch.set_num_threads(--threads))")
a = p.parse_args()
data_vocab = a.vocab  # the token ids drawn
if a.pad_vocab:
    a.vocab = (a.vocab + 63) // 64 * 64
assert a.mode == "train", "the Python side times training steps only"
if not a.default_threads:
    torch.set_num_threads(a.threads)


class CausalSelfAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = nn.Linear(a.embd, 3 * a.embd)
        self.c_proj = nn.Linear(a.embd, a.embd)
        self.flash = hasattr(F, "scaled_dot_product_attention")
        self.register_buffer("bias", torch.tril(torch.ones(a.block, a.block)).view(1, 1, a.block, a.block))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.c_attn(x).split(a.embd, dim=2)
        q, k, v = (z.view(b, t, a.heads, c // a.heads).transpose(1, 2) for z in (q, k, v))
        if self.flash:
            y = F.scaled_dot_product_attention(q, k, v, dropout_p=a.dropout if self.training else 0, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :t, :t] == 0, float("-inf"))
            y = F.dropout(F.softmax(att, dim=-1), a.dropout, self.training) @ v
        return F.dropout(self.c_proj(y.transpose(1, 2).contiguous().view(b, t, c)), a.dropout, self.training)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1 = nn.LayerNorm(a.embd)
        self.attn = CausalSelfAttention()
        self.ln_2 = nn.LayerNorm(a.embd)
        self.c_fc = nn.Linear(a.embd, 4 * a.embd)
        self.c_proj = nn.Linear(4 * a.embd, a.embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + F.dropout(self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh")), a.dropout, self.training)


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(a.vocab, a.embd)
        self.wpe = nn.Embedding(a.block, a.embd)
        self.h = nn.ModuleList([Block() for _ in range(a.layers)])
        self.ln_f = nn.LayerNorm(a.embd)
        self.lm_head = nn.Linear(a.embd, a.vocab, bias=False)
        self.lm_head.weight = self.wte.weight

    def forward(self, idx):
        x = F.dropout(self.wte(idx) + self.wpe(torch.arange(idx.size(1), device=idx.device)), a.dropout, self.training)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


torch.manual_seed(0)
device = torch.device(a.device)
model = GPT().to(device).train()
if a.compile:
    model = torch.compile(model)
fused = device.type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.1, **({"fused": True} if fused else {}))
autocast = torch.autocast(device.type, dtype=torch.float16 if a.precision == "fp16" else torch.bfloat16,
                          enabled=a.precision != "fp32")
scaler = (torch.amp.GradScaler("cuda", enabled=a.precision == "fp16") if hasattr(torch.amp, "GradScaler")
          else torch.cuda.amp.GradScaler(enabled=a.precision == "fp16"))
ids = torch.randint(0, data_vocab, (a.batch, a.block + 1)).to(device)
x, y = ids[:, :-1].contiguous(), ids[:, 1:].contiguous()
times, phases = [], {"forward": [], "backward": [], "clip": [], "optimizer": []}
timed_phases = bool(os.environ.get("ZOO_BENCH_PHASES"))  # as zoo_bench_gpt: sync between phases


def lap(name, t, timed):
    if not timed_phases:
        return t
    sync()
    if timed:
        phases[name].append(time.perf_counter() - t)
    return time.perf_counter()


profile = None
for i in range(a.warmup + a.steps):
    if i == a.warmup and os.environ.get("ZOO_BENCH_PROFILE"):  # a Chrome trace of the timed steps
        profile = torch.autograd.profiler.profile()
        profile.__enter__()
    if i == a.warmup and os.environ.get("ZOO_BENCH_KERNELS"):  # the same with the GPU kernels
        acts = [torch.profiler.ProfilerActivity.CPU] + ([torch.profiler.ProfilerActivity.CUDA] if device.type == "cuda" else [])
        profile = torch.profiler.profile(activities=acts)
        profile.__enter__()
    sync()
    t0 = time.perf_counter()
    timed = i >= a.warmup
    opt.zero_grad(set_to_none=True)
    with autocast:
        logits = model(x)
    loss = F.cross_entropy(logits.float().view(-1, a.vocab), y.view(-1))
    t = lap("forward", t0, timed)
    scaler.scale(loss).backward()
    t = lap("backward", t, timed)
    scaler.unscale_(opt)
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    t = lap("clip", t, timed)
    scaler.step(opt)
    scaler.update()
    lap("optimizer", t, timed)
    sync()
    if timed:
        times.append(time.perf_counter() - t0)
if profile:
    sync()
    profile.__exit__(None, None, None)
    profile.export_chrome_trace(os.environ.get("ZOO_BENCH_KERNELS") or os.environ["ZOO_BENCH_PROFILE"])
times.sort()
result = {"impl": "PyTorch (Python)" + (", torch.compile" if a.compile else ""), "device": str(device), "vocab": a.vocab,
          "precision": a.precision,
          "threads": torch.get_num_threads(), "batch": a.batch, "fused_adamw": fused,
          "median_step_ms": 1000 * times[len(times) // 2], "mean_step_ms": 1000 * sum(times) / len(times)}
if timed_phases:
    result["phase_ms"] = {k: 1000 * sorted(v)[len(v) // 2] for k, v in phases.items()}
print(json.dumps(result))
