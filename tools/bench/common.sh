# Shared by the tools/bench/*.sh scripts (sourced, not run). Before sourcing, set NAME (the
# script's name for messages), ROUNDS (default round count) and BIN (the C++ side's binary
# name). Parses [--rounds N] [--build DIR] [-- ARGS...] from "$@" into ROUNDS, BUILD and
# ARGS, checks that the binary is built and that python3 has torch, and defines median and
# field (from tools/json.sh), the Python settings (PY_SETTINGS, run_python, fastest) and
# step_rounds (the interleaved rounds of training steps both benchmarks run).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
BUILD=build
while [ $# -gt 0 ]; do
  case "$1" in
    --rounds) ROUNDS=$2; shift 2 ;;
    --build) BUILD=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "$NAME: unknown option $1" >&2; exit 2 ;;
  esac
done
ARGS=("$@")
PY=/usr/bin/python3
# The bench programs are not part of the default build: build (or bring up to date) this one.
cmake --build "$BUILD" --target "$BIN" >/dev/null || { echo "$NAME: cannot build $BUILD/$BIN (run tools/setup.sh first)" >&2; exit 1; }
"$PY" -c "import torch" 2>/dev/null || { echo "$NAME: $PY has no torch (apt-get install python3-torch)" >&2; exit 1; }

# Both sides on the same BLAS kernels: where zoo forces OpenBLAS's core (its detection failed
# on this CPU, see `zoo devices`), Python gets the same OPENBLAS_CORETYPE.
if [ -z "${OPENBLAS_CORETYPE:-}" ] && [ -x "$BUILD/zoo" ]; then
  core=$("$BUILD/zoo" devices | sed -n 's/.*OPENBLAS_CORETYPE=\([A-Za-z0-9]*\).*/\1/p')
  [ -n "$core" ] && export OPENBLAS_CORETYPE=$core && echo "$NAME: OPENBLAS_CORETYPE=$core on both sides (zoo devices)"
fi

source tools/json.sh
num() { awk -v x="$1" 'BEGIN {printf "%.1f", x}'; }  # for display; medians use the raw values

