#!/usr/bin/env bash
# GPT benchmarks: zoo (C++) against a nanoGPT-style model in eager Python PyTorch
# (tools/bench/gpt_bench.py), same machine, threads, batch and shapes, in interleaved rounds.
#
#   tools/bench/gpt_bench.sh [--rounds N] [--build DIR] [-- ARGS for both sides]
#   e.g. tools/bench/gpt_bench.sh --rounds 5 -- --layers 6 --heads 6 --embd 384 --block 256 --batch 8
#   train_shakespeare_char as its recipe runs on the CPU: -- --layers 6 --heads 6 --embd 384
#     --block 256 --batch 16 --precision bf16 --dropout 0.2 --steps 3 --warmup 1
#
# 1. Training step: medians and the ratio zoo/python (the issue's target: <= 0.7) against the
#    fastest of the Python settings (common.sh), then zoo's tokens/s and model FLOPs
#    utilisation against the machine's measured matmul peak in the step's precision, and the
#    roofline (common.sh): Python's share of that peak, the lowest ratio any implementation
#    could reach.
# 2. Generation: 200 greedy tokens with the key/value cache vs recomputing the prefix every
#    step (target: >= 5x), same outputs. Default model: the train_shakespeare_char shape.
NAME=gpt_bench.sh ROUNDS=5 BIN=zoo_bench_gpt
source "$(dirname "$0")/common.sh"

step_rounds training tools/bench/gpt_bench.py --mode train
c=$STEP_ZOO_JSON  # the last round's
echo "zoo: $(num "$(echo "$c" | field tokens_per_s)") tokens/s, $(echo "$c" | field model_gflop_per_step) GFLOP/step," \
  "matmul peak $(num "$(echo "$c" | field matmul_peak_gflops)") GFLOP/s, MFU $(echo "$c" | field mfu)"
roofline "$(echo "$c" | field model_gflop_per_step)" "$(echo "$c" | field matmul_peak_gflops)"

g=$("$BUILD/$BIN" --mode generate --layers 6 --heads 6 --embd 384 --block 256 --prompt 16 --new 200 \
  --threads "$THREADS")
echo "generation of 200 tokens: cached $(echo "$g" | field cached_s) s, recomputed $(echo "$g" | field recomputed_s) s," \
  "speed-up $(echo "$g" | field speedup)x, same output: $(echo "$g" | flag same_output)"
