#!/usr/bin/env bash
# Transformer benchmarks: zoo (C++) against the same architecture on torch.nn.Transformer in
# eager Python PyTorch (tools/bench/transformer_bench.py), same machine, threads, batch and
# shapes, in interleaved rounds.
#
#   tools/bench/transformer_bench.sh [--rounds N] [--build DIR] [-- ARGS for both sides]
#   e.g. tools/bench/transformer_bench.sh --rounds 5 -- --d-model 512 --layers 6 --heads 8 --ffn 2048
#
# 1. Training step: medians and the ratio zoo/python (the issue's target: <= 0.7) against the
#    fastest of the Python settings (common.sh). Default sizes: transformer-small with
#    cmn.txt's vocabularies, batch 64 of up to 14 source and target tokens. Then the roofline
#    (common.sh): the step's matrix-product work against the measured peak, each side's share
#    of it, and the lowest ratio any implementation could reach.
# 2. Decoding: beam search (4 beams) of 50 tokens for 10 sentences with the key/value cache
#    against recomputing the decoder over the prefix every step (target: >= 3x), same outputs.
NAME=transformer_bench.sh ROUNDS=5 BIN=zoo_bench_transformer
source "$(dirname "$0")/common.sh"

step_rounds training tools/bench/transformer_bench.py --mode train
c=$STEP_ZOO_JSON  # the last round's
roofline "$(echo "$c" | field model_gflop_per_step)" "$(echo "$c" | field matmul_peak_gflops)"

g=$("$BUILD/$BIN" --mode decode --beams 4 --new 50 --sentences 10 --threads "$THREADS")
echo "beam-4 decoding of 50 tokens (10 sentences): cached $(echo "$g" | field cached_s) s," \
  "recomputed $(echo "$g" | field recomputed_s) s, speed-up $(echo "$g" | field speedup)x," \
  "same output: $(echo "$g" | flag same_output)"
