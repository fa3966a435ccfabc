#!/usr/bin/env bash
# ViT training-step benchmark: zoo (C++) against the same architecture in Python PyTorch
# (tests/py/hf_vit.py), same machine, threads and batch, in interleaved rounds so that both
# sides see the same machine noise. Prints each round and the medians and ratio.
#
#   tools/bench/vit_bench.sh [--rounds N] [--build DIR] [-- ARGS for both sides]
#   e.g. tools/bench/vit_bench.sh --rounds 5 -- --patch 7 --layers 6 --batch 128 --threads 2
#
# The Python side runs twice per round: as installed (OpenBLAS with its own thread pool,
# the default a Python user gets) and with OPENBLAS_NUM_THREADS=1 (the threading zoo
# configures for itself), so the ratio can be read both ways.
NAME=vit_bench.sh ROUNDS=5 BIN=zoo_bench_vit
source "$(dirname "$0")/common.sh"
cpp=(); py=(); py1=()
for r in $(seq "$ROUNDS"); do
  c=$("$BUILD/zoo_bench_vit" "${ARGS[@]}" | field median_step_ms)
  p=$("$PY" tools/bench/vit_bench.py "${ARGS[@]}" | field median_step_ms)
  p1=$(OPENBLAS_NUM_THREADS=1 "$PY" tools/bench/vit_bench.py "${ARGS[@]}" | field median_step_ms)
  echo "round $r: zoo ${c} ms  python ${p} ms  python(OPENBLAS_NUM_THREADS=1) ${p1} ms"
  cpp+=("$c"); py+=("$p"); py1+=("$p1")
done
mc=$(median "${cpp[@]}"); mp=$(median "${py[@]}"); mp1=$(median "${py1[@]}")
echo "median step: zoo ${mc} ms, python ${mp} ms, python(OPENBLAS_NUM_THREADS=1) ${mp1} ms"
awk -v c="$mc" -v p="$mp" -v p1="$mp1" 'BEGIN {printf "ratio zoo/python: %.3f (default python), %.3f (python with OPENBLAS_NUM_THREADS=1)\n", c/p, c/p1}'
