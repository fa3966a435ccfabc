#!/usr/bin/python3
"""How far nanoGPT's validation-loss figure moves by chance, for one trained zoo GPT.

nanoGPT reports the mean loss of --eval-iters batches of --batch-size random windows of the
validation split (its README's CPU run: 20 batches of 12 windows of 64 characters, about 15,000
predictions); `zoo eval` reports the loss over every consecutive window of the split. This
draws --estimates of nanoGPT's figures for the same model and prints their mean, spread and
the share at or below --threshold, beside the whole-split loss.

  build/zoo export --checkpoint runs/gpt/checkpoint-2000 --out /tmp/gpt_hf
  tools/bench/nanogpt_val_estimate.py /tmp/gpt_hf runs/gpt/tokens.bin [--estimates 1000]

The token stream is the run's tokens.bin (its tokens.bin.json gives the width); the validation
split is its last --validation-fraction, as zoo's language_modeling task cuts it.
"""
import argparse
import json
import os
import sys

import torch
from torch.nn import functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "py"))
import hf_gpt2  # noqa: E402
import nanogpt_eval  # noqa: E402  (beside this script)

p = argparse.ArgumentParser()
p.add_argument("model_dir", help="a `zoo export` directory (config.json + model.safetensors)")
p.add_argument("tokens", help="the run's tokens.bin")
p.add_argument("--validation-fraction", type=float, default=0.1)
p.add_argument("--block-size", type=int, default=64)
p.add_argument("--batch-size", type=int, default=12)
p.add_argument("--eval-iters", type=int, default=20)
p.add_argument("--estimates", type=int, default=1000)
p.add_argument("--threshold", type=float, default=1.88)
p.add_argument("--seed", type=int, default=1337)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()
torch.set_num_threads(a.threads)
torch.manual_seed(a.seed)

val = nanogpt_eval.validation_split(a.tokens, a.validation_fraction)
model = hf_gpt2.load(a.model_dir)


def loss(x, y):  # the mean next-token loss of windows x with targets y
    logits = model(x)
    return F.cross_entropy(logits.reshape(-1, logits.size(-1)), y.reshape(-1))


figures = [nanogpt_eval.estimate(loss, val, a.block_size, a.batch_size, a.eval_iters) for _ in range(a.estimates)]
print(json.dumps({"whole_split": nanogpt_eval.whole_split(loss, val, a.block_size),
                  **nanogpt_eval.spread(figures, a.threshold)}))
