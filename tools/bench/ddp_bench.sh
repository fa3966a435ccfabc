#!/usr/bin/env bash
# Data-parallel scaling on one machine: `zoo train` of the ViT recipe
# (tools/recipes/vit_fashion_mnist.json) for --steps optimizer steps, with 1 process x 1
# thread and with --nproc processes x 1 thread each (tools/launch.sh, Gloo), in interleaved
# rounds. Prints examples/s of each (all processes together, from metrics.jsonl, the first
# logging window left out as warm-up) and the scaling efficiency eps(N) / (N x eps(1)).
#
#   tools/bench/ddp_bench.sh [--rounds 3] [--nproc 2] [--steps 240] [--build DIR] [-- --set KEY=VALUE...]
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/json.sh
ROUNDS=3 NPROC=2 STEPS=240 BUILD=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --nproc) NPROC=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "ddp_bench.sh: unknown option $1 (try the header of this file)" >&2; exit 2 ;;
  esac
done
EXTRA=("$@")
ZOO=$BUILD/zoo
[ -x "$ZOO" ] || { echo "ddp_bench.sh: $ZOO not built (run tools/setup.sh)" >&2; exit 1; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
LOGGING=$((STEPS / 4))
COMMON=(train --device cpu --config tools/recipes/vit_fashion_mnist.json --set train.max_time=0 --set "train.max_steps=$STEPS"
        --set "train.logging_steps=$LOGGING" --set train.eval_steps=0 --set train.save_steps=0
        --set train.report_to_tensorboard=false "${EXTRA[@]}")

# examples/s of a run: the mean of its logging windows after the first.
rate() {
  field examples_per_second < "$1/metrics.jsonl" |
    awk 'NR > 1 {s += $1; n++} END {if (n) printf "%.1f", s / n; else print "nan"}'
}

one=() many=()
for ((r = 1; r <= ROUNDS; ++r)); do
  OMP_NUM_THREADS=1 "$ZOO" "${COMMON[@]}" --output-dir "$WORK/one$r" > "$WORK/one$r.log" 2>&1 ||
    { cat "$WORK/one$r.log" >&2; exit 1; }
  OMP_NUM_THREADS=1 tools/launch.sh --nproc "$NPROC" --master-port $((29600 + r)) -- \
    "$ZOO" "${COMMON[@]}" --output-dir "$WORK/many$r" > "$WORK/many$r.log" 2>&1 ||
    { cat "$WORK/many$r.log" >&2; exit 1; }
  one+=("$(rate "$WORK/one$r")") many+=("$(rate "$WORK/many$r")")
  echo "round $r: 1 process x 1 thread ${one[-1]} examples/s; $NPROC processes x 1 thread ${many[-1]} examples/s"
done
m1=$(median "${one[@]}") mn=$(median "${many[@]}")
awk -v a="$m1" -v b="$mn" -v n="$NPROC" 'BEGIN {
  printf "median: 1 process %.1f examples/s, %d processes %.1f examples/s: speed-up %.2fx, scaling efficiency %.0f%%\n",
    a, n, b, b / a, 100 * b / (n * a) }'
