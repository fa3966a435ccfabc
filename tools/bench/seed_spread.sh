#!/usr/bin/env bash
# Runs one recipe under several seeds and reports each seed's final evaluation and their mean
# and standard deviation: how far a figure moves by the seed alone, before reading anything
# into a difference between two settings.
#
#   tools/bench/seed_spread.sh --config FILE.json [--seeds 1337,1,2,3] [--jobs N] [--metric loss]
#                              [--out DIR] [--build DIR] [-- --set section.key=value ...]
#   e.g. tools/bench/seed_spread.sh --config tools/recipes/gpt_shakespeare_char_cpu.json \
#          -- --set train.min_lr_rate=0.3
#
# Each seed trains `zoo train --config FILE --set train.seed=S ...` into OUT/seed-S (default
# OUT: runs/seed_spread), N at a time (default: one per core, each with cores / N threads),
# evaluating only at the end (train.eval_steps=0, train.save_steps=0 unless the arguments
# after -- set them). The figure is the metric of the run's last eval event in
# OUT/seed-S/metrics.jsonl. Prints one line per seed as it ends, then a JSON summary that is
# also written to OUT/summary.json. A seed whose run fails stops the script and the seeds
# still running, with the failed run's log named; finished seeds are kept.
set -euo pipefail
NAME=seed_spread.sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tools/bench/parallel.sh"
source "$ROOT/tools/json.sh"
CONFIG="" SEEDS=1337,1,2,3 JOBS="" METRIC=loss OUT=runs/seed_spread BUILD=$ROOT/build
while [ $# -gt 0 ]; do
  case "$1" in
    --config) CONFIG=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --metric) METRIC=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "$NAME: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
EXTRA=("$@")
ZOO=$BUILD/zoo
[ -x "$ZOO" ] || { echo "$NAME: $ZOO not built (run tools/setup.sh)" >&2; exit 1; }
[ -n "$CONFIG" ] || { echo "$NAME: --config FILE.json is required (try --help)" >&2; exit 2; }
[ -f "$CONFIG" ] || { echo "$NAME: no config file '$CONFIG'" >&2; exit 1; }
seed_list "$SEEDS"
share_cores ${#SEED_LIST[@]}
mkdir -p "$OUT"

# One seed: train, then print "SEED VALUE" from the last eval event and add it to $results.
run_seed() {
  local seed=$1 dir=$OUT/seed-$1
  rm -rf "$dir"
  if ! OMP_NUM_THREADS=$THREADS "$ZOO" train --config "$CONFIG" --output-dir "$dir" --set train.seed="$seed" \
      --set train.eval_steps=0 --set train.save_steps=0 "${EXTRA[@]}" > "$dir.log" 2>&1; then
    echo "$NAME: seed $seed failed; its log: $dir.log" >&2
    tail -3 "$dir.log" >&2
    return 1
  fi
  local value
  value=$(grep '"type":"eval"' "$dir/metrics.jsonl" | tail -1 | field "$METRIC")
  [ -n "$value" ] || { echo "$NAME: seed $seed: no '$METRIC' in the last eval event of $dir/metrics.jsonl" >&2; return 1; }
  echo "$seed $value" | tee -a "$results"
}

echo "$NAME: ${#SEED_LIST[@]} seeds of $CONFIG ${EXTRA[*]}, $JOBS at a time with $THREADS threads each" >&2
results=$OUT/results.txt
: > "$results"
pids=()
for s in "${SEED_LIST[@]}"; do
  wait_for_slot
  run_seed "$s" &
  pids+=($!)
done
wait_all "${pids[@]}"

# Summary in the order of --seeds; the standard deviation is the sample's (n - 1).
summary=$(awk -v metric="$METRIC" -v config="$CONFIG" -v extra="${EXTRA[*]}" -v order="$SEEDS" '
  { value[$1] = $2 }
  END {
    n = split(order, seeds, ",")
    for (i = 1; i <= n; ++i) { sum += value[seeds[i]] }
    mean = sum / n
    for (i = 1; i <= n; ++i) { ss += (value[seeds[i]] - mean) ^ 2 }
    sd = n > 1 ? sqrt(ss / (n - 1)) : 0
    gsub(/"/, "\\\"", extra)
    printf "{\"config\":\"%s\",\"overrides\":\"%s\",\"metric\":\"%s\",\"seeds\":{", config, extra, metric
    for (i = 1; i <= n; ++i) printf "%s\"%s\":%.7f", (i > 1 ? "," : ""), seeds[i], value[seeds[i]]
    printf "},\"mean\":%.7f,\"sd\":%.7f,\"n\":%d}\n", mean, sd, n
  }' "$results")
echo "$summary" | tee "$OUT/summary.json"
