#!/usr/bin/env bash
# CPU inference, side by side in one run (issue 64, item 2): zoo fp32 and int8 (--quantize int8)
# against plain PyTorch in Python (tests/py's reference modules, fp32 and quantize_dynamic int8,
# each at the fastest of its thread settings) and ONNX Runtime fp32 (onnxruntime-node, the
# forward rows, on the ONNX file torch.onnx.export writes from the same reference), at 1 and 2
# threads, in interleaved rounds (medians), every side's outputs checked against zoo fp32's.
#
#   tools/bench/infer_bench.sh [--rounds N] [--quick] [--threads "1 2"] [--only MODELS]
#       [--gpt-cpu DIR] [--mt DIR [--mt-src FILE]] [--out DIR] [--no-ort] [--build DIR]
#
# Models (random weights of the shape, N(0, 0.02), unless a checkpoint is given):
#   gpt2      GPT-2 124M's shape (12 x 768, vocab 50257): prefill 8 x 256 tokens, generation of
#             128 tokens (64-token prompts) at batch 1 and 16
#   gptcpu    the GPT CPU recipe's model (gpt_shakespeare_char_cpu.json, gpt-nano-char; --gpt-cpu
#             DIR: a trained checkpoint): prefill 8 x 64 (its context), generation of 128 tokens
#             after 16 at batch 1 and 16 (the context refills, as zoo generate does it)
#   bertbase  BERT-base's shape: classification of 32 texts x 256 tokens
#   bertimdb  the IMDB recipe's model (bert-small-imdb): the same
#   mt        the Transformer recipe's model (transformer-small; --mt DIR a trained checkpoint,
#             --mt-src its test sources, one a line): the encoder over every batch, and
#             translation with beam 4, batches of 32 (sorted by length), max length 50
# --only: a comma list of those. --quick: gptcpu, bertimdb and mt, one round, 2 threads.
# Time: the full run (3 rounds, 1 and 2 threads) took 66 minutes on the 2-core EPYC VM (most of it
# gpt2's generation at batch 16 and bertbase); --quick roughly 10 minutes, most of it Python's beam
# search at its four settings (random translation
# weights never end a sentence: every beam runs the 50 steps). Round 1 runs every Python thread setting
# (a run slower than 3x the best so far, or zoo's, + 10 s is stopped) and the later rounds the fastest.
# Python's settings: common.sh's three and set_num_threads(N) with OMP_WAIT_POLICY=PASSIVE (zoo's).
# Then a roofline: each row's fp32 matrix-product work (LibTorch's profiler, infer_bench.py flops)
# against the machine's fp32 matrix-product peak, and the lowest zoo/PyTorch ratio it allows.
# Checks: fp32 logits within 1e-4 (max abs diff) of zoo fp32's, greedy and beam tokens identical;
# int8 is reported as agreement with its own fp32 side, not required equal. Results, outputs and
# the ONNX files are kept in --out (default: a temporary directory).
set -euo pipefail
NAME=infer_bench.sh ROUNDS=3 BIN=zoo_bench_infer
QUICK=0 OUT="" GPT_CPU="" MT="" MT_SRC="" THREAD_LIST="1 2" ONLY="" ORT=1
rest=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) QUICK=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    --gpt-cpu) GPT_CPU=$2; shift 2 ;;
    --mt) MT=$2; shift 2 ;;
    --mt-src) MT_SRC=$2; shift 2 ;;
    --threads) THREAD_LIST=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --no-ort) ORT=0; shift ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) rest+=("$1"); shift ;;
  esac
done
if [ "$QUICK" = 1 ]; then
  ROUNDS=1 THREAD_LIST=2
  [ -z "$ONLY" ] && ONLY=gptcpu,bertimdb,mt
