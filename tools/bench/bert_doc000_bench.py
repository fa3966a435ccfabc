#!/usr/bin/python3
"""Python side of tools/bench/bert_doc000_bench.sh: document 000's BERT classes
(tests/py/bert_doc000.py) trained as its BertTrainer does: model(inp, mask), the token
log-probabilities masked_fill'ed where not selected, NLLLoss(ignore_index=0) +
BCEWithLogitsLoss, Adam(lr 0.005, weight_decay 0.015). Prints JSON with the median step.
--device cuda (cuda:N, mps) runs the model and the batches there (the document's module-level
`device`, set to it), the device synchronised before each clock reading; --precision bf16
autocasts the forward pass on that device, and on CUDA Adam is fused where torch has it (as
tools/bench/gpt_bench.py does with AdamW).
"""
import argparse
import inspect
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "py"))
import bert_doc000  # noqa: E402

p = argparse.ArgumentParser()
for name, default in [("vocab", 71942), ("dim-inp", 64), ("dim-out", 36), ("heads", 4), ("batch", 24), ("length", 55),
                      ("steps", 10), ("warmup", 2), ("threads", 2)]:
    p.add_argument("--" + name, type=int, default=default)
p.add_argument("--default-threads", action="store_true")
p.add_argument("--device", default="cpu")
p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
a = p.parse_args()
if not a.default_threads:
    torch.set_num_threads(a.threads)
torch.manual_seed(0)
device = torch.device(a.device)
bert_doc000.device = device  # the document's global, read by its JointEmbedding


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


model = bert_doc000.BERT(a.vocab, a.dim_inp, a.dim_out, a.heads).to(device).train()
criterion, ml_criterion = nn.BCEWithLogitsLoss(), nn.NLLLoss(ignore_index=0)
fused = device.type == "cuda" and "fused" in inspect.signature(torch.optim.Adam).parameters
optimizer = torch.optim.Adam(model.parameters(), lr=0.005, weight_decay=0.015, **({"fused": True} if fused else {}))
autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16")
times = []
for i in range(a.warmup + a.steps):
    inp = torch.randint(5, a.vocab, (a.batch, a.length))
    inverse_token_mask = torch.rand(a.batch, a.length) >= 0.15
    token_target = inp.masked_fill(inverse_token_mask, 0)
    mask = (inp == 1).unsqueeze(1)
    nsp_target = torch.zeros(a.batch, 2)
    nsp_target[:, 0] = 1
    inp, inverse_token_mask, token_target, mask, nsp_target = (
        t.to(device) for t in (inp, inverse_token_mask, token_target, mask, nsp_target))
    sync()
    t0 = time.perf_counter()
    optimizer.zero_grad()
    with autocast:
        token, nsp = model(inp, mask)
    token, nsp = token.float(), nsp.float()
    tm = inverse_token_mask.unsqueeze(-1).expand_as(token)
    token = token.masked_fill(tm, 0)
    loss_token = ml_criterion(token.transpose(1, 2), token_target)
    loss_nsp = criterion(nsp, nsp_target)
    loss = loss_token + loss_nsp
    loss.backward()
    optimizer.step()
    sync()
    if i >= a.warmup:
        times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"impl": "document 000 BERT (Python)", "device": str(device), "precision": a.precision,
                  "threads": torch.get_num_threads(), "batch": a.batch, "fused_adam": fused,
                  "median_step_ms": 1000 * times[len(times) // 2]}))
