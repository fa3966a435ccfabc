#!/usr/bin/env bash
# Checks that need a CUDA machine or the Python ecosystem (transformers, TensorBoard), none of
# which the Debian development VM has. Builds zoo against the PyTorch of `python3` (pip's
# torch: LibTorch 2.x with CUDA), then runs the parts asked for, each logged under OUT_DIR:
#   build.log        configure + build (-Wall -Wextra) against that LibTorch (always)
#   devices.txt      zoo devices (always)
#   tests:      ctest.log  the whole test suite (CPU tests plus the CUDA-only ones)
#   vit:        train_*.log  Fashion-MNIST ViT on cuda, fp32 and train.precision=bf16, then zoo eval
#               tensorboard.txt  the fp32 run's event file read by TensorBoard's own EventAccumulator
#               interop.txt  zoo export -> transformers.from_pretrained, and transformers
#                            save_pretrained -> zoo classify: same labels and probabilities per image
#   gpt-bench:  gpt_bench.txt  GPT-2 124M training steps on cuda in bf16: tokens/s and MFU
#               (against the measured bf16 matmul peak), beside the same step of a nanoGPT-style
#               eager PyTorch model (tools/bench/gpt_bench.py)
#   gpt-recipe: gpt_train.log  tools/recipes/gpt_shakespeare_char.json on cuda in bf16, then zoo
#               eval of the best checkpoint (nanoGPT: best 1.4697); needs tiny Shakespeare in zoo's data home
#               (tools/fetch_data.sh tinyshakespeare, or ZOO_DATA_DIR)
#   gpt-interop: gpt_interop.txt  a GPT trained by zoo on cuda, exported, loaded by transformers:
#               the same validation loss as zoo eval; a transformers GPT2LMHeadModel
#               (save_pretrained) generates the same greedy text in zoo, and zoo fine-tunes it
#               (train.init_from) into an export transformers loads, again with zoo eval's loss
#   bert-recipe: bert_imdb.log  tools/finetune_bert_imdb.sh --gpu (issue 39's GPU recipe: pretraining
#               on the IMDB reviews, fine-tuning, the test accuracy; goal 91.3%); needs IMDB in zoo's
#               data home (tools/fetch_data.sh imdb, or ZOO_DATA_DIR); under --budget it stops in
#               time with a checkpoint, and the next call continues it
#   finetune: tools/check_gpu_finetune.sh (GPT-2 124M in bf16, fp16, with gradient checkpointing
#               and LoRA: step time and CUDA memory; bf16 against fp16 loss curves; PEFT loading
#               zoo's adapter and transformers its sharded export)
#   speed, families, nccl, precision: tools/check_gpu_speed.sh (GPT-2 124M against eager
#               PyTorch and torch.compile with phases and kernel tables, CUDA graphs; the other
#               families' steps beside their Python twins; NCCL with one and two processes;
#               train_shakespeare_char in bf16, fp16 and with train.cuda_graphs)
#
#   tools/check_gpu.sh [--parts LIST] [--deps PREFIX | --debs DIR] [--data DIR] [--out OUT_DIR]
#                      [--steps N] [--skip-tests] [--targets LIST] [--tests-regex RE] [--budget S]
#
# --parts: a comma-separated subset of tests,vit,gpt-bench,gpt-recipe,gpt-interop,speed,
# families,nccl,precision,finetune,bert-recipe (default: all; `build` alone: only the build), so that a machine lent for
# minutes at a time runs them one call each: the build (build-gpu/) and the runs
# (build-gpu/check-runs/) are kept between calls.
# --targets: build only these CMake targets (space-separated; default: all and benches), the tests part
# then runs the tests of those built (--tests-regex RE: only those ctest -R RE selects).
# --budget S: the seconds this call may take; a part that would not fit in what is left is
# skipped, and says so. When the build fails it is tried once more without the CUDA-graph code
# (-DZOO_CUDA_GRAPHS=OFF), and build.log says so.
# --deps PREFIX: a prefix with the build dependencies unpacked (for a machine without apt:
# `dpkg -x` of Debian's libsentencepiece-dev, libsentencepiece0, libprotobuf-lite32,
# nlohmann-json3-dev, libcli11-dev, libgtest-dev, libstb-dev, libicu-dev, libicu72,
# zlib1g-dev). --debs DIR: those packages' .deb files (`apt-get download` them into DIR on a
# Debian 12 machine and bring DIR along), unpacked here into a temporary --deps prefix.
# After a --deps/--debs build, `source build-gpu/env.sh` before running its programs by hand.
# --data: the Fashion-MNIST IDX folder (default: Debian's). --steps: the ViT runs' steps.
# --skip-tests: leave out the tests part.
set -uo pipefail
cd "$(dirname "$0")/.."

