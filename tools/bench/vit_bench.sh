#!/usr/bin/env bash
# ViT training-step benchmark: zoo (C++) against the same architecture in Python PyTorch
# (tests/py/hf_vit.py), same machine, threads and batch, in interleaved rounds so that both
# sides see the same machine noise. Prints each round and the medians and ratio.
#
#   tools/bench/vit_bench.sh [--rounds N] [--build DIR] [-- ARGS for both sides]
#   e.g. tools/bench/vit_bench.sh --rounds 5 -- --patch 7 --layers 6 --batch 128 --threads 2
#
# The Python side runs three times per round: with torch's default threads, with
# set_num_threads(--threads) and with OPENBLAS_NUM_THREADS=1 as well (the threading zoo
# configures for itself); the ratio is taken against the fastest of the three (common.sh).
NAME=vit_bench.sh ROUNDS=5 BIN=zoo_bench_vit
source "$(dirname "$0")/common.sh"
step_rounds training tools/bench/vit_bench.py
