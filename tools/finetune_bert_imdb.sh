#!/usr/bin/env bash
# BERT on IMDB end to end: pretrain BERT (4 layers, 256 wide; MLM with task-guided masks) on the
# reviews (64-token items) for 18,000 steps (1 h 31 min on 2 cores), fine-tune for sentiment on
# 512-token texts (17 min on 2 cores), evaluate the checkpoint with the best validation accuracy
# on the 25,000 test reviews (90.29%, mean of 3 seeds), classify two sentences, export for
# transformers. --phases N pretrains N - 1 more times from the last checkpoint, each with a fresh
# schedule at half the recipe's learning rate (warm-up 300; on BERT-tiny's shape a second phase
# added 0.68 points, on two layers 256 wide a 12,000-step second phase 0.06: docs/results.md).
#
#   tools/finetune_bert_imdb.sh [--out DIR] [--device D] [--quick | --gpu] [--phases N] [--lora R]
#                               [--gradient-checkpointing]
#                               [-- EXTRA --set ARGS for both runs]
#
# Needs the reviews: tools/fetch_data.sh imdb. The recipes are tools/recipes/bert_imdb_pretrain.json
# and bert_imdb_sentiment.json. --quick is a smoke run: a smaller BERT, 300 reviews (100 from
# each folder), a few dozen steps each (minutes on a CPU; accuracy near chance). --gpu is sized for about 10 minutes of one H100 (an estimate from the
# arithmetic, not yet timed on one): BERT-medium's shape (8 layers, 512 wide, 8 heads),
# 128-token items in batches of 256 for 8,000 steps (one phase, about 10 epochs of the reviews),
# then fine-tuning on 512-token texts for 3 epochs, on --device cuda unless given. --lora R
# fine-tunes LoRA adapters of rank R on query and value (alpha 2R, learning rate 1e-3) with the
# pretrained body frozen; the classifier and the new pooler train in full (PEFT's
# modules_to_save); the export then also holds the adapter alone (export-adapter/).
# --gradient-checkpointing recomputes each layer's activations in backward in both runs.
#
# Run again after an interruption, it keeps the runs that finished and continues the one that
# stopped (--resume); delete a run's folder to train it again. A run that was trained with other
# options (--lora after a full fine-tuning, other --set ARGS) is refused, not kept: delete it, or
# give another --out.
#
# Output (default runs/bert_imdb): pretrain/ (pretrain2/ ... with --phases) and sentiment/ (the runs), eval.json,
# classify.txt, export/ (model.safetensors + Hugging Face config.json + vocab.txt).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ZOO=${ZOO:-$ROOT/build/zoo}
source "$ROOT/tools/checkpoints.sh"
source "$ROOT/tools/json.sh"
OUT=runs/bert_imdb DEVICE=auto QUICK=0 GPU=0 PHASES=1 LORA=0 CHECKPOINTING=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --gpu) GPU=1; shift ;;
    --phases) PHASES=$2; shift 2 ;;
    --one-hour) PHASES=1; shift ;;  # the name of --phases 1 before phases were counted (now the default)
    --lora) LORA=$2; shift 2 ;;
    --gradient-checkpointing) CHECKPOINTING=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "finetune_bert_imdb.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
EXTRA=("$@")
[[ "$LORA" =~ ^[0-9]+$ ]] || { echo "finetune_bert_imdb.sh: --lora $LORA: expected a rank (a whole number)" >&2; exit 2; }
[[ "$PHASES" =~ ^[1-9][0-9]*$ ]] || { echo "finetune_bert_imdb.sh: --phases $PHASES: expected 1 or more" >&2; exit 2; }
[ "$CHECKPOINTING" = 1 ] && EXTRA+=(--set train.gradient_checkpointing=true)
TUNE=()
[ "$LORA" -gt 0 ] && TUNE=(--set "train.lora={\"r\": $LORA, \"alpha\": $((2 * LORA)), \"modules_to_save\": [\"classifier\", \"pooler\"]}"
                           --set train.learning_rate=1e-3)
