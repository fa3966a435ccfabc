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
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=5
BUILD=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "vit_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
ARGS=("$@")
PY=/usr/bin/python3
[ -x "$BUILD/zoo_bench_vit" ] || { echo "vit_bench.sh: $BUILD/zoo_bench_vit not built (run tools/setup.sh)" >&2; exit 1; }
"$PY" -c "import torch" 2>/dev/null || { echo "vit_bench.sh: $PY has no torch (apt-get install python3-torch)" >&2; exit 1; }

cpp=(); py=(); py1=()
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { sed -n 's/.*"median_step_ms": *\([0-9.]*\).*/\1/p'; }
for r in $(seq "$ROUNDS"); do
  c=$("$BUILD/zoo_bench_vit" "${ARGS[@]}" | field)
  p=$("$PY" tools/bench/vit_bench.py "${ARGS[@]}" | field)
  p1=$(OPENBLAS_NUM_THREADS=1 "$PY" tools/bench/vit_bench.py "${ARGS[@]}" | field)
  echo "round $r: zoo ${c} ms  python ${p} ms  python(OPENBLAS_NUM_THREADS=1) ${p1} ms"
  cpp+=("$c"); py+=("$p"); py1+=("$p1")
done
mc=$(median "${cpp[@]}"); mp=$(median "${py[@]}"); mp1=$(median "${py1[@]}")
echo "median step: zoo ${mc} ms, python ${mp} ms, python(OPENBLAS_NUM_THREADS=1) ${mp1} ms"
awk -v c="$mc" -v p="$mp" -v p1="$mp1" 'BEGIN {printf "ratio zoo/python: %.3f (default python), %.3f (python with OPENBLAS_NUM_THREADS=1)\n", c/p, c/p1}'
