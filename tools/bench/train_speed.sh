#!/usr/bin/env bash
# Speed unchanged? Runs `zoo train` of shipped recipes cut to a few hundred steps with two zoo
# binaries (e.g. the build of main before a refactor and after it), alternating before and after
# R times on the same machine, and prints each side's training throughput (a run's: its steps'
# examples over their time, i.e. the harmonic mean of metrics.jsonl's examples_per_second, so that
# a slow step weighs by its time, as when batches of different lengths take different times; then
# the median over the repeats) and the ratio after / before. Evaluation and checkpoints are left
# out of the timed steps.
#
#   tools/bench/train_speed.sh --before OLD_ZOO --after NEW_ZOO [--repeats R] [--steps N] [--out DIR]
#                              [--set section.key=value ...] [RECIPE ...]
#
# RECIPE: names under tools/recipes (without .json); by default one per task. Needs the data of
# the recipes (tools/fetch_data.sh). Threads: zoo's default (all cores); give OMP_NUM_THREADS to pin.
# --set goes to every run (e.g. data.vocab=DIR/vocab.txt, which bert_imdb_sentiment needs).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tools/json.sh"
BEFORE="" AFTER="" OUT=runs/train_speed REPEATS=3 STEPS=300 SETS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --before) BEFORE=$2; shift 2 ;;
    --after) AFTER=$2; shift 2 ;;
    --repeats) REPEATS=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --set) SETS+=(--set "$2"); shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    -*) echo "train_speed.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -x "$BEFORE" ] && [ -x "$AFTER" ] || { echo "train_speed.sh: give --before and --after zoo binaries" >&2; exit 2; }
RECIPES=("$@")
[ ${#RECIPES[@]} -gt 0 ] || RECIPES=(vit_fashion_mnist gpt_shakespeare_char_cpu transformer_cmn bert_imdb_pretrain)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
# train.max_time=0: a recipe sized by the clock (the 15-minute ViT) would otherwise run its minutes.
COMMON=(--device cpu --set train.max_steps="$STEPS" --set train.max_time=0 --set train.eval_steps=1000000 --set train.save_steps=1000000
        --set train.logging_steps=1 --set train.report_to_tensorboard=false ${SETS[@]+"${SETS[@]}"})

# The examples/s of a run's training records, its first 10 steps (warm-up) left out: the harmonic
# mean of the steps' rates (every step has the recipe's batch).
run_speed() {
  grep '"type":"train"' "$1" | field examples_per_second | tail -n +11 | awk '{t += 1 / $1} END {if (NR) print NR / t}'
}

printf '%-28s %12s %12s %8s\n' recipe before after ratio
for r in "${RECIPES[@]}"; do
  before=() after=()
  for i in $(seq "$REPEATS"); do
    for side in before after; do
      zoo=$BEFORE
      [ $side = after ] && zoo=$AFTER
      dir="$OUT/$side/$r-$i"
      rm -rf "$dir"
      mkdir -p "$OUT/$side"
      "$zoo" train --config "$ROOT/tools/recipes/$r.json" --output-dir "$dir" "${COMMON[@]}" > "$dir.log" 2>&1 ||
        { echo "$r ($side): zoo train failed, see $dir.log"; exit 1; }
      speed=$(run_speed "$dir/metrics.jsonl")
      [ -n "$speed" ] || { echo "$r ($side): no training record after step 10 in $dir/metrics.jsonl (--steps must exceed 10)"; exit 1; }
      [ $side = before ] && before+=("$speed") || after+=("$speed")
    done
  done
  b=$(median "${before[@]}") a=$(median "${after[@]}")
  awk -v r="$r" -v a="$a" -v b="$b" 'BEGIN {printf "%-28s %12.1f %12.1f %8.3f\n", r, b, a, a / b}'
done
