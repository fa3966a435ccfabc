#!/usr/bin/env python3
"""GPU kernel time per training step from Kineto traces (Chrome trace JSON, as written by
zoo_bench_* with ZOO_BENCH_KERNELS=FILE and by tools/bench/*_bench.py with the same variable),
side by side, so that a difference in step time is attributed to kernels:

  tools/bench/kernel_table.py --steps 20 zoo=zoo.json eager=eager.json compiled=compiled.json

For each trace: kernel time per step (the sum of every kernel's duration), the GPU's busy
time (the union of the kernels' intervals) and the launches per step; then milliseconds per
step by kind of kernel (matrix products, attention, normalisation, ...), and each trace's
heaviest kernels. Only the standard library: runs wherever the traces are."""
import argparse
import collections
import json
import re
import sys

KINDS = [  # first match wins: attention kernels often carry "sm90" or "gemm" in their names
    ("attention", r"flash|fmha|sdpa|attention|_mha|softmax_warp.*attn"),
    ("layer norm", r"layer_?norm|layernorm|welford"),
    ("gelu", r"gelu"),
    ("softmax / cross-entropy", r"softmax|nll_loss|cross_entropy"),
    ("AdamW", r"adam"),
    ("multi-tensor (clip, foreach)", r"multi_tensor|foreach"),
    ("embedding", r"embedding|index_select|indexselect|index_put|scatter|gather|radix|sort|unique"),
    ("dropout", r"dropout"),
    ("matrix products", r"gemm|cutlass|xmma|nvjet|cublas|wgmma|matmul|sm90_|sm80_"),
    ("triton (compiled)", r"^triton"),
    ("copy / cast", r"copy|cast|convert"),
    ("reduction", r"reduce"),
    ("fill / zero", r"fill|zero"),
    ("elementwise", r"elementwise|vectorized|unrolled"),
]


def kind_of(name):
    low = name.lower()
    for kind, pattern in KINDS:
        if re.search(pattern, low):
            return kind
    return "other"


def load(path):
    with open(path) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    kernels = [e for e in events if e.get("ph") == "X" and e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
    if not kernels:
        sys.exit(f"kernel_table.py: {path} holds no GPU kernels (was it recorded with CUDA activities?)")
    return kernels


def busy_us(kernels):
    spans = sorted((float(k["ts"]), float(k["ts"]) + float(k.get("dur", 0))) for k in kernels)
    total, end = 0.0, float("-inf")
    for s, e in spans:
        if e <= end:
            continue
        total += e - max(s, end)
        end = e
    return total


def summarise(kernels, steps):
    by_kind, by_name = collections.Counter(), collections.Counter()
    for k in kernels:
        name = k.get("name", "?") if k.get("cat") == "kernel" else k.get("cat")
        dur = float(k.get("dur", 0)) / 1000.0 / steps  # ms per step
        by_kind["memcpy / memset" if k.get("cat") != "kernel" else kind_of(name)] += dur
        by_name[name] += dur
    return {"kernel_ms": sum(by_kind.values()), "busy_ms": busy_us(kernels) / 1000.0 / steps,
            "launches": len(kernels) / steps, "by_kind": by_kind, "by_name": by_name}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, required=True, help="training steps each trace holds")
    p.add_argument("--top", type=int, default=12, help="heaviest kernels listed per trace")
    p.add_argument("traces", nargs="+", metavar="LABEL=FILE")
    a = p.parse_args()
    runs = []
    for spec in a.traces:
        label, _, path = spec.partition("=")
        if not path:
            sys.exit(f"kernel_table.py: '{spec}' is not LABEL=FILE")
        runs.append((label, summarise(load(path), a.steps)))
    width = max(12, *(len(l) for l, _ in runs))
    head = f"{'ms per step':<30}" + "".join(f"{l:>{width + 2}}" for l, _ in runs)
    print(head)
    print("-" * len(head))
    for key, title in (("kernel_ms", "kernel time (sum)"), ("busy_ms", "GPU busy (union)"), ("launches", "launches")):
        print(f"{title:<30}" + "".join(f"{r[key]:>{width + 2}.{0 if key == 'launches' else 2}f}" for _, r in runs))
    kinds = sorted({k for _, r in runs for k in r["by_kind"]}, key=lambda k: -max(r["by_kind"][k] for _, r in runs))
    print("-" * len(head))
    for k in kinds:
        print(f"{k:<30}" + "".join(f"{r['by_kind'][k]:>{width + 2}.2f}" for _, r in runs))
    for label, r in runs:
        print(f"\n{label}: heaviest kernels (ms per step, kind)")
        for name, ms in r["by_name"].most_common(a.top):
            print(f"  {ms:8.3f}  {kind_of(name):<24} {name[:110]}")


if __name__ == "__main__":
    main()
