# The GPT parts of tools/check_gpu.sh (gpt-bench, gpt-recipe, gpt-interop), sourced by it after
# the build: uses its want, step, status, ZOO, PY, BUILD, RUNS and OUT_DIR. Not run on its own.

if want gpt-bench; then
  step "GPT-2 124M training steps on cuda in bf16: zoo, then a nanoGPT-style eager PyTorch model"
  shape=(--layers 12 --heads 12 --embd 768 --block 1024 --vocab 50257 --batch 16 --steps 20 --warmup 5)
  { "$BUILD/zoo_bench_gpt" --mode train --device cuda --precision bf16 "${shape[@]}" &&
    "$PY" tools/bench/gpt_bench.py --device cuda --precision bf16 "${shape[@]}" &&
    echo "-- again, synchronised between the phases (ZOO_BENCH_PHASES: where the time goes)" &&
    ZOO_BENCH_PHASES=1 "$BUILD/zoo_bench_gpt" --mode train --device cuda --precision bf16 "${shape[@]}" &&
    ZOO_BENCH_PHASES=1 "$PY" tools/bench/gpt_bench.py --device cuda --precision bf16 "${shape[@]}"; } \
    >"$OUT_DIR/gpt_bench.txt" 2>&1 || status=1
  ms() { grep "$1" "$OUT_DIR/gpt_bench.txt" | grep -v phase_ms | field median_step_ms; }
  zoo_ms=$(ms '"zoo (C++)"') py_ms=$(ms '"PyTorch (Python)"')
  [ -n "$zoo_ms" ] && [ -n "$py_ms" ] &&
    echo "step time zoo / Python: $(awk -v a="$zoo_ms" -v b="$py_ms" 'BEGIN {printf "%.3f", a / b}')" >>"$OUT_DIR/gpt_bench.txt"
  cat "$OUT_DIR/gpt_bench.txt"
fi

if want gpt-recipe; then
  step "tools/recipes/gpt_shakespeare_char.json on cuda in bf16 (nanoGPT: 1.4697)"
  rm -rf "$RUNS/gpt"
  start=$(date +%s)
  "$ZOO" train --config tools/recipes/gpt_shakespeare_char.json --device cuda --output-dir "$RUNS/gpt" \
    --set train.precision=bf16 >"$OUT_DIR/gpt_train.log" 2>&1 || status=1
  echo "train wall seconds: $(($(date +%s) - start))" | tee -a "$OUT_DIR/gpt_train.log"
  grep "^eval" "$OUT_DIR/gpt_train.log" || tail -5 "$OUT_DIR/gpt_train.log"
  # nanoGPT's figure is its best validation loss: zoo eval of the run's best checkpoint.
  best=$(sed -n 's/^done: .* best (loss=[0-9.]*) \(.*\)$/\1/p' "$OUT_DIR/gpt_train.log")
  echo "best checkpoint: ${best:-none}"
  "$ZOO" eval --checkpoint "${best:-$RUNS/gpt/checkpoint-5000}" --device cuda | tee -a "$OUT_DIR/gpt_train.log" ||
    status=1
fi

if want gpt-interop; then
  step "GPT: zoo export -> transformers; transformers save_pretrained -> zoo generate, init_from, export"
  bash -euo pipefail >"$OUT_DIR/gpt_interop.txt" 2>&1 <<'SCRIPT' || status=1
  G="$RUNS/gpt_interop"
  rm -rf "$G" && mkdir -p "$G"
  # zoo eval (fp32, on the CPU) and transformers on the export of CHECKPOINT of RUN: same loss
  # over the same validation windows.
  same_loss() {
    "$ZOO" export --checkpoint "$1" --out "$1-hf" >/dev/null
    local z h
    z=$("$ZOO" eval --checkpoint "$1" --device cpu --set train.precision=fp32)
    h=$("$PY" tests/py/transformers_check.py gpt2-loss "$1-hf" "$2/tokens.bin" 0.1 2000)
    echo "zoo eval:     $z"
    echo "transformers: $h"
    same_loss_lines "$z" "$h"
  }
  echo "transformers $("$PY" -c 'import transformers; print(transformers.__version__)')"

  echo "-- a GPT trained by zoo on cuda (gpt-nano-char on README.md, 300 steps), loaded by transformers"
  cat >"$G/small.json" <<EOF
{"task": "language_modeling", "model": {"preset": "gpt-nano-char"},
 "data": {"files": ["$PWD/README.md"], "tokenizer": "char", "validation_fraction": 0.1, "block_size": 64},
 "train": {"max_steps": 300, "per_device_train_batch_size": 12, "learning_rate": 0.001, "eval_steps": 300,
           "save_steps": 300, "report_to_tensorboard": false}}
EOF
  "$ZOO" train --config "$G/small.json" --device cuda --output-dir "$G/small" 2>&1 | tail -1
  same_loss "$G/small/checkpoint-300" "$G/small"

  echo "-- a transformers GPT2LMHeadModel (save_pretrained): greedy text in zoo and in transformers"
  "$PY" tests/py/transformers_check.py gpt2-make "$G/hf"
  "$ZOO" generate --checkpoint "$G/hf" --device cuda --prompt " the cat" --max-new-tokens 20 --greedy >"$G/zoo.txt"
  "$PY" tests/py/transformers_check.py gpt2-greedy "$G/hf" 20 " the cat" >"$G/transformers.txt"
  "$PY" tests/py/transformers_check.py same "$G/zoo.txt" "$G/transformers.txt"

  echo "-- fine-tuned by zoo on cuda (train.init_from the transformers directory), exported, loaded by transformers"
  cat >"$G/ft.json" <<EOF
{"task": "language_modeling", "model": {"preset": "$G/hf"},
 "data": {"files": ["$PWD/README.md"], "tokenizer": "$G/hf", "validation_fraction": 0.1},
 "train": {"max_steps": 100, "per_device_train_batch_size": 8, "init_from": "$G/hf", "eval_steps": 100,
           "save_steps": 100, "report_to_tensorboard": false}}
EOF
  "$ZOO" train --config "$G/ft.json" --device cuda --output-dir "$G/ft" 2>&1 | grep -E "loaded|^eval"
  same_loss "$G/ft/checkpoint-100" "$G/ft"
SCRIPT
  cat "$OUT_DIR/gpt_interop.txt"
fi
