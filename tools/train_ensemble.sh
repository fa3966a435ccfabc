#!/usr/bin/env bash
# An ensemble of one recipe, end to end: trains N members (seeds S, S+1, ..., S+N-1) side by side,
# each on its share of the cores, then scores each member alone and the ensemble on the test split
# (zoo eval --ensemble: the mean of the members' predicted distributions; for translation, of the
# next token at every step of the search).
#
#   tools/train_ensemble.sh --config RECIPE [--members N] [--seed S] [--out DIR] [--device D]
#                           [--jobs J] [--eval-set KEY=VALUE]... [-- EXTRA --set ARGS for training]
#
# --jobs: members trained at once (default: one per core, at most N), each on cores / J threads
# (OMP_NUM_THREADS and OPENBLAS_NUM_THREADS); a member that fails stops the others (they write a
# checkpoint, so a second call continues them). --eval-set: a config override for the
# test evaluations only (repeatable), e.g. data.eval_beam_size=4. A member's checkpoint is its
# checkpoint-averaged when the recipe averages checkpoints (train.average_checkpoints), else its
# best by the recipe's metric. Run again after an interruption, finished members are kept and a
# stopped one continues (--resume); a member trained with other arguments is refused.
#
# Output (default runs/ensemble): member-S/ (the runs and their logs, member-S.log), eval-S.json
# (each member alone) and eval.json (the ensemble).
#
# The Transformer of issue 65 (two members of the averaged recipe on 2 cores; docs/results.md):
#   tools/train_ensemble.sh --config tools/recipes/transformer_cmn_avg.json --members 2 \
#       --out runs/transformer_ensemble --eval-set data.eval_beam_size=4
set -euo pipefail
NAME=train_ensemble.sh
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ZOO=${ZOO:-$ROOT/build/zoo}
source "$ROOT/tools/checkpoints.sh"
source "$ROOT/tools/json.sh"
source "$ROOT/tools/bench/parallel.sh"
CONFIG="" MEMBERS=2 SEED=42 OUT=runs/ensemble DEVICE=auto JOBS="" EVAL_SET=()
die() { echo "$NAME: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --config) CONFIG=$2; shift 2 ;;
    --members) MEMBERS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --eval-set) EVAL_SET+=(--set "$2"); shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) die "unknown option '$1' (try --help)" ;;
  esac
done
EXTRA=("$@")
[ -n "$CONFIG" ] || die "--config RECIPE is required (e.g. tools/recipes/transformer_cmn_avg.json)"
[ -f "$CONFIG" ] || die "--config $CONFIG: no such file"
[[ "$MEMBERS" =~ ^[1-9][0-9]*$ ]] || die "--members $MEMBERS: expected 1 or more"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "--seed $SEED: expected a whole number"
[ -x "$ZOO" ] || { echo "$NAME: $ZOO not built (run tools/setup.sh)" >&2; exit 1; }
share_cores "$MEMBERS"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

SEEDS=()
for ((m = 0; m < MEMBERS; ++m)); do SEEDS+=($((SEED + m))); done
# One member: trained (or kept, or continued) into OUT/member-SEED, its output in member-SEED.log.
train_member() {
  if ! ( export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
         train_once "$OUT/member-$1" --config "$CONFIG" --device "$DEVICE" --set train.seed="$1" "${EXTRA[@]}" ) \
      > "$OUT/member-$1.log" 2>&1; then
    echo "$NAME: member $1 failed; its log: $OUT/member-$1.log" >&2
    tail -n 3 "$OUT/member-$1.log" >&2
    return 1
  fi
}
echo "== training ${MEMBERS} members (seeds ${SEEDS[*]}), $JOBS at a time with $THREADS thread(s) each; logs in $OUT/member-SEED.log"
pids=()
for s in "${SEEDS[@]}"; do
  wait_for_slot
  train_member "$s" &
  pids+=($!)
done
wait_all "${pids[@]}"

# The checkpoint a member is scored by: its average of checkpoints, else its best.
member_checkpoint() {
  if [ -d "$1/checkpoint-averaged" ]; then echo "$1/checkpoint-averaged"; else best_checkpoint "$1"; fi
}
CHECKPOINTS=()
for s in "${SEEDS[@]}"; do CHECKPOINTS+=("$(member_checkpoint "$OUT/member-$s")"); done

export OMP_NUM_THREADS=$((JOBS * THREADS)) OPENBLAS_NUM_THREADS=$((JOBS * THREADS))
for i in "${!SEEDS[@]}"; do
  echo "== test split, member ${SEEDS[$i]} alone ($OUT/eval-${SEEDS[$i]}.json): ${CHECKPOINTS[$i]}"
  "$ZOO" eval --checkpoint "${CHECKPOINTS[$i]}" --split test --device "$DEVICE" "${EVAL_SET[@]}" | tail -1 \
    | tee "$OUT/eval-${SEEDS[$i]}.json"
done
ENSEMBLE=()
for c in "${CHECKPOINTS[@]:1}"; do ENSEMBLE+=(--ensemble "$c"); done
echo "== test split, the ensemble of ${MEMBERS} ($OUT/eval.json)"
"$ZOO" eval --checkpoint "${CHECKPOINTS[0]}" "${ENSEMBLE[@]}" --split test --device "$DEVICE" "${EVAL_SET[@]}" \
  | tail -1 | tee "$OUT/eval.json"
