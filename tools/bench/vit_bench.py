#!/usr/bin/python3
"""Python side of the ViT step benchmark: the same architecture (tests/py/hf_vit.py, Hugging
Face's ViT in plain PyTorch), the same step as the recipes (forward, cross-entropy, backward,
clipping to norm 1, AdamW), the same random data shapes, threads and batch as
tools/bench/zoo_bench_vit. --device cuda (cuda:N, mps) runs the model and the data there, the
device synchronised before each clock reading; --precision bf16 autocasts the forward pass on
that device, and on CUDA AdamW is fused where torch has it (as tools/bench/gpt_bench.py).
Prints JSON."""
import argparse
import inspect
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "py"))
import hf_vit  # noqa: E402

p = argparse.ArgumentParser()
for name, default in [("hidden", 128), ("layers", 4), ("heads", 4), ("mlp", 256), ("image", 28), ("patch", 4),
                      ("channels", 1), ("batch", 128), ("steps", 30), ("warmup", 5), ("threads", 2)]:
    p.add_argument("--" + name, type=int, default=default)
p.add_argument("--act", default="gelu", help="feed-forward activation (hidden_act)")
p.add_argument("--default-threads", action="store_true",
               help="leave torch's thread count at its default (no torch.set_num_threads(--threads))")
p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
               help="bf16: torch.autocast(device type, bfloat16)")
p.add_argument("--device", default="cpu")
a = p.parse_args()
if not a.default_threads:
    torch.set_num_threads(a.threads)
torch.manual_seed(0)
cfg = hf_vit.Config({"hidden_size": a.hidden, "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
                     "intermediate_size": a.mlp, "image_size": a.image, "patch_size": a.patch,
                     "num_channels": a.channels, "num_labels": 10, "hidden_act": a.act})
device = torch.device(a.device)


def sync():
    if device.type == "cuda":
        torch.cuda.synchronize()


model = hf_vit.ViTForImageClassification(cfg).to(device).train()
fused = device.type == "cuda" and "fused" in inspect.signature(torch.optim.AdamW).parameters
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05, **({"fused": True} if fused else {}))
x = torch.randn(a.batch, a.channels, a.image, a.image).to(device)
y = torch.randint(0, 10, (a.batch,)).to(device)
times = []
for i in range(a.warmup + a.steps):
    sync()
    t0 = time.perf_counter()
    opt.zero_grad()
    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16"):
        logits = model(x)
    loss = torch.nn.functional.cross_entropy(logits.float(), y)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sync()
    if i >= a.warmup:
        times.append(time.perf_counter() - t0)
times.sort()
print(json.dumps({"impl": "PyTorch (Python)", "device": str(device), "precision": a.precision,
                  "threads": torch.get_num_threads(), "batch": a.batch, "fused_adamw": fused,
                  "median_step_ms": 1000 * times[len(times) // 2], "mean_step_ms": 1000 * sum(times) / len(times)}))
