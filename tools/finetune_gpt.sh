#!/usr/bin/env bash
# Fine-tune a GPT on your text files, sample from it, evaluate it and export it.
#
#   tools/finetune_gpt.sh --from DIR --text FILE [--text FILE]... [--out DIR] [--steps N]
#                         [--block N] [--batch N] [--lr X] [--prompt TEXT] [--device D]
#                         [--lora R] [--gradient-checkpointing]
#   tools/finetune_gpt.sh --quick [--text FILE]... [--lora R] [--gradient-checkpointing]
#
# DIR is a zoo checkpoint (OUT/checkpoint-N) or a Hugging Face GPT-2 directory
# (config.json, model.safetensors, vocab.json + merges.txt): its sizes, its tokenizer and its
# weights are taken as they are. --quick is a smoke run that needs nothing but the
# repository: a tiny GPT (preset gpt-nano-char) is trained from scratch for a few steps on
# the text (default: the repository's README.md), then fine-tuned, sampled, evaluated and
# exported the same way. --lora R trains LoRA adapters of rank R on c_attn (alpha 2R) with
# the base frozen, and also exports them alone (export-adapter/, PEFT's files); the default
# learning rate becomes 1e-3. --gradient-checkpointing recomputes each block's activations in
# backward (less memory, about a third more arithmetic).
#
# Run again (to sample again, or after an interruption), it keeps a finished run and continues
# a stopped one (--resume); a run made with other options is refused: delete it, or give
# another --out.
#
# Output (default runs/finetune_gpt): finetune/ (the run: checkpoints, metrics.jsonl,
# TensorBoard events), sample.txt, eval.json, export/ (model.safetensors + Hugging Face
# config.json + the tokenizer files).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ZOO=${ZOO:-$ROOT/build/zoo}
source "$ROOT/tools/checkpoints.sh"
FROM="" OUT=runs/finetune_gpt STEPS=200 BLOCK=0 BATCH=8 LR="" PROMPT=$'\n' DEVICE=auto QUICK=0 LORA=0 CHECKPOINTING=false
TEXTS=()
while [ $# -gt 0 ]; do
  case "$1" in
    --from) FROM=$2; shift 2 ;;
    --text) TEXTS+=("$2"); shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --block) BLOCK=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --lr) LR=$2; shift 2 ;;
    --prompt) PROMPT=$2; shift 2 ;;
    --device) DEVICE=$2; shift 2 ;;
    --quick) QUICK=1; shift ;;
    --lora) LORA=$2; shift 2 ;;
    --gradient-checkpointing) CHECKPOINTING=true; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
    *) echo "finetune_gpt.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
[ -x "$ZOO" ] || { echo "finetune_gpt.sh: $ZOO not built (run tools/setup.sh)" >&2; exit 1; }
if [ "$QUICK" = 1 ]; then
  [ ${#TEXTS[@]} -gt 0 ] || TEXTS=("$ROOT/README.md")
  STEPS=20 BLOCK=64 BATCH=4 LR=${LR:-1e-3}
else
  [ -n "$FROM" ] || { echo "finetune_gpt.sh: give --from DIR (a zoo checkpoint or Hugging Face GPT-2 directory), or --quick" >&2; exit 2; }
  [ ${#TEXTS[@]} -gt 0 ] || { echo "finetune_gpt.sh: give at least one --text FILE" >&2; exit 2; }
fi
for f in "${TEXTS[@]}"; do
  [ -f "$f" ] || { echo "finetune_gpt.sh: --text $f: no such file" >&2; exit 2; }
done
[[ "$LORA" =~ ^[0-9]+$ ]] || { echo "finetune_gpt.sh: --lora $LORA: expected a rank (a whole number)" >&2; exit 2; }
[ -n "$LR" ] || { [ "$LORA" -gt 0 ] && LR=1e-3 || LR=3e-5; }
LORA_JSON=null
[ "$LORA" -gt 0 ] && LORA_JSON="{\"r\": $LORA, \"alpha\": $((2 * LORA)), \"target_modules\": [\"c_attn\"]}"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

# JSON string of $1 (quotes and backslashes escaped); absolute paths so the data home rule
# does not apply.
json_str() { local s=$1; s=${s//\\/\\\\}; s=${s//\"/\\\"}; printf '"%s"' "$s"; }
abs() { echo "$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"; }
files_json() {
  local out="" f
  for f in "${TEXTS[@]}"; do out+="${out:+, }$(json_str "$(abs "$f")")"; done
  echo "[$out]"
}

if [ "$QUICK" = 1 ] && [ -z "$FROM" ]; then
  echo "== quick: pretraining a tiny GPT on ${TEXTS[*]}"
  cat > "$OUT/pretrain.json" <<EOF
{"task": "language_modeling", "model": {"preset": "gpt-nano-char"},
 "data": {"files": $(files_json), "tokenizer": "char", "block_size": 64},
 "train": {"max_steps": 30, "per_device_train_batch_size": 8, "learning_rate": 1e-3, "logging_steps": 10,
           "eval_steps": 30, "save_steps": 30, "report_to_tensorboard": false}}
EOF
  train_once "$OUT/pretrain" --config "$OUT/pretrain.json" --device "$DEVICE"
  FROM=$(last_checkpoint "$OUT/pretrain")
fi
FROM=$(cd "$FROM" && pwd)

echo "== fine-tuning $FROM on ${TEXTS[*]} for $STEPS steps"
cat > "$OUT/finetune.json" <<EOF
{"task": "language_modeling", "model": {"preset": $(json_str "$FROM")},
 "data": {"files": $(files_json), "tokenizer": $(json_str "$FROM"), "block_size": $BLOCK,
          "stream": $(json_str "$OUT/finetune/tokens.bin")},
 "train": {"max_steps": $STEPS, "per_device_train_batch_size": $BATCH, "learning_rate": $LR,
           "lr_scheduler_type": "cosine", "warmup_steps": $((STEPS / 10)), "weight_decay": 0.1,
           "logging_steps": $(( STEPS < 50 ? 5 : 25 )), "eval_steps": $STEPS, "save_steps": $STEPS,
           "init_from": $(json_str "$FROM"), "lora": $LORA_JSON, "gradient_checkpointing": $CHECKPOINTING}}
EOF
train_once "$OUT/finetune" --config "$OUT/finetune.json" --device "$DEVICE"
CKPT=$(last_checkpoint "$OUT/finetune")

echo "== sample from $CKPT"
"$ZOO" generate --checkpoint "$CKPT" --prompt "$PROMPT" --max-new-tokens 200 --temperature 0.8 --top-k 200 \
  --seed 1 --device "$DEVICE" | tee "$OUT/sample.txt"
echo "== evaluate"
"$ZOO" eval --checkpoint "$CKPT" --device "$DEVICE" | tee "$OUT/eval.json"
echo "== export"
rm -rf "$OUT/export"
"$ZOO" export --checkpoint "$CKPT" --out "$OUT/export"
if [ "$LORA" -gt 0 ]; then
  rm -rf "$OUT/export-adapter"
  "$ZOO" export --checkpoint "$CKPT" --out "$OUT/export-adapter" --adapter
fi
echo "done: $OUT (finetune/, sample.txt, eval.json, export/$([ "$LORA" -gt 0 ] && echo ", export-adapter/"))"
