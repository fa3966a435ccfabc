#!/usr/bin/env bash
# zoo serve under a soak: REQUESTS completions (default 10,000) from 16 clients, one in ten
# malformed (bad JSON, wrong types, negative or huge max_tokens, a 10 MB body, an unknown model,
# a client that leaves mid-stream). Every valid answer is checked against `zoo generate
# --greedy`; the server's resident memory after the warm-up and at the end is printed.
#
#   tools/bench/serve_soak.sh --gpt DIR [--requests 10000] [--max-tokens 16] [--out DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZOO=${ZOO:-build/zoo}
GPT="" REQUESTS=10000 TOKENS=16 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --gpt) GPT=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --max-tokens) TOKENS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,7p' "$0"; exit 0 ;;
    *) echo "serve_soak.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
[ -n "$GPT" ] || { echo "serve_soak.sh: give --gpt DIR (a language-model checkpoint)" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
NAME=serve_soak.sh
source tools/bench/serve_common.sh
prompts_and_expected "$GPT" "$TOKENS"
start_server "$OUT/server.log" --checkpoint "gpt=$GPT"
status=0
node tools/bench/serve_load.mjs --url "$URL" --model gpt --clients 16 --requests "$REQUESTS" --max-tokens "$TOKENS" \
  --prompts "$OUT/prompts.txt" --expect "$OUT/expect.jsonl" --malformed-every 10 --rss-pid "$SERVER" \
  --max-time 3600 --json "$OUT/soak.json" | tee "$OUT/soak.txt" || status=$?
kill -0 "$SERVER" 2>/dev/null && echo "server: still up, /health $(curl -s -o /dev/null -w '%{http_code}' "$URL/health")" \
  || { echo "server: DOWN" >&2; status=1; }
exit $status
