# The speed parts of tools/check_gpu.sh (speed, families, nccl, precision), sourced by it after the
# build: uses its want, step, status, left, ZOO, PY, BUILD, RUNS and OUT_DIR. Not run on its own.
#   speed     GPT-2 124M bf16 training step (batch 16 x 1,024, AdamW, clipping): zoo as zoo
#             train runs it, with the output layer's loss before its fused form (--unfused-loss),
#             with clipping that does not read the norm back, and as one CUDA graph; eager
#             PyTorch (AdamW(fused=True)) and torch.compile; ms/step, tokens/s and MFU in
#             speed_table.md; each side's phases (ZOO_BENCH_PHASES) and GPU kernel time by kind
#             (kernel_table.txt, from Kineto traces of both sides).
#   families  the ViT (ViT-Base/16 at 224), Transformer (base, 64 tokens each side) and BERT
#             (document 000's, 256 wide) steps on cuda in bf16 beside their Python twins.
#   nccl      whether the build has c10d NCCL, a one-process NCCL run (WORLD_SIZE=1) that
#             trains, and two processes on the one GPU.
#   precision train_shakespeare_char for 500 steps in bf16, in fp16 with loss scaling and in bf16
#             with train.cuda_graphs: wall time, examples/s and the training-loss curves against
#             bf16's (needs tinyshakespeare in zoo's data home or ZOO_DATA_DIR).

GPT2=(--layers 12 --heads 12 --embd 768 --block 1024 --vocab 50257 --batch 16)

