# The fine-tuning part of tools/check_gpu.sh (finetune: issue #38 on a GPU), sourced by it after
# the build: uses its want, step, status, left, ZOO, PY, BUILD, RUNS and OUT_DIR. Not run on its own.
#   finetune  finetune_bench.txt: GPT-2 124M training steps on cuda (batch 16 x 1,024): bf16, fp16
#             with loss scaling, gradient checkpointing, LoRA r=8 on c_attn, both; ms/step,
#             tokens/s and the CUDA allocator's peak.
#             finetune_curves.txt: GPT-2 124M's 12 x 768 body on tiny Shakespeare (characters,
#             block 1,024), 300 steps in bf16 and in fp16 with loss scaling: the loss curves side
#             by side (needs tinyshakespeare in zoo's data home or ZOO_DATA_DIR).
#             peft.txt: a transformers GPT-2 fine-tuned by zoo on cuda with train.lora; `zoo export
#             --adapter` loaded by peft.PeftModel, `zoo export --max-shard-size` (sharded, adapters
#             merged) loaded by transformers: the same logits as each other and as the paper's
#             formula (tests/py/peft_check.py), and zoo eval's loss = transformers' on the export.

if want finetune && left 150 finetune; then
  step "GPT-2 124M on cuda: bf16, fp16 (loss scaling), gradient checkpointing, LoRA r=8"
  B="$OUT_DIR/finetune_bench.txt"
  : >"$B"
  for variant in "bf16" "fp16" "bf16 --gradient-checkpointing" "bf16 --lora 8" "bf16 --lora 8 --gradient-checkpointing" \
                 "fp16 --gradient-checkpointing"; do
    echo "## --precision $variant" >>"$B"
    # shellcheck disable=SC2086 # the variant's flags split on purpose
    "$BUILD/zoo_bench_gpt" --mode train --device cuda --layers 12 --heads 12 --embd 768 --block 1024 --vocab 50257 \
      --batch 16 --steps 20 --warmup 5 --precision $variant >>"$B" 2>&1 || status=1
  done
  "$PY" - "$B" <<'PYEOF' | tee -a "$B" || status=1
import json, sys
print("| precision | checkpointing | LoRA r | ms/step | tokens/s | MFU | CUDA peak allocated (MiB) | trained parameters |")
print("|---|---|---|---|---|---|---|---|")
for line in open(sys.argv[1]):
    if line.startswith("{"):
        j = json.loads(line)
        print(f"| {j['precision']} | {j['gradient_checkpointing']} | {j['lora_r']} | {j['median_step_ms']:.1f} | "
              f"{j['tokens_per_s']:.0f} | {j['mfu']:.3f} | {j.get('cuda_peak_allocated_mib', -1):.0f} | {j['trained_parameters']} |")
PYEOF

  if left 90 curves; then
    step "GPT-2 124M's body on tiny Shakespeare, 300 steps: bf16 against fp16 with loss scaling"
    C="$OUT_DIR/finetune_curves.txt"
    : >"$C"
    for precision in bf16 fp16; do
      cat >"$RUNS/curve.json" <<EOF
{"task": "language_modeling",
 "model": {"preset": "gpt-nano-char", "n_positions": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12},
 "data": {"files": ["tinyshakespeare/input.txt"], "tokenizer": "char", "validation_fraction": 0.1,
          "block_size": 1024, "max_eval_windows": 64},
 "train": {"max_steps": 300, "per_device_train_batch_size": 16, "learning_rate": 6e-4, "warmup_steps": 30,
           "lr_scheduler_type": "cosine", "weight_decay": 0.1, "max_grad_norm": 1.0, "logging_steps": 10,
           "eval_steps": 300, "save_steps": 300, "report_to_tensorboard": false, "seed": 1337,
           "precision": "$precision"}}
EOF
      rm -rf "$RUNS/curve-$precision"
      t0=$(date +%s.%N)
      "$ZOO" train --config "$RUNS/curve.json" --device cuda --output-dir "$RUNS/curve-$precision" \
        >"$RUNS/curve-$precision.log" 2>&1 || { status=1; tail -3 "$RUNS/curve-$precision.log" >>"$C"; }
      echo "$precision: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s wall;" \
        "$(grep -E '^eval|^done' "$RUNS/curve-$precision.log" | tr '\n' ' ')" >>"$C"
    done
    "$PY" tools/bench/compare_curves.py --after 100 --table "$RUNS/curve-bf16" "$RUNS/curve-fp16" >>"$C" 2>&1 ||
      status=1
    cat "$C"
  fi

  if left 60 peft; then
    step "LoRA on cuda: zoo export --adapter loaded by PEFT, the sharded merged export by transformers"
    bash -euo pipefail >"$OUT_DIR/peft.txt" 2>&1 <<'SCRIPT' || status=1
    L="$RUNS/peft"
    rm -rf "$L" && mkdir -p "$L"
    "$PY" tests/py/transformers_check.py gpt2-make "$L/base"
    cat >"$L/lora.json" <<EOF
{"task": "language_modeling", "model": {"preset": "$L/base"},
 "data": {"files": ["$PWD/README.md"], "tokenizer": "$L/base", "validation_fraction": 0.1},
 "train": {"max_steps": 60, "per_device_train_batch_size": 8, "learning_rate": 0.01, "init_from": "$L/base",
           "lora": {"r": 4, "alpha": 8, "target_modules": ["c_attn"]}, "eval_steps": 60, "save_steps": 60,
           "report_to_tensorboard": false}}
EOF
    "$ZOO" train --config "$L/lora.json" --device cuda --output-dir "$L/run" 2>&1 | grep -E "LoRA|lora|trainable|^eval|^done"
    "$ZOO" export --checkpoint "$L/run/checkpoint-60" --adapter --out "$L/adapter"
    "$ZOO" export --checkpoint "$L/run/checkpoint-60" --max-shard-size 40KB --out "$L/merged"
    ls "$L/adapter" "$L/merged"
    "$PY" tests/py/peft_check.py "$L/base" "$L/adapter" "$L/merged"
    z=$("$ZOO" eval --checkpoint "$L/run/checkpoint-60" --device cpu --set train.precision=fp32)
    h=$("$PY" tests/py/transformers_check.py gpt2-loss "$L/merged" "$L/run/tokens.bin" 0.1 2000)
    echo "zoo eval:                        $z"
    echo "transformers on the sharded export: $h"
    same_loss_lines "$z" "$h"
SCRIPT
    cat "$OUT_DIR/peft.txt"
  fi
fi