# The Python side runs under each setting a Python user might choose, and each ratio is taken
# against the fastest of them, so that zoo is never compared with a needlessly slow Python:
#   defaults            torch's own thread count (the scripts' --default-threads: no
#                       torch.set_num_threads call), OpenBLAS's own pool
#   set_num_threads(N)  torch.set_num_threads(--threads), as zoo is given
#   OPENBLAS_NUM_THREADS=1  set_num_threads(N) with OpenBLAS single-threaded (the threading
#                       zoo configures for itself)
THREADS=2
for ((i = 0; i < ${#ARGS[@]}; ++i)); do
  [ "${ARGS[i]}" = --threads ] && [ $((i + 1)) -lt ${#ARGS[@]} ] && THREADS=${ARGS[i + 1]}
  case "${ARGS[i]}" in --threads=*) THREADS=${ARGS[i]#--threads=} ;; esac
done
PY_SETTINGS=("defaults" "set_num_threads($THREADS)" "OPENBLAS_NUM_THREADS=1")

# run_python SETTING_INDEX SCRIPT ARGS...: SCRIPT under Python setting SETTING_INDEX.
run_python() {
  local setting=$1; shift
  case "$setting" in
    0) "$PY" "$@" --default-threads ;;
    1) "$PY" "$@" ;;
    2) OPENBLAS_NUM_THREADS=1 "$PY" "$@" ;;
  esac
}

# fastest UNIT VALUE... (one value per Python setting): the index of the fastest setting;
# UNIT "ms" (lower is faster) or "per_s" (higher is faster).
fastest() {
  local unit=$1 best=0 i; shift
  local v=("$@")
  for i in "${!v[@]}"; do
    if [ "$unit" = ms ]; then
      awk -v a="${v[i]}" -v b="${v[best]}" 'BEGIN {exit !(a < b)}' && best=$i
    else
      awk -v a="${v[i]}" -v b="${v[best]}" 'BEGIN {exit !(a > b)}' && best=$i
    fi
  done
  echo "$best"
}

# step_rounds LABEL PY_SCRIPT [EXTRA ARGS...]: ROUNDS rounds, each running $BUILD/$BIN and
# then PY_SCRIPT under every Python setting, all given EXTRA ARGS then ARGS, so that every
# side sees the same machine noise; prints every round, the median step of each side and
# the ratio zoo/python against the fastest Python setting, named; leaves the medians of zoo
# and of that setting in STEP_ZOO_MS and STEP_PY_MS, and zoo's last JSON line in STEP_ZOO_JSON.
step_rounds() {
  local label=$1 script=$2 r s c p line best mc; shift 2
  local cpp=() pys=("" "" "") med=()  # pys[s]: the rounds' times of Python setting s
  for r in $(seq "$ROUNDS"); do
    STEP_ZOO_JSON=$("$BUILD/$BIN" "$@" "${ARGS[@]}")
    c=$(echo "$STEP_ZOO_JSON" | field median_step_ms)
    cpp+=("$c")
    line="$label round $r: zoo $(num "$c") ms | python:"
    for s in 0 1 2; do
      p=$(run_python "$s" "$script" "$@" "${ARGS[@]}" | field median_step_ms)
      pys[s]+=" $p"
      line+=" ${PY_SETTINGS[s]} $(num "$p") ms;"
    done
    echo "${line%;}"
  done
  mc=$(median "${cpp[@]}")
  for s in 0 1 2; do med+=("$(median ${pys[s]})"); done
  echo "median $label step: zoo $(num "$mc") ms"
  for s in 0 1 2; do
    awk -v c="$mc" -v p="${med[s]}" -v n="${PY_SETTINGS[s]}" \
      'BEGIN {printf "  python %-24s %.1f ms (zoo/python %.3f)\n", n, p, c/p}'
  done
  best=$(fastest ms "${med[@]}")
  awk -v c="$mc" -v p="${med[best]}" -v n="${PY_SETTINGS[best]}" \
    'BEGIN {printf "ratio zoo/python: %.3f against the fastest Python setting, %s (%.1f ms)\n", c/p, n, p}'
  STEP_ZOO_MS=$mc STEP_PY_MS=${med[best]}
}

# roofline_numbers GFLOP PEAK ZOO_MS PY_MS: a piece of work (GFLOP of matrix products) done in
# ZOO_MS and PY_MS against the measured matrix-product peak (GFLOP/s): "zoo_gflops zoo_share%
# python_gflops python_share% lowest", lowest being the lowest zoo/python ratio any
# implementation could reach (Python's share: nothing runs above the peak).
roofline_numbers() {
  awk -v f="$1" -v pk="$2" -v z="$3" -v p="$4" 'BEGIN {
    gz = f / z * 1000; gp = f / p * 1000
    printf "%.6g %.6g %.6g %.6g %.6g\n", gz, 100 * gz / pk, gp, 100 * gp / pk, gp / pk }'
}

# beyond_half LOWEST: " (0.5 out of reach)" where the lowest reachable ratio is above 0.5.
beyond_half() { awk -v l="$1" 'BEGIN { if (l > 0.5) printf " (0.5 out of reach)" }'; }

# roofline GFLOP PEAK: after step_rounds, the step's model work (the matrix products of forward
# and backward) against the peak in the step's precision, as roofline_numbers.
roofline() {
  local gz sz gp sp low
  read -r gz sz gp sp low <<<"$(roofline_numbers "$1" "$2" "$STEP_ZOO_MS" "$STEP_PY_MS")"
  awk -v f="$1" -v pk="$2" -v gz="$gz" -v sz="$sz" -v gp="$gp" -v sp="$sp" -v low="$low" -v note="$(beyond_half "$low")" 'BEGIN {
    printf "roofline: %.2f GFLOP a step, peak %.0f GFLOP/s (at least %.1f ms); zoo %.0f GFLOP/s (%.0f%% of peak),", f, pk, 1000 * f / pk, gz, sz
    printf " python %.0f GFLOP/s (%.0f%%): zoo/python can go no lower than %.2f%s\n", gp, sp, low, note }'
}