DEPS="" DEBS="" DATA=/usr/share/datasets/fashion-mnist OUT_DIR=gpu-check STEPS=600
PARTS=tests,vit,gpt-bench,gpt-recipe,gpt-interop,speed,families,nccl,precision,finetune,bert-recipe TARGETS="" TESTS_RE="" BUDGET=0
START=$(date +%s)
while [ $# -gt 0 ]; do
  case "$1" in
    --parts) PARTS=$2; shift 2 ;;
    --deps) DEPS=$(realpath "$2"); shift 2 ;;
    --debs) DEBS=$(realpath "$2"); shift 2 ;;
    --data) DATA=$(realpath "$2"); shift 2 ;;
    --out) OUT_DIR=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    --targets) TARGETS=$2; shift 2 ;;
    --tests-regex) TESTS_RE=$2; shift 2 ;;
    --budget) BUDGET=$2; shift 2 ;;
    --skip-tests) PARTS=$(echo ",$PARTS," | sed 's/,tests,/,/; s/^,//; s/,$//'); shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "check_gpu.sh: unknown option '$1' (try --help)" >&2; exit 2 ;;
  esac
done
for part in ${PARTS//,/ }; do
  case "$part" in
    build|tests|vit|gpt-bench|gpt-recipe|gpt-interop|speed|families|nccl|precision|finetune|bert-recipe) ;;
    *) echo "check_gpu.sh: unknown part '$part' in --parts (build, tests, vit, gpt-bench, gpt-recipe, gpt-interop, speed, families, nccl, precision, finetune, bert-recipe)" >&2
       exit 2 ;;
  esac
done
want() { case ",$PARTS," in *",$1,"*) return 0 ;; esac; return 1; }
# left SECONDS NAME: whether SECONDS are left of --budget (always, without one); else says so.
left() {
  [ "$BUDGET" -le 0 ] && return 0
  local rest=$((BUDGET - ($(date +%s) - START)))
  [ "$rest" -ge "$1" ] && return 0
  echo "== skipped $2: $rest s left of --budget $BUDGET, it needs about $1"
  return 1
}
mkdir -p "$OUT_DIR"
OUT_DIR=$(realpath "$OUT_DIR")
PY=$(command -v python3)
TORCH_PREFIX=$("$PY" -c 'import torch;print(torch.utils.cmake_prefix_path)') || {
  echo "check_gpu.sh: python3 has no torch" >&2; exit 1; }