fi
set -- "${rest[@]+"${rest[@]}"}"
source "$(dirname "$0")/common.sh"
[ -z "$ONLY" ] && ONLY=gpt2,gptcpu,bertbase,bertimdb,mt
S=tools/bench/infer_bench.py
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/zoo-infer-bench.XXXXXX)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
echo "$NAME: outputs in $OUT; rounds $ROUNDS, threads $THREAD_LIST, models $ONLY"

NPM_DIR=${ZOO_NPM_CACHE:-$HOME/.cache/zoo/npm}
if [ "$ORT" = 1 ]; then
  command -v node >/dev/null || { echo "$NAME: node is missing (apt-get install nodejs), or run with --no-ort" >&2; exit 1; }
  if [ ! -d "$NPM_DIR/node_modules/onnxruntime-node" ]; then
    command -v npm >/dev/null || { echo "$NAME: npm is missing (apt-get install npm), or run with --no-ort" >&2; exit 1; }
    echo "$NAME: installing onnxruntime-node into $NPM_DIR (its install script is skipped: it only fetches GPU files)"
    mkdir -p "$NPM_DIR"
    npm install --ignore-scripts --no-audit --no-fund --prefix "$NPM_DIR" onnxruntime-node >"$OUT/npm.log" 2>&1 ||
      { echo "$NAME: npm install onnxruntime-node failed (see $OUT/npm.log), or run with --no-ort" >&2; exit 1; }
  fi
  echo "$NAME: $(node tools/bench/infer_ort.mjs --check)" || { echo "$NAME: see above; or run with --no-ort" >&2; exit 1; }
fi

# ---- models and inputs -------------------------------------------------------------------------
declare -A DIR  # model key -> checkpoint directory
model_dir() {  # key kind preset given
  if [ -n "$4" ]; then DIR[$1]=$4; echo "$1: checkpoint $4"; return; fi
  DIR[$1]=$OUT/models/$1
  [ -f "${DIR[$1]}/model.safetensors" ] || "$PY" $S make "$2" "${DIR[$1]}" --preset "$3"
  echo "$1: random weights of $3's shape (N(0, 0.02))"
}
ROWS=()  # "id model row inputs check(logits|tokens) ort(0|1) warmup repeat int8_target(0|1)"
has() { [[ ",$ONLY," == *",$1,"* ]]; }
mkdir -p "$OUT/in" "$OUT/o" "$OUT/t"
gpt_rows() {  # key: prefill, generation at batch 1 and 16 (warm-up and repeats by the row's cost)
  local k=$1 heavy=$2
  "$PY" $S inputs gpt-prefill "${DIR[$k]}" "$OUT/in/$k-prefill.st"
  "$PY" $S inputs gpt-gen "${DIR[$k]}" "$OUT/in/$k-gen1.st" --batch 1
  "$PY" $S inputs gpt-gen "${DIR[$k]}" "$OUT/in/$k-gen16.st" --batch 16
  if [ "$heavy" = 1 ]; then
    ROWS+=("$k-prefill $k gpt-prefill $k-prefill logits 1 1 1 0" "$k-gen1 $k gpt-gen $k-gen1 tokens 0 1 1 1"
           "$k-gen16 $k gpt-gen $k-gen16 tokens 0 0 1 1")
  else
    ROWS+=("$k-prefill $k gpt-prefill $k-prefill logits 1 2 5 0" "$k-gen1 $k gpt-gen $k-gen1 tokens 0 1 3 1"
           "$k-gen16 $k gpt-gen $k-gen16 tokens 0 1 3 1")
  fi
}
if has gpt2; then model_dir gpt2 gpt gpt2-124m ""; gpt_rows gpt2 1; fi
if has gptcpu; then model_dir gptcpu gpt gpt-nano-char "$GPT_CPU"; gpt_rows gptcpu 0; fi
if has bertbase; then
  model_dir bertbase bert bert-base ""
  "$PY" $S inputs bert "${DIR[bertbase]}" "$OUT/in/bertbase.st"
  ROWS+=("bertbase bertbase bert bertbase logits 1 0 1 0")
