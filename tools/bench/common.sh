# Shared by the tools/bench/*.sh scripts (sourced, not run). Before sourcing, set NAME (the
# script's name for messages), ROUNDS (default round count) and BIN (the C++ side's binary
# name). Parses [--rounds N] [--build DIR] [-- ARGS...] from "$@" into ROUNDS, BUILD and
# ARGS, checks that the binary is built and that python3 has torch, and defines median,
# field (the number after "KEY": in JSON on stdin) and step_rounds (the interleaved rounds
# of training steps both benchmarks run).
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
[ -x "$BUILD/$BIN" ] || { echo "$NAME: $BUILD/$BIN not built (run tools/setup.sh)" >&2; exit 1; }
"$PY" -c "import torch" 2>/dev/null || { echo "$NAME: $PY has no torch (apt-get install python3-torch)" >&2; exit 1; }

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
field() { sed -n "s/.*\"$1\": *\([0-9.]*\).*/\1/p"; }

# step_rounds LABEL PY_SCRIPT [EXTRA ARGS...]: ROUNDS interleaved rounds of
# $BUILD/$BIN, PY_SCRIPT as installed and PY_SCRIPT with OPENBLAS_NUM_THREADS=1 (the
# threading zoo configures for itself), each given EXTRA ARGS then ARGS; prints every round,
# the median step of each side and the ratios zoo/python.
step_rounds() {
  local label=$1 script=$2 r c p p1 mc mp mp1; shift 2
  local cpp=() py=() py1=()
  for r in $(seq "$ROUNDS"); do
    c=$("$BUILD/$BIN" "$@" "${ARGS[@]}" | field median_step_ms)
    p=$("$PY" "$script" "$@" "${ARGS[@]}" | field median_step_ms)
    p1=$(OPENBLAS_NUM_THREADS=1 "$PY" "$script" "$@" "${ARGS[@]}" | field median_step_ms)
    echo "$label round $r: zoo ${c} ms  python ${p} ms  python(OPENBLAS_NUM_THREADS=1) ${p1} ms"
    cpp+=("$c"); py+=("$p"); py1+=("$p1")
  done
  mc=$(median "${cpp[@]}"); mp=$(median "${py[@]}"); mp1=$(median "${py1[@]}")
  echo "median $label step: zoo ${mc} ms, python ${mp} ms, python(OPENBLAS_NUM_THREADS=1) ${mp1} ms"
  awk -v c="$mc" -v p="$mp" -v p1="$mp1" \
    'BEGIN {printf "ratio zoo/python: %.3f (default python), %.3f (python with OPENBLAS_NUM_THREADS=1)\n", c/p, c/p1}'
}
