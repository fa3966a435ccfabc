#!/usr/bin/env python3
"""The GPU step table of tools/check_gpu.sh's speed part: reads the JSON lines the GPT
benchmarks print (tools/bench/zoo_bench_gpt and gpt_bench.py, one line per run, each run
labelled by a preceding line "## LABEL") and prints, per run, ms per step, tokens per second
and the model FLOPs utilisation against the measured bf16 matrix-product peak and against the
card's datasheet peak, with each run's step time over the first run's:

  tools/bench/step_table.py --tokens 16384 --datasheet-tflops 989.4 runs.txt

The model FLOPs per step and the measured peak come from zoo's lines (the Python side does
not measure them; the model is the same)."""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokens", type=float, required=True, help="tokens per step (batch x block)")
    p.add_argument("--datasheet-tflops", type=float, default=989.4,
                   help="the card's dense bf16 peak by its datasheet (H100/H200 SXM: 989.4)")
    p.add_argument("file")
    a = p.parse_args()
    runs, label = [], None
    for line in open(a.file):
        line = line.strip()
        if line.startswith("## "):
            label = line[3:]
        elif line.startswith("{") and label:
            try:
                runs.append((label, json.loads(line)))
            except json.JSONDecodeError:
                pass
            label = None
    if not runs:
        sys.exit(f"step_table.py: no labelled JSON lines in {a.file}")
    gflop = next((r["model_gflop_per_step"] for _, r in runs if "model_gflop_per_step" in r), None)
    peak = next((r["matmul_peak_gflops"] for _, r in runs if "matmul_peak_gflops" in r), None)
    base = runs[0][1]["median_step_ms"]
    print("| run | ms/step | vs first | tokens/s | MFU (measured peak) | MFU (datasheet) |")
    print("|---|---|---|---|---|---|")
    for label, r in runs:
        ms = r["median_step_ms"]
        mfu = lambda peak_gflops: f"{gflop / (ms / 1000) / peak_gflops:.3f}" if gflop and peak_gflops else "-"
        print(f"| {label} | {ms:.1f} | {ms / base:.3f} | {a.tokens / (ms / 1000):,.0f} | {mfu(peak)} | "
              f"{mfu(a.datasheet_tflops * 1000)} |")
    if peak:
        print(f"\nmodel {gflop:.1f} GFLOP per step; measured bf16 matrix-product peak {peak / 1000:.0f} TFLOP/s; "
              f"datasheet {a.datasheet_tflops:.1f} TFLOP/s")


if __name__ == "__main__":
    main()