if want speed && left 120 speed; then
  step "GPT-2 124M bf16 training step on cuda: zoo, eager PyTorch, torch.compile"
  S="$OUT_DIR/speed_runs.txt"
  : >"$S"
  timed=(--device cuda --precision bf16 "${GPT2[@]}" --steps 20 --warmup 5)
  zoo_run() { echo "## $1" >>"$S"; shift; "$BUILD/zoo_bench_gpt" --mode train "${timed[@]}" "$@" >>"$S" 2>&1 || status=1; }
  py_run() { echo "## $1" >>"$S"; shift; "$PY" tools/bench/gpt_bench.py "${timed[@]}" "$@" >>"$S" 2>&1 || status=1; }
  zoo_run "zoo, as zoo train (norm read back)"
  zoo_run "zoo, the loss before its fused form (--unfused-loss)" --unfused-loss
  py_run "eager PyTorch, AdamW(fused=True)"
  py_run "eager PyTorch, vocabulary padded to 50,304 (nanoGPT's choice; another model)" --pad-vocab
  zoo_run "zoo, clipping without read-back" --async-clip
  zoo_run "zoo, CUDA graph (train.cuda_graphs)" --cuda-graph
  zoo_run "zoo, as zoo train, again"
  py_run "eager PyTorch, again"
  py_run "torch.compile" --compile
  "$PY" tools/bench/step_table.py --tokens $((16 * 1024)) "$S" >"$OUT_DIR/speed_table.md" 2>&1 || status=1
  cat "$OUT_DIR/speed_table.md"

  if left 100 loss; then
    step "the language-model loss alone: cross-entropy over bf16 logits, five ways (lm_loss_bench.py)"
    "$PY" tools/bench/lm_loss_bench.py >"$OUT_DIR/lm_loss.txt" 2>&1 || status=1
    cat "$OUT_DIR/lm_loss.txt"
  fi

  if left 90 phases; then
    step "phases (the device synchronised between them)"
    P="$OUT_DIR/speed_phases.txt"
    { ZOO_BENCH_PHASES=1 "$BUILD/zoo_bench_gpt" --mode train "${timed[@]}" &&
      ZOO_BENCH_PHASES=1 "$PY" tools/bench/gpt_bench.py "${timed[@]}"; } >"$P" 2>&1 || status=1
    grep -o '"impl":"[^"]*"\|"impl": "[^"]*"\|"phase_ms": *{[^}]*}' "$P"
  fi

  if left 120 kernels; then
    step "GPU kernel time per step by kind (Kineto traces, 5 steps each)"
    K="$RUNS/kernels" && mkdir -p "$K"
    few=(--device cuda --precision bf16 "${GPT2[@]}" --steps 5 --warmup 3)
    # ZOO_CHECK_TRACES: which of the traces to take (default all five).
    kinds=${ZOO_CHECK_TRACES:-zoo unfused graph eager compiled}
    trace() {  # NAME COMMAND...
      local name=$1; shift
      case " $kinds " in *" $name "*) ZOO_BENCH_KERNELS="$K/$name.json" "$@" >/dev/null 2>"$K/$name.err" || status=1 ;; esac
    }
    rm -f "$K"/*.json
    trace zoo "$BUILD/zoo_bench_gpt" --mode train "${few[@]}"
    trace unfused "$BUILD/zoo_bench_gpt" --mode train "${few[@]}" --unfused-loss
    trace graph "$BUILD/zoo_bench_gpt" --mode train "${few[@]}" --cuda-graph
    trace eager "$PY" tools/bench/gpt_bench.py "${few[@]}"
    trace compiled "$PY" tools/bench/gpt_bench.py "${few[@]}" --compile
    traces=()
    for t in $kinds; do
      if [ -s "$K/$t.json" ]; then traces+=("$t=$K/$t.json"); else echo "no trace for $t: $(tail -2 "$K/$t.err")"; fi
    done
    [ ${#traces[@]} -gt 0 ] && "$PY" tools/bench/kernel_table.py --steps 5 --top 15 "${traces[@]}" \
      >"$OUT_DIR/kernel_table.txt" 2>&1 || status=1
    head -40 "$OUT_DIR/kernel_table.txt"
  fi
fi

if want families && left 60 families; then
  step "ViT, Transformer and BERT steps on cuda beside their Python twins (bf16)"
  F="$OUT_DIR/families.txt"
  : >"$F"
  pair() {  # NAME ARGS...: the C++ and the Python side of tools/bench/NAME_bench, same arguments
    local name=$1; shift
    echo "## $name: $*" >>"$F"
    "$BUILD/zoo_bench_$name" --device cuda --precision bf16 "$@" >>"$F" 2>&1 || status=1
    "$PY" "tools/bench/${name}_bench.py" --device cuda --precision bf16 "$@" >>"$F" 2>&1 || status=1
  }
  pair vit --hidden 768 --layers 12 --heads 12 --mlp 3072 --image 224 --patch 16 --channels 3 --batch 64 \
    --steps 20 --warmup 5
  pair transformer --d-model 512 --layers 6 --heads 8 --ffn 2048 --src-vocab 8000 --tgt-vocab 8000 --batch 64 \
    --src-len 64 --tgt-len 64 --steps 20 --warmup 5
  pair bert_doc000 --dim-inp 256 --dim-out 256 --heads 8 --batch 128 --length 128 --steps 20 --warmup 5
  cat "$F"
fi

if want nccl && left 60 nccl; then
  step "NCCL: the build's c10d backends, one process (WORLD_SIZE=1), two processes on one GPU"
  N="$OUT_DIR/nccl.txt"
  {
    grep "c10d" "$OUT_DIR/build.log" | head -2
    cat >"$RUNS/nccl.json" <<EOF
{"task": "language_modeling", "model": {"preset": "gpt-nano-char"},
 "data": {"files": ["$PWD/README.md"], "tokenizer": "char", "validation_fraction": 0.1, "block_size": 64},
 "train": {"max_steps": 50, "per_device_train_batch_size": 12, "learning_rate": 0.001, "eval_steps": 50,
           "save_steps": 50, "report_to_tensorboard": false, "ddp_backend": "nccl", "ddp_timeout": 60}}
EOF
    rm -rf "$RUNS/nccl1" "$RUNS/nccl2"
    echo "-- WORLD_SIZE=1 RANK=0, train.ddp_backend=nccl"
    WORLD_SIZE=1 RANK=0 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 timeout 120 \
      "$ZOO" train --config "$RUNS/nccl.json" --device cuda --output-dir "$RUNS/nccl1" 2>&1 | grep -E "training|^eval|done|error" || status=1
    echo "-- tools/launch.sh --nproc 2 on cuda:0 (both processes on the one GPU)"
    timeout 120 tools/launch.sh --nproc 2 --master-port 29518 -- "$ZOO" train --config "$RUNS/nccl.json" \
      --device cuda:0 --output-dir "$RUNS/nccl2" 2>&1 | grep -E "training|^eval|done|error|NCCL|nccl" | head -12
  } >"$N" 2>&1
  cat "$N"
fi

if want precision && left 90 precision; then
  step "train_shakespeare_char, 500 steps: bf16, fp16 with loss scaling, bf16 with train.cuda_graphs"
  R="$OUT_DIR/precision.txt"
  : >"$R"
  for variant in bf16 fp16 bf16-graphs; do
    rm -rf "$RUNS/prec-$variant"
    extra=(--set train.precision="${variant%-graphs}")
    [ "$variant" = bf16-graphs ] && extra+=(--set train.cuda_graphs=true)
    t0=$(date +%s.%N)
    "$ZOO" train --config tools/recipes/gpt_shakespeare_char.json --device cuda --output-dir "$RUNS/prec-$variant" \
      --set train.max_steps=500 --set train.eval_steps=500 --set train.save_steps=500 "${extra[@]}" \
      >"$RUNS/prec-$variant.log" 2>&1 || { status=1; tail -3 "$RUNS/prec-$variant.log" >>"$R"; }
    echo "$variant: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}') s wall;" \
      "$(grep '^eval' "$RUNS/prec-$variant.log" | tail -1)" >>"$R"
  done
  "$PY" tools/bench/compare_curves.py --after 250 "$RUNS/prec-bf16" "$RUNS/prec-fp16" "$RUNS/prec-bf16-graphs" \
    >>"$R" 2>&1 || status=1
  cat "$R"
fi
