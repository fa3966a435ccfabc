# Shared by the tools/bench/*.sh scripts (sourced, not run). Before sourcing, set NAME (the
# script's name for messages), ROUNDS (default round count) and BIN (the C++ side's binary
# name). Parses [--rounds N] [--build DIR] [-- ARGS...] from "$@" into ROUNDS, BUILD and
# ARGS, checks that the binary is built and that python3 has torch, and defines median and
# field (the number after "KEY": in JSON on stdin).
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
