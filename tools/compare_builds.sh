#!/usr/bin/env bash
# Behaviour unchanged? Runs every shipped recipe cut to a few steps with two zoo binaries
# (e.g. the build of main before a refactor and after it) and compares what they write:
# the training and evaluation records of metrics.jsonl (time and memory fields left out), the
# checkpoint's model.safetensors byte for byte, every file of `zoo export`, and what the
# inference command of the recipe's task prints (generate, classify, translate).
#
#   tools/compare_builds.sh --before OLD_ZOO --after NEW_ZOO [--out DIR] [RECIPE ...]
#
# RECIPE: names under tools/recipes (without .json); all of them by default. Needs the data
# of the recipes (tools/fetch_data.sh). One thread per run, so that the two agree bit for bit.
# Exit status: 0 when every recipe matched, 1 otherwise (the differences are printed).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BEFORE="" AFTER="" OUT=runs/compare_builds
while [ $# -gt 0 ]; do
  case "$1" in
    --before) BEFORE=$2; shift 2 ;;
    --after) AFTER=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    -*) echo "compare_builds.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[ -x "$BEFORE" ] && [ -x "$AFTER" ] || { echo "compare_builds.sh: give --before and --after zoo binaries" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)  # absolute: the recipes read data paths relative to the data home
RECIPES=("$@")
[ ${#RECIPES[@]} -gt 0 ] || RECIPES=(gpt_shakespeare_char_cpu vit_fashion_mnist seq2seq_cmn transformer_cmn
                                     bert_imdb_pretrain bert_imdb_sentiment)
export OMP_NUM_THREADS=1
COMMON=(--device cpu --set train.max_steps=3 --set train.eval_steps=3 --set train.save_steps=3
        --set train.logging_steps=1 --set train.warmup_steps=1 --set train.report_to_tensorboard=false)

# The smaller data each recipe runs on here.
cut() {
  case "$1" in
    gpt_*) echo --set data.max_eval_windows=8 ;;
    vit_*) echo --set data.max_train_samples=512 --set data.max_eval_samples=64 ;;
    seq2seq_*|transformer_*) echo --set data.max_eval_samples=16 ;;
    bert_imdb_pretrain) echo --set data.max_reviews=1500 ;;
    bert_imdb_sentiment) echo --set data.max_train_samples=256 --set data.valid_size=32 --set data.max_eval_samples=32 \
                              --set data.vocab=$OUT/before/bert_imdb_pretrain/checkpoint-3/vocab.txt ;;
  esac
}

# The inference command of recipe $1's task on checkpoint $2 with binary $3 (nothing for
# pretraining): sampled generation, classification of a text or an image, beam-2 translation
# with its attention heat maps (after three steps the searches' own outputs say little).
infer() {
  case "$1" in
    gpt_*) "$3" generate --checkpoint "$2" --prompt "ROMEO:" --seed 1 --max-new-tokens 40 ;;
    vit_*) "$3" classify --checkpoint "$2" --top-k 3 "$OUT/image.pgm" ;;
    seq2seq_*|transformer_*) printf '我们走吧。\n\n他很高兴见到你。\n' |
                               "$3" translate --checkpoint "$2" --beam 2 --attention-out "$2.svg" &&
                               cat "$2"-*.svg ;;
    bert_imdb_sentiment) printf 'A wonderful film.\nThe plot was boring and the actors awful.\n' |
                           "$3" classify --checkpoint "$2" --top-k 2 ;;
  esac
}

# metrics.jsonl without the fields that measure time.
records() { sed -E 's/"[a-z_]*(runtime|per_second|examples_per_s|elapsed|time|rss|mib)[a-z_]*":[^,}]*,?//g' "$1"; }

{ printf 'P5\n28 28\n255\n'; head -c 784 /dev/urandom; } > "$OUT/image.pgm"  # one image for both sides
status=0
for r in "${RECIPES[@]}"; do
  for side in before after; do
    zoo=$BEFORE
    [ $side = after ] && zoo=$AFTER
    rm -rf "$OUT/$side/$r" "$OUT/$side/$r.export"
    mkdir -p "$OUT/$side"
    # shellcheck disable=SC2046
    "$zoo" train --config "$ROOT/tools/recipes/$r.json" --output-dir "$OUT/$side/$r" "${COMMON[@]}" $(cut "$r") \
      > "$OUT/$side/$r.log" 2>&1 || { echo "$r ($side): zoo train failed, see $OUT/$side/$r.log"; status=1; continue 2; }
    "$zoo" export --checkpoint "$OUT/$side/$r/checkpoint-3" --out "$OUT/$side/$r.export" >> "$OUT/$side/$r.log" 2>&1 ||
      { echo "$r ($side): zoo export failed, see $OUT/$side/$r.log"; status=1; continue 2; }
    infer "$r" "$OUT/$side/$r/checkpoint-3" "$zoo" > "$OUT/$side/$r.infer" 2>> "$OUT/$side/$r.log" ||
      { echo "$r ($side): inference failed, see $OUT/$side/$r.log"; status=1; continue 2; }
  done
  same=yes
  if ! diff <(records "$OUT/before/$r/metrics.jsonl") <(records "$OUT/after/$r/metrics.jsonl") > "$OUT/$r.metrics.diff"; then
    echo "$r: metrics.jsonl differs ($OUT/$r.metrics.diff)"; same=no
  fi
  cmp -s "$OUT/before/$r/checkpoint-3/model.safetensors" "$OUT/after/$r/checkpoint-3/model.safetensors" ||
    { echo "$r: model.safetensors differs"; same=no; }
  if ! diff -rq "$OUT/before/$r.export" "$OUT/after/$r.export" > "$OUT/$r.export.diff"; then
    echo "$r: the export differs ($OUT/$r.export.diff)"; same=no
  fi
  cmp -s "$OUT/before/$r.infer" "$OUT/after/$r.infer" || { echo "$r: the inference output differs"; same=no; }
  steps=$(grep -c '"type":"train"' "$OUT/after/$r/metrics.jsonl" || true)
  evals=$(grep -c '"type":"eval"' "$OUT/after/$r/metrics.jsonl" || true)
  echo "$r: $steps training records, $evals evaluation(s), weights, $(ls "$OUT/after/$r.export" | wc -l) exported files and $(wc -l < "$OUT/after/$r.infer") lines of inference: identical=$same"
  [ $same = yes ] || status=1
done
exit $status
