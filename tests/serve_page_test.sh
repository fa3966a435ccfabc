#!/usr/bin/env bash
# zoo serve's page in a real browser: trains a tiny character GPT (seconds), serves it, and has
# headless Chromium (tests/serve_page_cdp.mjs, DevTools protocol over a pipe) type a prompt into
# the page, click Generate and read the streamed text, which must be zoo generate --greedy's.
# Usage: serve_page_test.sh ZOO_BINARY [SCREENSHOT_PNG]  (exit 0 ok, 1 failed, 77 skipped)
set -uo pipefail
ZOO=${1:?usage: serve_page_test.sh ZOO_BINARY [SCREENSHOT_PNG]}
SHOT=${2:-$PWD/serve_page_test.png}
HERE=$(cd "$(dirname "$0")" && pwd)
CHROME=${CHROME:-/usr/bin/chromium-headless-shell}

if ! command -v node > /dev/null; then echo "SKIPPED: node is not installed (apt-get install nodejs)"; exit 77; fi
if [ "$(node -p 'parseInt(process.versions.node)')" -lt 18 ]; then echo "SKIPPED: node $(node --version) is older than 18"; exit 77; fi
if [ ! -x "$CHROME" ]; then echo "SKIPPED: no $CHROME (apt-get install chromium-headless-shell)"; exit 77; fi
[ -x "$ZOO" ] || { echo "FAILED: no zoo binary at $ZOO"; exit 1; }

source "$HERE/serve_tiny_gpt.sh"

# The expected text: zoo generate --prompts prints {"completion": ..., "prompt": ...} per line.
PROMPT=ab
printf '%s\n' "$PROMPT" > "$WORK/prompts.txt"
"$ZOO" generate --checkpoint "$CKPT" --prompts "$WORK/prompts.txt" --max-new-tokens 16 --greedy --device cpu \
  > "$WORK/generate.jsonl" 2> "$WORK/generate.log" || { cat "$WORK/generate.log"; die "zoo generate"; }
node -e 'const fs = require("fs"); const j = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
         fs.writeFileSync(process.argv[2], j.completion);' "$WORK/generate.jsonl" "$WORK/expected.txt" ||
  die "zoo generate --prompts printed no JSON line"
[ -s "$WORK/expected.txt" ] || die "zoo generate continued \"$PROMPT\" with nothing"
# The same continuation as --prompt prints it (the prompt, the text, a newline).
"$ZOO" generate --checkpoint "$CKPT" --prompt "$PROMPT" --max-new-tokens 16 --greedy --device cpu \
  > "$WORK/generate.txt" 2>> "$WORK/generate.log" || die "zoo generate --prompt"
[ "$(cat "$WORK/generate.txt")" = "$PROMPT$(cat "$WORK/expected.txt")" ] ||
  die "zoo generate --prompt and --prompts disagree: $(cat "$WORK/generate.txt") vs $(cat "$WORK/expected.txt")"
echo "ok: zoo generate --greedy continues \"$PROMPT\" with \"$(cat "$WORK/expected.txt")\""

unset ZOO_API_KEY  # the server would want it, and the page would have no key
start_server

# The server alone first (a clearer message when it, not the page, is wrong): the same text.
node -e '
  const [url, expectFile] = process.argv.slice(1);
  fetch(url + "/v1/completions", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ model: "tiny", prompt: "ab", max_tokens: 16, temperature: 0 }) })
    .then(async (r) => {
      const body = await r.text();
      if (r.status !== 200) throw new Error(`HTTP ${r.status}: ${body}`);
      const text = JSON.parse(body).choices[0].text, want = require("fs").readFileSync(expectFile, "utf8");
      if (text !== want) throw new Error(`got ${JSON.stringify(text)}, want ${JSON.stringify(want)}`);
    })
    .catch((e) => { console.error(e.message); process.exit(1); });' "http://127.0.0.1:$PORT" "$WORK/expected.txt" ||
  die "POST /v1/completions (not streamed) does not give zoo generate's greedy text"
echo "ok: POST /v1/completions with temperature 0 gives the same text"

node "$HERE/serve_page_cdp.mjs" --url "http://127.0.0.1:$PORT/" --model tiny --prompt "$PROMPT" --max-tokens 16 \
  --temperature 0 --expect-file "$WORK/expected.txt" --screenshot "$SHOT" --chrome "$CHROME" --timeout 60 ||
  die "the page in headless Chromium (screenshot: $SHOT)"
echo "ok: the page streams the greedy continuation in headless Chromium (screenshot: $SHOT)"
exit 0