[ -x "$ZOO" ] || { echo "finetune_bert_imdb.sh: $ZOO not built (run tools/setup.sh)" >&2; exit 1; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
PRE=() CLS=()
if [ "$QUICK" = 1 ]; then
  SMALL=(--set model.hidden_size=32 --set model.num_hidden_layers=1 --set model.num_attention_heads=2
         --set model.intermediate_size=64 --set model.max_position_embeddings=128)
  PRE=("${SMALL[@]}" --set data.max_reviews=300 --set data.max_length=64 --set train.max_steps=30 --set train.eval_steps=30
       --set train.save_steps=30 --set train.warmup_steps=0 --set train.logging_steps=10)
  CLS=("${SMALL[@]}" --set data.max_length=64 --set data.max_train_samples=300 --set data.valid_size=50
       --set data.max_eval_samples=200 --set train.max_steps=30 --set train.eval_steps=30 --set train.save_steps=30
       --set train.warmup_steps=0 --set train.logging_steps=10)
fi
if [ "$GPU" = 1 ]; then
  [ "$QUICK" = 1 ] && { echo "finetune_bert_imdb.sh: --quick and --gpu do not go together" >&2; exit 2; }
  [ "$DEVICE" = auto ] && DEVICE=cuda
  PHASES=1
  MEDIUM=(--set model.hidden_size=512 --set model.num_hidden_layers=8 --set model.num_attention_heads=8
          --set model.intermediate_size=2048)
  PRE=("${MEDIUM[@]}" --set data.max_length=128 --set data.dynamic_masking=true --set train.per_device_train_batch_size=256
       --set train.per_device_eval_batch_size=256 --set train.learning_rate=5e-4 --set train.warmup_steps=400
       --set train.max_steps=8000 --set train.eval_steps=2000 --set train.save_steps=2000)
  CLS=("${MEDIUM[@]}" --set data.max_length=512 --set train.num_train_epochs=3 --set train.learning_rate=1e-4
       --set train.per_device_eval_batch_size=128)
fi

echo "== pretraining ($OUT/pretrain)"
train_once "$OUT/pretrain" --config "$ROOT/tools/recipes/bert_imdb_pretrain.json" --device "$DEVICE" "${PRE[@]}" "${EXTRA[@]}"
PRETRAINED=$(last_checkpoint "$OUT/pretrain")
# Later phases run at half the recipe's learning rate.
RATE=$(field learning_rate < "$ROOT/tools/recipes/bert_imdb_pretrain.json")
[ -n "$RATE" ] || { echo "finetune_bert_imdb.sh: no train.learning_rate in bert_imdb_pretrain.json" >&2; exit 1; }
HALF_RATE=$(awk -v r="$RATE" 'BEGIN { printf "%g", r / 2 }')
for ((phase = 2; phase <= PHASES; ++phase)); do
  echo "== pretraining, phase $phase of $PHASES ($OUT/pretrain$phase, from $PRETRAINED)"
  # The recipe's items and masks again, with a new optimizer and schedule; --quick's settings win.
  train_once "$OUT/pretrain$phase" --init-from "$PRETRAINED" --config "$ROOT/tools/recipes/bert_imdb_pretrain.json" \
    --device "$DEVICE" --set train.learning_rate="$HALF_RATE" --set train.warmup_steps=300 "${PRE[@]}" "${EXTRA[@]}"
  PRETRAINED=$(last_checkpoint "$OUT/pretrain$phase")
done

echo "== fine-tuning from $PRETRAINED ($OUT/sentiment)"
train_once "$OUT/sentiment" --init-from "$PRETRAINED" --config "$ROOT/tools/recipes/bert_imdb_sentiment.json" \
  --device "$DEVICE" "${CLS[@]}" "${TUNE[@]}" "${EXTRA[@]}"
# The checkpoint with the best validation accuracy (the recipe's metric_for_best_model), else the last.
TUNED=$(best_checkpoint "$OUT/sentiment")
echo "== best checkpoint by validation accuracy: $TUNED"

echo "== test accuracy ($OUT/eval.json)"
EVAL_SET=()
[ "$QUICK" = 1 ] && EVAL_SET=(--set data.max_eval_samples=200)
"$ZOO" eval --checkpoint "$TUNED" --split test --device "$DEVICE" "${EVAL_SET[@]}" | tail -1 | tee "$OUT/eval.json"

echo "== classify ($OUT/classify.txt)"
printf '%s\n' "One of the best films I have seen: moving, funny and beautifully acted." \
  "A dull, boring mess. I want my two hours back." | "$ZOO" classify --checkpoint "$TUNED" | tee "$OUT/classify.txt"

if grep -q '"classifier_pooling": *"mean"' "$TUNED/config.json"; then
  echo "== export skipped: a mean-pooled classifier (model.classifier_pooling mean) has no Hugging Face form"
else
  echo "== export ($OUT/export)"
  "$ZOO" export --checkpoint "$TUNED" --out "$OUT/export"
fi
if [ "$LORA" -gt 0 ]; then
  rm -rf "$OUT/export-adapter"
  "$ZOO" export --checkpoint "$TUNED" --out "$OUT/export-adapter" --adapter
fi

ACCURACY=$(field accuracy < "$OUT/eval.json")
EXAMPLES=$(field examples < "$OUT/eval.json")
echo "== IMDB test accuracy: $(awk -v a="$ACCURACY" 'BEGIN { printf "%.2f%%", 100 * a }') of $EXAMPLES reviews ($TUNED)"
