#!/usr/bin/env bash
# What a BERT pretraining buys on IMDB sentiment (issue 39's measure): the sentiment recipe
# fine-tuned from CHECKPOINT and, with the same settings and the checkpoint's vocab.txt, from
# random weights, once per seed; each run's best validation checkpoint scored on the 25,000
# test reviews; every seed's two figures, their means and the difference.
#
#   tools/bench/bert_imdb_gain.sh --from CHECKPOINT [--seeds 42,43,44] [--jobs N] [--out DIR]
#                                 [--config FILE.json] [--build DIR] [-- --set section.key=value ...]
#   e.g. tools/bench/bert_imdb_gain.sh --from runs/bert_imdb/pretrain/checkpoint-18000 --jobs 2
#
# The runs are `zoo finetune --from CHECKPOINT` and `zoo train --set data.vocab=CHECKPOINT/vocab.txt`
# with --config (default tools/recipes/bert_imdb_sentiment.json), --set train.seed=S and the
# arguments after --, into OUT/pretrained-sS and OUT/scratch-sS (default OUT:
# runs/bert_imdb_gain), N at a time (default: one per core, each with cores / N threads); then
# `zoo eval --split test` of each run's best checkpoint into OUT/<run>.eval.json. A run whose
# .eval.json exists is kept, so a stopped comparison goes on where it stopped (delete OUT for
# a new one). Prints one line per run as it ends and writes the table to OUT/summary.md.
set -euo pipefail
NAME=bert_imdb_gain.sh
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
source "$ROOT/tools/checkpoints.sh"
source "$ROOT/tools/bench/parallel.sh"
source "$ROOT/tools/json.sh"
FROM="" SEEDS=42,43,44 JOBS="" OUT=runs/bert_imdb_gain CONFIG=$ROOT/tools/recipes/bert_imdb_sentiment.json BUILD=$ROOT/build
while [ $# -gt 0 ]; do
  case "$1" in
    --from) FROM=$2; shift 2 ;;
    --seeds) SEEDS=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --config) CONFIG=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "$NAME: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
EXTRA=("$@")
ZOO=$BUILD/zoo
[ -x "$ZOO" ] || { echo "$NAME: $ZOO not built (run tools/setup.sh)" >&2; exit 1; }
[ -n "$FROM" ] || { echo "$NAME: --from CHECKPOINT (a pretraining's checkpoint-N directory) is required" >&2; exit 2; }
[ -f "$FROM/vocab.txt" ] || { echo "$NAME: $FROM/vocab.txt not found: --from takes a BERT pretraining's checkpoint-N directory" >&2; exit 1; }
[ -f "$CONFIG" ] || { echo "$NAME: no config file '$CONFIG'" >&2; exit 1; }
seed_list "$SEEDS"
share_cores $((2 * ${#SEED_LIST[@]}))
FROM=$(cd "$FROM" && pwd)
mkdir -p "$OUT"

# run START SEED: fine-tune (START pretrained or scratch), score the best checkpoint, print
# "START SEED ACCURACY" and add it to $results.
run() {
  local start=$1 seed=$2 dir=$OUT/$1-s$2 how
  if [ ! -s "$dir.eval.json" ]; then
    rm -rf "$dir"
    if [ "$start" = pretrained ]; then how=(finetune --from "$FROM"); else how=(train --set data.vocab="$FROM/vocab.txt"); fi
    if ! { OMP_NUM_THREADS=$THREADS "$ZOO" "${how[@]}" --config "$CONFIG" --output-dir "$dir" --set train.seed="$seed" \
             "${EXTRA[@]}" && OMP_NUM_THREADS=$THREADS "$ZOO" eval --checkpoint "$(best_checkpoint "$dir")" --split test \
             | tail -1 > "$dir.eval.json.part"; } > "$dir.log" 2>&1; then
      echo "$NAME: $start seed $seed failed; its log: $dir.log" >&2
      tail -3 "$dir.log" >&2
      return 1
    fi
    mv "$dir.eval.json.part" "$dir.eval.json"
  fi
  echo "$start $seed $(field accuracy < "$dir.eval.json")" | tee -a "$results"
}

echo "$NAME: ${#SEED_LIST[@]} seeds from $FROM and from scratch ${EXTRA[*]}, $JOBS at a time with $THREADS threads each" >&2
results=$OUT/results.txt
: > "$results"
pids=()
for s in "${SEED_LIST[@]}"; do
  for start in pretrained scratch; do
    wait_for_slot
    run "$start" "$s" &
    pids+=($!)
  done
done
wait_all "${pids[@]}"

# The table in --seeds order: test accuracy in percent, pretrained minus scratch per seed and on the means.
awk -v order="$SEEDS" -v from="$FROM" -v extra="${EXTRA[*]}" '
  { acc[$1, $2] = 100 * $3 }
  END {
    n = split(order, seeds, ",")
    printf "IMDB test accuracy (%%), fine-tuned from %s and from scratch%s\n\n", from, (extra == "" ? "" : " (" extra ")")
    print "| seed | pretrained | scratch | difference |"
    print "|---|---|---|---|"
    for (i = 1; i <= n; ++i) {
      p = acc["pretrained", seeds[i]]; q = acc["scratch", seeds[i]]; sp += p; sq += q
      printf "| %s | %.2f | %.2f | %+.2f |\n", seeds[i], p, q, p - q
    }
    printf "| **mean** | **%.2f** | **%.2f** | **%+.2f** |\n", sp / n, sq / n, (sp - sq) / n
  }' "$results" | tee "$OUT/summary.md"
