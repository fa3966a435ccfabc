#!/usr/bin/env bash
# tools/checkpoints.sh's train_once, as the recipe scripts call it, against a stand-in for zoo
# that logs its arguments and writes checkpoint-N/trainer_state.json: a fresh run trains, a
# finished one is kept, a stopped one continues with --resume, a run trained with other
# arguments or an edited config file is refused (another --device is not another run).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
FAILS=0
check() {  # check WHAT COMMAND...: the command must succeed
  local what=$1; shift
  if "$@"; then echo "ok: $what"; else echo "FAILED: $what"; FAILS=$((FAILS + 1)); fi
}

# The scripts run with set -euo pipefail: so do the refusals below (set -e in their subshells).
# The stand-in: `zoo train ... --set train.max_steps=N --output-dir D [--resume]` saves
# checkpoint-N, or checkpoint-$STOP_AT when STOP_AT is set (a run interrupted there).
cat > "$WORK/zoo" <<'EOF'
#!/usr/bin/env bash
echo "$*" >> "$ZOO_LOG"
out="" max=10
while [ $# -gt 0 ]; do
  case "$1" in
    --output-dir) out=$2; shift 2 ;;
    --set) [[ "$2" == train.max_steps=* ]] && max=${2#train.max_steps=}; shift 2 ;;
    *) shift ;;
  esac
done
step=${STOP_AT:-$max}
mkdir -p "$out/checkpoint-$step"
printf '{\n  "global_step": %s,\n  "max_steps": %s\n}\n' "$step" "$max" > "$out/checkpoint-$step/trainer_state.json"
EOF
chmod +x "$WORK/zoo"
export ZOO="$WORK/zoo" ZOO_LOG="$WORK/log"
source "$ROOT/tools/checkpoints.sh"
RUN="$WORK/run"
calls() { [ -f "$ZOO_LOG" ] && wc -l < "$ZOO_LOG" || echo 0; }

STOP_AT=4 train_once "$RUN" --config a.json --device cpu --set train.max_steps=10 > /dev/null
check "a fresh run trains and records its arguments" \
  test "$(calls)" = 1 -a -f "$RUN/train_once.args" -a -d "$RUN/checkpoint-4"

out=$(train_once "$RUN" --config a.json --device cuda --set train.max_steps=10)
check "a stopped run continues with --resume, on another device too" \
  grep -q -- "--device cuda --set train.max_steps=10 --output-dir $RUN --resume" "$ZOO_LOG"
check "and says so" grep -q "stopped at checkpoint-4: continuing it" <<< "$out"

out=$(train_once "$RUN" --config a.json --device cpu --set train.max_steps=10)
check "a finished run is kept" test "$(calls)" = 2
check "and says so" grep -q "finished at checkpoint-10: kept" <<< "$out"

err=$( (set -e; train_once "$RUN" --config a.json --device cpu --set train.max_steps=10 --set train.lora=8) 2>&1 > /dev/null)
status=$?
check "a run with other arguments is refused (status 2)" test "$status" = 2
check "and nothing trains" test "$(calls)" = 2
check "the refusal names the difference and the fix" \
  grep -qz "other arguments or config.*> --set.*> train.lora=8.*delete $RUN" <<< "$err"

echo '{"train": {"max_steps": 10}}' > "$WORK/c.json"
train_once "$WORK/edited" --config "$WORK/c.json" > /dev/null
echo '{"train": {"max_steps": 20}}' > "$WORK/c.json"
err=$( (set -e; train_once "$WORK/edited" --config "$WORK/c.json") 2>&1 > /dev/null)
status=$?
check "a run whose config file was edited since is refused" test "$status" = 2 -a "$(calls)" = 3
check "and the refusal shows the config's two checksums" grep -qz "< .*c.json (contents .*> .*c.json (contents " <<< "$err"

rm -rf "$RUN" && mkdir -p "$RUN/checkpoint-10" &&
  printf '{"global_step": 10, "max_steps": 10}\n' > "$RUN/checkpoint-10/trainer_state.json"
out=$(train_once "$RUN" --config b.json --device cpu)
check "a finished run without a record (trained before records) is kept" \
  grep -q "finished at checkpoint-10: kept" <<< "$out"

[ "$FAILS" = 0 ] && echo "all passed" || { echo "$FAILS failed"; exit 1; }