PREFIX_PATH="$TORCH_PREFIX"
if [ -n "$DEBS" ]; then
  ls "$DEBS"/*.deb >/dev/null 2>&1 || { echo "check_gpu.sh: no .deb files in $DEBS" >&2; exit 2; }
  DEPS=$(mktemp -d /tmp/zoo-deps-XXXXXX)
  for deb in "$DEBS"/*.deb; do dpkg -x "$deb" "$DEPS" || { echo "check_gpu.sh: cannot unpack $deb" >&2; exit 2; }; done
fi
if [ -n "$DEPS" ]; then
  PREFIX_PATH="$TORCH_PREFIX;$DEPS/usr"
  # Debian's .pc files say prefix=/usr; point them at the unpacked copy.
  for pc in "$DEPS"/usr/lib/x86_64-linux-gnu/pkgconfig/*.pc "$DEPS"/usr/share/pkgconfig/*.pc; do
    [ -f "$pc" ] && sed -i "s|^prefix=/usr\$|prefix=$DEPS/usr|" "$pc"
  done
  export LD_LIBRARY_PATH="$DEPS/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
fi
BUILD=build-gpu
mkdir -p "$BUILD"
# For commands after this one (the programs need the unpacked libraries): source build-gpu/env.sh.
echo "export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-}" >"$BUILD/env.sh"
status=0
step() { echo "== $*"; }
# same_loss_lines ZOO_EVAL_LINE TRANSFORMERS_LINE: prints |difference| of their "loss" values;
# fails when one is missing or they differ by more than 1e-4. Exported for the bash -c parts.
same_loss_lines() {
  awk -v a="$(echo "$1" | field loss)" -v b="$(echo "$2" | field loss)" \
      'BEGIN {d = a - b; if (d < 0) d = -d; printf "|loss difference| %.2g\n", d; exit !(a != "" && b != "" && d <= 1e-4)}'
}
source tools/json.sh
export -f field same_loss_lines

step "build against $TORCH_PREFIX"
build() {  # extra cmake arguments
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$PREFIX_PATH" -DZOO_PYTHON="$PY" "$@" &&
    cmake --build "$BUILD" --target ${TARGETS:-all benches} -- -k 0
}
off=()
if ! build -DZOO_CUDA_GRAPHS=ON -DZOO_NCCL=ON >"$OUT_DIR/build.log" 2>&1; then
  # Once more without the code that failed: the NCCL backend (train/distributed.cc), the CUDA
  # graphs (train/cuda_graph.cc, train/optimizers.cc), or both when the errors name neither.
  off=()
  grep -q "^FAILED: .*distributed.cc" "$OUT_DIR/build.log" && off+=(-DZOO_NCCL=OFF)
  grep -qE "^FAILED: .*(cuda_graph|optimizers|graphed_step|memory).cc" "$OUT_DIR/build.log" && off+=(-DZOO_CUDA_GRAPHS=OFF)
  if [ ${#off[@]} -eq 0 ] && [ -x "$BUILD/zoo" ] && ! grep -q "^FAILED: .*zoo_core" "$OUT_DIR/build.log"; then
    echo "build: only benchmarks or tests failed (build.log); going on without them"
    grep -E "^FAILED" "$OUT_DIR/build.log"
    grep -E -A3 "error:" "$OUT_DIR/build.log" | head -30
    off=(skip)
  fi
  [ ${#off[@]} -eq 0 ] && off=(-DZOO_NCCL=OFF -DZOO_CUDA_GRAPHS=OFF)
fi
if [ "${off[*]:-}" = skip ]; then
  status=1
elif [ ${#off[@]} -gt 0 ]; then
  echo "build failed; trying again with ${off[*]} (the errors: build.log)"
  grep -E -A3 "error:" "$OUT_DIR/build.log" | head -40
  echo "== again with ${off[*]}" >>"$OUT_DIR/build.log"
  status=1
  build -DZOO_CUDA_GRAPHS=ON -DZOO_NCCL=ON "${off[@]}" >>"$OUT_DIR/build.log" 2>&1 || {
    echo "build failed: $OUT_DIR/build.log"; tail -40 "$OUT_DIR/build.log"; exit 1; }
fi
echo "build: $(($(date +%s) - START)) s; compiler warnings from zoo's code: $(grep -c 'warning:' "$OUT_DIR/build.log")"
ZOO="$BUILD/zoo"
"$ZOO" devices | tee "$OUT_DIR/devices.txt"


RUNS=$BUILD/check-runs
mkdir -p "$RUNS"
RUNS=$(realpath "$RUNS")
export ZOO PY RUNS DATA STEPS BUILD

if want vit; then
rm -rf "$RUNS/fp32" "$RUNS/bf16" "$RUNS/images" "$RUNS/export" "$RUNS/hf" "$RUNS/hfimg"
for precision in fp32 bf16; do
  step "train ViT on cuda, precision $precision, $STEPS steps"
  start=$(date +%s)
  "$ZOO" train --config tools/recipes/vit_fashion_mnist.json --device cuda --output-dir "$RUNS/$precision" \
    --set data.path="$DATA" --set train.max_time=0 --set train.max_steps="$STEPS" --set train.eval_steps="$STEPS" \
    --set train.save_steps="$STEPS" --set train.precision=$precision >"$OUT_DIR/train_$precision.log" 2>&1 || status=1
  echo "train wall seconds: $(( $(date +%s) - start ))"
  tail -3 "$OUT_DIR/train_$precision.log"
  "$ZOO" eval --checkpoint "$RUNS/$precision/checkpoint-$STEPS" --split test --device cuda \
    | tee -a "$OUT_DIR/train_$precision.log" || status=1
done

step "TensorBoard's reader on the fp32 run"
"$PY" - "$RUNS/fp32" >"$OUT_DIR/tensorboard.txt" 2>&1 <<'EOF' || status=1
import sys
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
acc = EventAccumulator(sys.argv[1]); acc.Reload()
tags = acc.Tags()["scalars"]
assert tags, "no scalars"
for t in tags:
    s = acc.Scalars(t)
    print(f"{t}: {len(s)} points, first step {s[0].step} value {s[0].value:.5g}, last step {s[-1].step} value {s[-1].value:.5g}")
EOF
cat "$OUT_DIR/tensorboard.txt"

step "zoo export -> transformers, transformers -> zoo classify"
bash -euo pipefail >"$OUT_DIR/interop.txt" 2>&1 <<'SCRIPT' || status=1
  I="$RUNS/images"; mkdir -p "$I"
  "$PY" - "$DATA" "$I" <<'EOF'
import gzip, sys, numpy as np
from PIL import Image
raw = gzip.open(sys.argv[1] + "/t10k-images-idx3-ubyte.gz").read()
imgs = np.frombuffer(raw, np.uint8, offset=16).reshape(-1, 28, 28)
for i in range(16):
    Image.fromarray(imgs[i * 37]).save(f"{sys.argv[2]}/test{i}.png")
EOF
  "$ZOO" export --checkpoint "$RUNS/fp32/checkpoint-$STEPS" --out "$RUNS/export"
  "$ZOO" classify --device cpu --checkpoint "$RUNS/fp32/checkpoint-$STEPS" "$I"/test*.png >"$RUNS/zoo.tsv"
  "$PY" tests/py/transformers_check.py classify "$RUNS/export" "$I"/test*.png >"$RUNS/hf.tsv"
  echo "zoo export loaded by transformers $("$PY" -c 'import transformers;print(transformers.__version__)'):"
  "$PY" tests/py/transformers_check.py compare "$RUNS/zoo.tsv" "$RUNS/hf.tsv"
  paste "$RUNS/zoo.tsv" "$RUNS/hf.tsv" | head -4
  "$PY" tests/py/transformers_check.py make "$RUNS/hf" "$RUNS/hfimg"
  "$ZOO" classify --device cuda --checkpoint "$RUNS/hf" "$RUNS/hfimg"/*.png >"$RUNS/zoo2.tsv"
  "$PY" tests/py/transformers_check.py classify "$RUNS/hf" "$RUNS/hfimg"/*.png >"$RUNS/hf2.tsv"
  echo "transformers save_pretrained loaded by zoo (classify on cuda):"
  "$PY" tests/py/transformers_check.py compare "$RUNS/zoo2.tsv" "$RUNS/hf2.tsv"
SCRIPT
cat "$OUT_DIR/interop.txt"
fi

source tools/check_gpu_gpt.sh
source tools/check_gpu_finetune.sh
source tools/check_gpu_speed.sh

# Under --budget the recipe runs until 20 s before the budget's end, then zoo saves a checkpoint
# (SIGTERM); the next call with the same --out continues where it stopped (train_once).
if want bert-recipe && left 120 bert-recipe; then
  step "tools/finetune_bert_imdb.sh --gpu (issue 39: goal 91.3% IMDB test accuracy)"
  start=$(date +%s)
  limit=()
  [ "$BUDGET" -gt 0 ] && limit=(timeout -k 30 -s TERM $((BUDGET - (start - START) - 20)))
  ZOO="$ZOO" "${limit[@]}" tools/finetune_bert_imdb.sh --gpu --out "$RUNS/bert_imdb" >>"$OUT_DIR/bert_imdb.log" 2>&1
  code=$?
  echo "wall seconds: $(($(date +%s) - start)), exit status $code" | tee -a "$OUT_DIR/bert_imdb.log"
  if [ "$code" = 124 ] || [ "$code" = 143 ]; then
    echo "== bert-recipe stopped at the budget's end: call again with the same --out to continue" |
      tee -a "$OUT_DIR/bert_imdb.log"
  elif [ "$code" != 0 ]; then
    status=1
  fi
  grep -E "^== |^step .*00/|^eval|IMDB test accuracy" "$OUT_DIR/bert_imdb.log" | tail -25
fi

# The tests last: the timings above run on an otherwise idle machine.
if want tests && left 30 tests; then
  step "ctest"
  limit=$([ "$BUDGET" -gt 0 ] && echo $((BUDGET - ($(date +%s) - START) - 5)) || echo 3600)
  (cd "$BUILD" && timeout "$limit" ctest -j "$(nproc)" --output-on-failure --timeout 600 ${TESTS_RE:+-R "$TESTS_RE"}) \
    >"$OUT_DIR/ctest.log" 2>&1 || status=1
  grep -E "tests passed|tests failed|\(Failed\)|\(Timeout\)|Not Run|\*\*\*Skipped" "$OUT_DIR/ctest.log"
fi

echo "check_gpu.sh: $([ $status = 0 ] && echo all checks passed || echo SOME CHECKS FAILED) (logs in $OUT_DIR)"
exit $status
