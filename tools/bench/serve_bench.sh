#!/usr/bin/env bash
# zoo serve's batching, measured: the same load (C concurrent clients) served with
# --max-batch-size B and with --max-batch-size 1 (one request at a time), side by side on this
# machine, for a language model (tokens/s, streamed: time to first token) and a translation
# model (sentences/s). Every completion is greedy and checked against `zoo generate --greedy`.
#
#   tools/bench/serve_bench.sh --gpt DIR [--mt DIR --sentences FILE] [--clients 32]
#       [--max-tokens 64] [--requests 256] [--batch 16] [--out DIR]
#
# DIR: checkpoints (e.g. of tools/recipes/gpt_shakespeare_char_cpu.json and transformer_cmn.json);
# FILE: sentences to translate, one per line (e.g. the source column of a run's test.tsv).
# The prompts are lines of tiny Shakespeare (tools/fetch_data.sh tinyshakespeare).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
ZOO=${ZOO:-build/zoo}
GPT="" MT="" SENTENCES="" CLIENTS=32 TOKENS=64 REQUESTS=256 BATCH=16 OUT=""
while [ $# -gt 0 ]; do
  case "$1" in
    --gpt) GPT=$2; shift 2 ;;
    --mt) MT=$2; shift 2 ;;
    --sentences) SENTENCES=$2; shift 2 ;;
    --clients) CLIENTS=$2; shift 2 ;;
    --max-tokens) TOKENS=$2; shift 2 ;;
    --requests) REQUESTS=$2; shift 2 ;;
    --batch) BATCH=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "serve_bench.sh: unknown option $1 (try --help)" >&2; exit 2 ;;
  esac
done
[ -n "$GPT" ] || { echo "serve_bench.sh: give --gpt DIR (a language-model checkpoint)" >&2; exit 2; }
[ -z "$MT" ] || [ -f "$SENTENCES" ] || { echo "serve_bench.sh: --mt needs --sentences FILE" >&2; exit 2; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
NAME=serve_bench.sh
source tools/bench/serve_common.sh
prompts_and_expected "$GPT" "$TOKENS"

# run KIND B: one load run against a server with --max-batch-size B.
run() {
  local kind=$1 b=$2 tag="$1-b$2"
  if [ "$kind" = gpt ]; then
    start_server "$OUT/$tag.log" --checkpoint "gpt=$GPT" --max-batch-size "$b" --max-queue 256
    node tools/bench/serve_load.mjs --url "$URL" --model gpt --clients "$CLIENTS" --requests "$REQUESTS" \
      --max-tokens "$TOKENS" --stream --prompts "$OUT/prompts.txt" --expect "$OUT/expect.jsonl" \
      --json "$OUT/$tag.json" > "$OUT/$tag.txt"
  else
    start_server "$OUT/$tag.log" --checkpoint "mt=$MT" --max-batch-size "$b" --max-queue 256
    node tools/bench/serve_load.mjs --url "$URL" --model mt --endpoint translate --clients "$CLIENTS" \
      --requests "$REQUESTS" --prompts "$SENTENCES" --json "$OUT/$tag.json" > "$OUT/$tag.txt"
  fi
  stop_server
}

for kind in gpt ${MT:+mt}; do
  run "$kind" "$BATCH"
  run "$kind" 1
done
python3 - "$OUT" "$BATCH" ${MT:+mt} <<'EOF'
import json, sys
out, batch, kinds = sys.argv[1], sys.argv[2], ["gpt"] + sys.argv[3:]
print("| load | --max-batch-size | requests ok | throughput | p50 / p99 latency | p50 / p99 time to first token |")
print("|---|---|---|---|---|---|")
for kind in kinds:
    rate = {}
    for b in (batch, "1"):
        j = json.load(open(f"{out}/{kind}-b{b}.json"))
        key = "completion_tokens_per_s" if kind == "gpt" else "sentences_per_s"
        rate[b] = j[key]
        ttft = j.get("ttft_ms") or {}
        lat = j["latency_ms"]
        unit = "tokens/s" if kind == "gpt" else "sentences/s"
        t = f"{ttft.get('p50', 0):.0f} / {ttft.get('p99', 0):.0f} ms" if kind == "gpt" else "-"
        print(f"| {kind} | {b} | {j['requests']['ok']} of {j['requests']['sent']} | {j[key]:.1f} {unit} | {lat['p50']:.0f} / {lat['p99']:.0f} ms | {t} |")
    print(f"| {kind}: batching gain | | | **{rate[batch] / rate['1']:.2f}x** | | |")
EOF