fi
if has bertimdb; then
  model_dir bertimdb bert bert-small-imdb ""
  "$PY" $S inputs bert "${DIR[bertimdb]}" "$OUT/in/bertimdb.st"
  ROWS+=("bertimdb bertimdb bert bertimdb logits 1 1 3 0")
fi
if has mt; then
  model_dir mt transformer transformer-small "$MT"
  src=()
  if [ -n "$MT_SRC" ]; then
    [ -n "$MT" ] || { echo "$NAME: --mt-src needs --mt (the checkpoint whose text side encodes them)" >&2; exit 2; }
    "$BUILD/$BIN" --row mt-sources --model "$MT" --inputs "$MT_SRC" --out "$OUT/in/mt-src.txt"
    src=(--src-ids "$OUT/in/mt-src.txt")
    echo "mt: sources of $MT_SRC ($(wc -l <"$OUT/in/mt-src.txt") sentences)"
  else
    echo "mt: 256 random sources of 5-30 tokens"
  fi
  "$PY" $S inputs mt-translate "${DIR[mt]}" "$OUT/in/mt.st" "${src[@]+"${src[@]}"}"
  ROWS+=("mt-encoder mt mt-encoder mt logits 1 1 3 0" "mt-translate mt mt-translate mt tokens 0 0 1 1")
fi
if [ "$ORT" = 1 ]; then
  for r in "${ROWS[@]}"; do
    read -r id key row in check ort _ <<<"$r"
    [ "$ort" = 1 ] && [ ! -f "$OUT/in/$id.onnx" ] &&
      "$PY" $S export "$row" "${DIR[$key]}" "$OUT/in/$in.st" "$OUT/in/$id.onnx" >"$OUT/export-$id.log" 2>&1
  done
fi

# ---- interleaved rounds ------------------------------------------------------------------------
# Python settings at T threads (common.sh): set_num_threads(T), the same with OPENBLAS_NUM_THREADS=1,
# and at the machine's core count torch's defaults (no set_num_threads call).
settings_for() {
  local t=$1
  if [ "$t" = "$(nproc)" ]; then echo "3 0 2 1"; else echo "3 2 1"; fi
}
# run_python's settings as an environment and a flag, for `timeout`.
# A fourth: set_num_threads(T) with OMP_WAIT_POLICY=PASSIVE, the setting zoo starts with (its
# OpenMP threads sleep between parallel regions instead of spinning: on a busy machine spinning
# threads can take the cores from OpenBLAS's and from each other).
PY_ENV=("ZOO_BENCH=1" "ZOO_BENCH=1" "OPENBLAS_NUM_THREADS=1" "OMP_WAIT_POLICY=PASSIVE")
PY_FLAG=("--default-threads" "" "" "")
sname() {  # setting thread-count: its name
  local n=("defaults" "set_num_threads($2)" "set_num_threads($2), OPENBLAS_NUM_THREADS=1" "set_num_threads($2), OMP_WAIT_POLICY=PASSIVE")
  echo "${n[$1]}"
}
secs() { awk -v ms="$1" 'BEGIN {printf "%d", ms / 1000 + 1}'; }
record() { echo "$2" >>"$OUT/t/$1"; }  # file value
ms_of() { field median_ms; }

