# Shared by tools/bench/serve_bench.sh and serve_soak.sh (sourced, not run), with ZOO, NAME (the
# script's name for messages) and OUT set. prompts_and_expected GPT TOKENS writes OUT/prompts.txt
# (64 lines of tiny Shakespeare) and OUT/expect.jsonl (zoo generate --greedy's continuations);
# start_server LOG ARGS... starts zoo serve on a free port and sets SERVER and URL;
# stop_server ends it (also at exit).
prompts_and_expected() {
  local text="${ZOO_DATA_DIR:-$HOME/.local/share/zoo/data}/tinyshakespeare/input.txt"
  [ -f "$text" ] || { echo "$NAME: no $text (tools/fetch_data.sh tinyshakespeare)" >&2; exit 1; }
  awk 'length($0) >= 8 && n++ < 64' "$text" > "$OUT/prompts.txt"
  "$ZOO" generate --checkpoint "$1" --prompts "$OUT/prompts.txt" --greedy --max-new-tokens "$2" \
    > "$OUT/expect.jsonl" 2>/dev/null
}

SERVER=""
stop_server() { [ -z "$SERVER" ] || { kill -TERM "$SERVER" 2>/dev/null; wait "$SERVER" 2>/dev/null || true; SERVER=""; }; }
trap stop_server EXIT
start_server() {
  local log=$1; shift
  "$ZOO" serve --port 0 --device cpu "$@" 2> "$log" &
  SERVER=$!
  for _ in $(seq 600); do
    URL=$(sed -n 's/^zoo serve: listening on \(http:[^ ]*\)$/\1/p' "$log")
    [ -n "$URL" ] && return 0
    kill -0 "$SERVER" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  echo "$NAME: the server did not start (see $log)" >&2; exit 1
}
