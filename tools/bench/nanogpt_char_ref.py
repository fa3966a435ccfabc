#!/usr/bin/python3
"""nanoGPT's character-level tiny Shakespeare run in plain Python PyTorch, for comparison with
zoo's recipe tools/recipes/gpt_shakespeare_char_cpu.json on the same machine.

Re-implements nanoGPT's model.py (bias=False, as its train.py default) and train.py loop
(get_batch with torch.randint windows, AdamW with decay on >= 2-D parameters, betas
(0.9, 0.99), warmup then cosine to min_lr, gradient clipping 1.0, evaluation every
--eval-interval iterations before the step) with the README's CPU settings by default, and
reports the validation loss twice: nanoGPT's estimate (mean of --eval-iters random batches)
and zoo's (every consecutive block_size window of the validation split, as `zoo eval`).

--published runs nanoGPT as it was when its README published 1.88 for these settings (commit
23a8e70, 2023-02-05): weight decay 0.01 on the Linear weights only (embeddings not decayed),
tanh-approximated GELU, warmup from lr 0. Later commits changed these (weight decay 0.1 on
2023-02-06, decay on every matrix 2023-05-06, nn.GELU 2023-05-17, warmup 2024-12-09).

The defaults are nanoGPT's (warmup 100, beta2 0.99); zoo's recipe sets two settings the issue
leaves open otherwise: add --warmup_iters 800 --beta2 0.999 to run the recipe's.
--estimates K draws K more nanoGPT estimates of the final model's validation loss, to show how
far one such figure moves by chance.

  tools/bench/nanogpt_char_ref.py --input ~/.local/share/zoo/data/tinyshakespeare/input.txt [--seed 1337]
      [--published] [--estimates 200]
"""
import argparse
import json
import math
import time

import torch
from torch import nn
from torch.nn import functional as F

import nanogpt_eval  # beside this script

p = argparse.ArgumentParser()
p.add_argument("--input", required=True)
for name, default in [("n_layer", 4), ("n_head", 4), ("n_embd", 128), ("block_size", 64), ("batch_size", 12),
                      ("max_iters", 2000), ("lr_decay_iters", 2000), ("warmup_iters", 100), ("eval_interval", 250),
                      ("eval_iters", 20), ("seed", 1337), ("threads", 2), ("estimates", 0)]:
    p.add_argument("--" + name, type=int, default=default)
for name, default in [("learning_rate", 1e-3), ("min_lr", 1e-4), ("weight_decay", 0.1), ("beta2", 0.99),
                      ("grad_clip", 1.0), ("dropout", 0.0)]:
    p.add_argument("--" + name, type=float, default=default)
p.add_argument("--published", action="store_true")
a = p.parse_args()
if a.published:
    a.weight_decay = 0.01
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)

text = open(a.input, encoding="utf-8").read()
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
n = int(0.9 * len(data))
train_data, val_data = data[:n], data[n:]


class LayerNorm(nn.Module):
    def __init__(self, ndim):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))

    def forward(self, x):
        return F.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.ln_2 = LayerNorm(a.n_embd), LayerNorm(a.n_embd)
        self.c_attn = nn.Linear(a.n_embd, 3 * a.n_embd, bias=False)
        self.attn_proj = nn.Linear(a.n_embd, a.n_embd, bias=False)
        self.c_fc = nn.Linear(a.n_embd, 4 * a.n_embd, bias=False)
        self.mlp_proj = nn.Linear(4 * a.n_embd, a.n_embd, bias=False)
        self.drop = nn.Dropout(a.dropout)
        self.register_buffer("mask", torch.tril(torch.ones(a.block_size, a.block_size)).bool())

    def attn(self, x):
        b, t, c = x.shape
        q, k, v = self.c_attn(x).split(c, dim=2)
        q, k, v = (z.view(b, t, a.n_head, c // a.n_head).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(k.size(-1))
        att = self.drop(att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1))
        return self.drop(self.attn_proj((att @ v).transpose(1, 2).reshape(b, t, c)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.drop(self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(vocab, a.n_embd), nn.Embedding(a.block_size, a.n_embd)
        self.h = nn.ModuleList([Block() for _ in range(a.n_layer)])
        self.ln_f = LayerNorm(a.n_embd)
        self.drop = nn.Dropout(a.dropout)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
        for name, prm in self.named_parameters():
            if name.endswith("attn_proj.weight") or name.endswith("mlp_proj.weight"):
                nn.init.normal_(prm, 0.0, 0.02 / math.sqrt(2 * a.n_layer))

    def forward(self, idx, targets):
        x = self.drop(self.wte(idx) + self.wpe(torch.arange(idx.size(1))))
        for block in self.h:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))


def nanogpt_estimate(model, splits=("train", "val")):
    model.eval()
    data = {"train": train_data, "val": val_data}
    out = {s: nanogpt_eval.estimate(model, data[s], a.block_size, a.batch_size, a.eval_iters) for s in splits}
    model.train()
    return out


def lr_at(it):
    if it < a.warmup_iters:
        shift = 0 if a.published else 1  # nanoGPT's warmup started at lr 0 until 2024-12-09
        return a.learning_rate * (it + shift) / (a.warmup_iters + shift)
    if it > a.lr_decay_iters:
        return a.min_lr
    ratio = (it - a.warmup_iters) / (a.lr_decay_iters - a.warmup_iters)
    return a.min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (a.learning_rate - a.min_lr)


model = GPT(len(chars))
undecayed = {id(model.wte.weight), id(model.wpe.weight)} if a.published else set()
decay = [q for q in model.parameters() if q.dim() >= 2 and id(q) not in undecayed]
no_decay = [q for q in model.parameters() if q.dim() < 2 or id(q) in undecayed]
opt = torch.optim.AdamW([{"params": decay, "weight_decay": a.weight_decay}, {"params": no_decay, "weight_decay": 0.0}],
                        lr=a.learning_rate, betas=(0.9, a.beta2))
start = time.time()
for it in range(a.max_iters + 1):
    for group in opt.param_groups:
        group["lr"] = lr_at(it)
    if it % a.eval_interval == 0:
        est = nanogpt_estimate(model)
        print(json.dumps({"iter": it, "train_estimate": est["train"], "val_estimate": est["val"],
                          "elapsed_s": time.time() - start}), flush=True)
    if it == a.max_iters:
        break
    loss = model(*nanogpt_eval.random_windows(train_data, a.block_size, a.batch_size))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), a.grad_clip)
    opt.step()
model.eval()
print(json.dumps({"iter": a.max_iters, "val_full_split": nanogpt_eval.whole_split(model, val_data, a.block_size),
                  "elapsed_s": time.time() - start}))
if a.estimates:
    figures = [nanogpt_estimate(model, ("val",))["val"] for _ in range(a.estimates)]
    print(json.dumps({"val": nanogpt_eval.spread(figures, 1.88)}))
