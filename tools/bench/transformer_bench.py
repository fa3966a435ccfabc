#!/usr/bin/python3
"""Python side of the Transformer benchmark: the same architecture on torch.nn.Transformer
(post-norm, ReLU, batch-first), with embeddings scaled by sqrt(d_model), sinusoidal
positions and the output projection tied to the target embedding, trained as a PyTorch
user trains it, against tools/bench/zoo_bench_transformer on the same shapes, threads and
batch. Prints JSON.

  --mode train  teacher-forced forward with padding and causal masks, label-smoothed
                cross-entropy ignoring padding, backward, clipping to norm 1, Adam.

--device cuda (cuda:N, mps) runs the model and the batches there, the device synchronised
before each clock reading; --precision bf16 autocasts the forward pass on that device, and on
CUDA Adam is fused where torch has it (as tools/bench/gpt_bench.py does with AdamW).
"""
import argparse
import inspect
import json
import math
import time

import torch
import torch.nn.functional as F
from torch import nn

import bench_data  # beside this script

PAD, BOS, EOS, FIRST_WORD = 0, 1, 2, 3

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=["train"], default="train")
for name, default in [("d-model", 256), ("layers", 3), ("heads", 4), ("ffn", 1024), ("src-vocab", 3500),
                      ("tgt-vocab", 7000), ("batch", 64), ("src-len", 14), ("tgt-len", 14), ("steps", 10),
                      ("warmup", 2), ("threads", 2)]:
    p.add_argument("--" + name, type=int, default=default)
p.add_argument("--dropout", type=float, default=0.1)
p.add_argument("--device", default="cpu")
p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
p.add_argument("--default-threads", action="store_true",
               help="leave torch's thread count at its default (no torch.set_num_threads(--threads))")
a = p.parse_args()
if not a.default_threads:
    torch.set_num_threads(a.threads)
torch.manual_seed(0)
device = torch.device(a.device)


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


def sinusoidal(n_pos, dim):
    pos = torch.arange(n_pos, dtype=torch.float32).unsqueeze(1)
    div = torch.exp(torch.arange(0, dim, 2, dtype=torch.float32) * (-math.log(10000.0) / dim))
    pe = torch.zeros(n_pos, dim)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe


class Seq2SeqTransformer(nn.Module):
    def __init__(self):
        super().__init__()
        d = a.d_model
        self.src_emb = nn.Embedding(a.src_vocab, d, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(a.tgt_vocab, d, padding_idx=PAD)
        self.register_buffer("pe", sinusoidal(256, d))
        self.transformer = nn.Transformer(d, a.heads, a.layers, a.layers, a.ffn, a.dropout, batch_first=True)
        self.drop = nn.Dropout(a.dropout)
        self.scale = math.sqrt(d)

    def embed(self, table, ids):
        return self.drop(table(ids) * self.scale + self.pe[: ids.size(1)])

    def forward(self, src, tgt_in):
        t = tgt_in.size(1)
        causal = torch.triu(torch.full((t, t), float("-inf"), device=tgt_in.device), 1)
        pad = src == PAD
        h = self.transformer(self.embed(self.src_emb, src), self.embed(self.tgt_emb, tgt_in), tgt_mask=causal,
                             src_key_padding_mask=pad, memory_key_padding_mask=pad)
        return h @ self.tgt_emb.weight.t()


def synthetic(batch, length, vocab, framed):
    return bench_data.synthetic(batch, length, vocab, framed, PAD, BOS, EOS, FIRST_WORD)


def train():
    model = Seq2SeqTransformer().to(device).train()
    fused = device.type == "cuda" and "fused" in inspect.signature(torch.optim.Adam).parameters
    opt = torch.optim.Adam(model.parameters(), lr=1e-3, betas=(0.9, 0.98), **({"fused": True} if fused else {}))
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16")
    times = []
    for i in range(a.warmup + a.steps):
        src = synthetic(a.batch, a.src_len, a.src_vocab, False).to(device)
        tgt = synthetic(a.batch, a.tgt_len, a.tgt_vocab, True).to(device)
        sync()
        t0 = time.perf_counter()
        opt.zero_grad()
        with autocast:
            logits = model(src, tgt[:, :-1])
        logits = logits.float()
        loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt[:, 1:].reshape(-1), ignore_index=PAD,
                               label_smoothing=0.1)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sync()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"impl": "torch.nn.Transformer (Python)", "mode": "train", "device": str(device),
                      "precision": a.precision, "threads": torch.get_num_threads(), "batch": a.batch,
                      "fused_adam": fused, "median_step_ms": 1000 * times[len(times) // 2]}))


train()
