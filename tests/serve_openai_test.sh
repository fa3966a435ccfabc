#!/usr/bin/env bash
# zoo serve with OpenAI's official Node client (npm package openai, v4), only its baseURL changed:
# trains a tiny character GPT (seconds), serves it behind an API key, and has
# tests/serve_openai_client.mjs list models, complete (plain, streamed, batched, n, concurrent)
# and check the errors the client raises. The completions must be zoo generate --greedy's text.
# The client is installed once into ${ZOO_NPM_CACHE:-$HOME/.cache/zoo/npm}.
# Usage: serve_openai_test.sh ZOO_BINARY  (exit 0 ok, 1 failed, 77 skipped)
set -uo pipefail
ZOO=${1:?usage: serve_openai_test.sh ZOO_BINARY}
HERE=$(cd "$(dirname "$0")" && pwd)
OPENAI_VERSION=4.104.0  # the last 4.x; the test uses only v4's API
NPM_DIR=${ZOO_NPM_CACHE:-$HOME/.cache/zoo/npm}

if ! command -v node > /dev/null; then echo "SKIPPED: node is not installed (apt-get install nodejs)"; exit 77; fi
if [ "$(node -p 'parseInt(process.versions.node)')" -lt 18 ]; then echo "SKIPPED: node $(node --version) is older than 18"; exit 77; fi
[ -x "$ZOO" ] || { echo "FAILED: no zoo binary at $ZOO"; exit 1; }

# The client package, installed once (no network afterwards).
if [ ! -f "$NPM_DIR/node_modules/openai/package.json" ]; then
  command -v npm > /dev/null || { echo "SKIPPED: npm is not installed and $NPM_DIR has no openai package"; exit 77; }
  mkdir -p "$NPM_DIR" || { echo "FAILED: cannot create $NPM_DIR"; exit 1; }
  [ -f "$NPM_DIR/package.json" ] || echo '{"private": true}' > "$NPM_DIR/package.json"
  if ! (cd "$NPM_DIR" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
          --fetch-retries=1 --fetch-timeout=60000 "openai@$OPENAI_VERSION") > "$NPM_DIR/install.log" 2>&1; then
    WHY=$(grep -m 1 -E 'npm error (FetchError|request to)|E(CONNREFUSED|NOTFOUND|AI_AGAIN|TIMEDOUT|NETUNREACH)' \
            "$NPM_DIR/install.log")
    if [ -n "$WHY" ]; then echo "SKIPPED: npm cannot reach its registry for openai@$OPENAI_VERSION: $WHY"; exit 77; fi
    echo "FAILED: npm install openai@$OPENAI_VERSION in $NPM_DIR:"; head -n 20 "$NPM_DIR/install.log"; exit 1
  fi
fi
CLIENT_VERSION=$(node -p "require('$NPM_DIR/node_modules/openai/package.json').version") ||
  { echo "FAILED: $NPM_DIR/node_modules/openai is broken (delete it to reinstall)"; exit 1; }
echo "ok: openai $CLIENT_VERSION (Node client) in $NPM_DIR"

source "$HERE/serve_tiny_gpt.sh"

# The expected text: zoo generate --prompt prints the prompt, the continuation and a newline.
PROMPT="ab "
"$ZOO" generate --checkpoint "$CKPT" --prompt "$PROMPT" --max-new-tokens 16 --greedy --device cpu \
  > "$WORK/generate.txt" 2> "$WORK/generate.log" || { cat "$WORK/generate.log"; die "zoo generate"; }
node -e 'const fs = require("fs"), [file, prompt, out] = process.argv.slice(1), s = fs.readFileSync(file, "utf8");
         if (!s.startsWith(prompt) || !s.endsWith("\n")) { console.error(JSON.stringify(s)); process.exit(1); }
         fs.writeFileSync(out, s.slice(prompt.length, -1));' "$WORK/generate.txt" "$PROMPT" "$WORK/expected.txt" ||
  die "zoo generate --prompt did not print the prompt, the continuation and a newline"
[ -s "$WORK/expected.txt" ] || die "zoo generate continued \"$PROMPT\" with nothing"
echo "ok: zoo generate --greedy continues \"$PROMPT\" with \"$(cat "$WORK/expected.txt")\""

unset ZOO_API_KEY  # only --api-key below
start_server --api-key sk-test

node "$HERE/serve_openai_client.mjs" --npm-dir "$NPM_DIR" --url "http://127.0.0.1:$PORT" --api-key sk-test \
  --model tiny --prompt "$PROMPT" --expect-file "$WORK/expected.txt" || die "OpenAI's Node client against zoo serve"
kill -0 "$SERVER" 2> /dev/null || die "zoo serve exited during the client's requests"
exit 0