declare -A BEST  # "id t int8" -> the Python setting index kept after round 1
for round in $(seq "$ROUNDS"); do
  for t in $THREAD_LIST; do
    for r in "${ROWS[@]}"; do
      read -r id key row in check ort warm rep _ <<<"$r"
      common=(--warmup "$warm" --repeat "$rep")
      save() { [ "$round" = 1 ] && echo "--out $OUT/o/$1.$t.st"; true; }
      line="round $round, $t thread(s), $id:"
      z=$("$BUILD/$BIN" --row "$row" --model "${DIR[$key]}" --inputs "$OUT/in/$in.st" --threads "$t" "${common[@]}" $(save zoo) | ms_of)
      record "$id.$t.zoo" "$z"; line+=" zoo $(num "$z")"
      z8=$("$BUILD/$BIN" --row "$row" --model "${DIR[$key]}" --inputs "$OUT/in/$in.st" --threads "$t" --int8 "${common[@]}" $(save zoo8) | ms_of)
      record "$id.$t.zoo8" "$z8"; line+=", int8 $(num "$z8")"
      for q in "" --int8; do
        tag=py${q:+8}
        if [ "$round" = 1 ]; then
          best="" bs=""
          for s in $(settings_for "$t"); do
            lim=$(secs "$(awk -v a="${bs:-$z}" -v z="$z" 'BEGIN {print 3 * (a > z ? a : z) + 10000}')")
            p=$(timeout "$lim" env "${PY_ENV[s]}" "$PY" $S run "$row" "${DIR[$key]}" "$OUT/in/$in.st" --threads "$t" $q \
                  "${common[@]}" ${PY_FLAG[s]} --out "$OUT/o/$tag.$t.s$s.st" | ms_of || true)
            if [ -z "$p" ]; then line+=", $tag[$(sname "$s" "$t")] >${lim}s (stopped)"; continue; fi
            record "$id.$t.$tag.s$s" "$p"; line+=", $tag[$(sname "$s" "$t")] $(num "$p")"
            if [ -z "$bs" ] || awk -v a="$p" -v b="$bs" 'BEGIN {exit !(a < b)}'; then best=$s bs=$p; fi
          done
          BEST["$id $t $tag"]=$best  # empty when every setting was stopped: no PyTorch figure
          [ -n "$best" ] && cp "$OUT/o/$tag.$t.s$best.st" "$OUT/o/$id.$tag.$t.st"
        else
          s=${BEST["$id $t $tag"]}
          [ -n "$s" ] || continue
          p=$(env "${PY_ENV[s]}" "$PY" $S run "$row" "${DIR[$key]}" "$OUT/in/$in.st" --threads "$t" $q "${common[@]}" \
                ${PY_FLAG[s]} | ms_of)
          record "$id.$t.$tag.s$s" "$p"; line+=", $tag[$(sname "$s" "$t")] $(num "$p")"
        fi
      done
      if [ "$ORT" = 1 ] && [ "$ort" = 1 ]; then
        o=$(node tools/bench/infer_ort.mjs --row "$row" --onnx "$OUT/in/$id.onnx" --inputs "$OUT/in/$in.st" --threads "$t" \
              "${common[@]}" $(save ort) | ms_of)
        record "$id.$t.ort" "$o"; line+=", ort $(num "$o")"
      fi
      for side in zoo zoo8 ort; do [ -f "$OUT/o/$side.$t.st" ] && mv "$OUT/o/$side.$t.st" "$OUT/o/$id.$side.$t.st"; done
      echo "$line ms"
    done
  done
done

# ---- checks, table -----------------------------------------------------------------------------
med() { [ -f "$OUT/t/$1" ] && median $(cat "$OUT/t/$1") || echo ""; }
cmp() { if [ -f "$2" ] && [ -f "$3" ]; then "$PY" $S compare "$1" "$2" "$3"; else echo "-"; fi; }
ok_all=1
{
  echo "| row | threads | zoo fp32 ms | zoo int8 ms | PyTorch fp32 ms | PyTorch int8 ms | ORT fp32 ms | zoo/PyTorch (<= 0.5) | zoo/ORT (<= 1.0) | int8 speed-up (>= 1.8) |"
  echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$OUT/table.md"
echo "| row | threads | PyTorch fp32 vs zoo fp32 | ORT vs zoo fp32 | zoo int8 vs zoo fp32 | PyTorch int8 vs PyTorch fp32 |" >"$OUT/checks.md"
echo "|---|---:|---|---|---|---|" >>"$OUT/checks.md"
for t in $THREAD_LIST; do
  for r in "${ROWS[@]}"; do
    read -r id key row in check ort warm rep int8_target <<<"$r"
    z=$(med "$id.$t.zoo") z8=$(med "$id.$t.zoo8")
    p=$(med "$id.$t.py.s${BEST["$id $t py"]}") p8=$(med "$id.$t.py8.s${BEST["$id $t py8"]}")
    o=""; [ "$ORT" = 1 ] && [ "$ort" = 1 ] && o=$(med "$id.$t.ort")
    ratio() { [ -n "$2" ] && awk -v a="$1" -v b="$2" -v lim="$3" 'BEGIN {printf "%.2f %s", a / b, (a / b <= lim ? "met" : "**missed**")}' || echo "-"; }
    up=$(awk -v a="$z" -v b="$z8" -v want="$int8_target" 'BEGIN {s = a / b; printf "%.2fx%s", s, want ? (s >= 1.8 ? " met" : " **missed**") : ""}')
    rp=$(ratio "$z" "$p" 0.5) ro=$(ratio "$z" "$o" 1.0)
    pn="- (every setting stopped)"; [ -n "$p" ] && pn="$(num "$p") ($(sname "${BEST["$id $t py"]}" "$t"))"
    echo "| $id | $t | $(num "$z") | $(num "$z8") | $pn | $([ -n "$p8" ] && num "$p8" || echo -) | $([ -n "$o" ] && num "$o" || echo -) | $rp | $ro | $up |" >>"$OUT/table.md"
    c_py=$(cmp "$check" "$OUT/o/$id.zoo.$t.st" "$OUT/o/$id.py.$t.st")
    c_ort="-"; [ "$ORT" = 1 ] && [ "$ort" = 1 ] && c_ort=$(cmp logits "$OUT/o/$id.zoo.$t.st" "$OUT/o/$id.ort.$t.st")
    c_z8=$(cmp "$check" "$OUT/o/$id.zoo.$t.st" "$OUT/o/$id.zoo8.$t.st")
    c_p8=$(cmp "$check" "$OUT/o/$id.py.$t.st" "$OUT/o/$id.py8.$t.st")
    verdict() {  # JSON of compare -> short text, and whether an fp32 check failed
      local j=$1 strict=$2
      if [ "$j" = "-" ]; then echo "-"; return; fi
      if [ "$check" = logits ] || [ "$strict" = ort ]; then
        local d; d=$(echo "$j" | field max_abs_diff)
        local a; a=$(echo "$j" | field argmax_agreement)
        if [ "$strict" != 0 ]; then
          awk -v d="$d" 'BEGIN {exit !(d <= 1e-4)}' && echo "max diff $d: same" || { echo "max diff $d: **differs**"; return 1; }
        else
          echo "max diff $d, argmax agreement $(awk -v a="$a" 'BEGIN {printf "%.1f%%", 100 * a}')"
        fi
      else
        local tk; tk=$(echo "$j" | field token_agreement)
        local rw; rw=$(echo "$j" | field rows_identical)
        if [ "$strict" != 0 ]; then
          [ "$(echo "$j" | flag identical)" = true ] && echo "tokens identical" ||
            { echo "**tokens differ** ($(awk -v a="$tk" 'BEGIN {printf "%.1f%%", 100 * a}') agree)"; return 1; }
        else
          echo "$(awk -v a="$tk" -v r="$rw" 'BEGIN {printf "%.1f%% of tokens, %.0f%% of rows identical", 100 * a, 100 * r}')"
        fi
      fi
    }
    v_py=$(verdict "$c_py" 1) || ok_all=0
    v_ort=$(verdict "$c_ort" ort) || ok_all=0
    echo "| $id | $t | $v_py | $v_ort | $(verdict "$c_z8" 0) | $(verdict "$c_p8" 0) |" >>"$OUT/checks.md"
  done
done
echo
echo "## Times (medians of $ROUNDS interleaved rounds; PyTorch at its fastest setting, named)"
cat "$OUT/table.md"
echo
echo "## Outputs (fp32 sides against zoo fp32: logits within 1e-4, tokens identical; int8: agreement)"
cat "$OUT/checks.md"
[ "$ok_all" = 1 ] && echo "all fp32 outputs agree" || echo "$NAME: some fp32 outputs differ (see above)"

# ---- roofline: how far the fastest possible implementation could go ------------------------------
# No side can run a row's matrix products faster than the machine's fp32 matrix-product peak, so
# zoo/PyTorch can go no lower than (PyTorch's GFLOP/s on those products) / peak. Where that is
# above 0.5, the 0.5 target is out of reach of any fp32 implementation on this machine.
echo
echo "## Roofline (fp32 matrix-product work of each row against this machine's fp32 matrix-product peak)"
echo "| row | threads | matrix-product GFLOP | peak GFLOP/s | PyTorch GFLOP/s (of peak) | zoo GFLOP/s (of peak) | lowest reachable zoo/PyTorch |"
echo "|---|---:|---:|---:|---:|---:|---:|"
declare -A FLOPS PEAK
for t in $THREAD_LIST; do
  # t cores, no more; the larger of LibTorch's (Python's) products and zoo's linear layers'
  PEAK[$t]=$(OPENBLAS_NUM_THREADS=$t "$PY" $S peak --threads "$t" | field fp32_gflops)
  zp=$("$BUILD/$BIN" --row peak --threads "$t" | field fp32_gflops)
  PEAK[$t]=$(awk -v a="${PEAK[$t]}" -v b="$zp" 'BEGIN {print (a > b ? a : b)}')
  for r in "${ROWS[@]}"; do
    read -r id key row in _ <<<"$r"
    [ -n "${FLOPS[$id]:-}" ] || FLOPS[$id]=$("$PY" $S flops "$row" "${DIR[$key]}" "$OUT/in/$in.st" | field matrix_product_flops)
    gflop=$(awk -v f="${FLOPS[$id]}" 'BEGIN {print f / 1e9}')
    [ -n "$(med "$id.$t.py.s${BEST["$id $t py"]}")" ] || { echo "| $id | $t | $gflop | - | (no PyTorch figure) | | |"; continue; }
    read -r gz sz gp sp low <<<"$(roofline_numbers "$gflop" "${PEAK[$t]}" "$(med "$id.$t.zoo")" \
      "$(med "$id.$t.py.s${BEST["$id $t py"]}")")"
    printf "| %s | %d | %.1f | %.0f | %.1f (%.0f%%) | %.1f (%.0f%%) | %.2f%s |\n" "$id" "$t" "$gflop" "${PEAK[$t]}" \
      "$gp" "$sp" "$gz" "$sz" "$low" "$(beyond_half "$low")"
  done
done

# ---- where zoo's time goes: a per-operator profile of its slowest row ----------------------------
t=$(echo "$THREAD_LIST" | awk '{print $NF}')
slow="" sv=0
for r in "${ROWS[@]}"; do
  read -r id _ <<<"$r"
  v=$(med "$id.$t.zoo")
  awk -v a="$v" -v b="$sv" 'BEGIN {exit !(a > b)}' && slow=$r sv=$v
done
read -r id key row in _ <<<"$slow"
echo
echo "## Profile of zoo fp32's slowest row, $id at $t thread(s) (self time per operator, LibTorch's profiler)"
"$BUILD/$BIN" --row "$row" --model "${DIR[$key]}" --inputs "$OUT/in/$in.st" --threads "$t" --warmup 0 --repeat 1 \
  --profile "$OUT/profile-$id.json" >/dev/null
"$PY" $S profile-table "$OUT/profile-$id.json" 15
[ "$ok_all" = 1 ]
