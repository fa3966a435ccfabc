# Sourced by the zoo serve tests (serve_page_test.sh, serve_openai_test.sh) with ZOO set: a work
# folder removed at exit (with the server in SERVER stopped), die(), and a tiny character GPT
# trained in seconds (CKPT) on a corpus of a few letters, so 20 steps learn something to continue;
# start_server [ARGS...] serves it as "tiny" on a free port (SERVER, PORT).
WORK=$(mktemp -d)
SERVER=""
cleanup() {
  if [ -n "$SERVER" ]; then kill "$SERVER" 2> /dev/null; wait "$SERVER" 2> /dev/null; fi
  rm -rf "$WORK"
}
trap cleanup EXIT
die() {
  echo "FAILED: $*"
  if [ -s "$WORK/serve.log" ]; then echo "--- zoo serve's log (last lines):"; tail -n 20 "$WORK/serve.log"; fi
  exit 1
}

# A tiny corpus: 400 lines of words over a few letters, so 20 steps learn something to continue.
awk 'BEGIN { srand(7); split("abc bad cab dab ace bead cede face fade deed", w, " ");
             for (i = 0; i < 400; i++) { s = w[int(rand() * 10) + 1];
               for (j = 0; j < 7; j++) s = s " " w[int(rand() * 10) + 1]; print s } }' > "$WORK/text.txt"
cat > "$WORK/tiny.json" << EOF
{
  "task": "language_modeling",
  "model": {"preset": "gpt-nano-char", "n_layer": 1, "n_embd": 32, "n_head": 2, "n_positions": 64},
  "data": {"files": ["$WORK/text.txt"], "tokenizer": "char", "validation_fraction": 0.1, "block_size": 32},
  "train": {"per_device_train_batch_size": 8, "learning_rate": 0.01, "logging_steps": 10, "seed": 7}
}
EOF
"$ZOO" train --config "$WORK/tiny.json" --device cpu --output-dir "$WORK/run" --set train.max_steps=20 \
  --set train.save_steps=0 --set train.report_to_tensorboard=false > "$WORK/train.log" 2>&1 ||
  { tail -n 20 "$WORK/train.log"; die "zoo train"; }
CKPT=$(ls -d "$WORK"/run/checkpoint-* 2> /dev/null | sort -t- -k2 -n | tail -n 1)
[ -n "$CKPT" ] || die "zoo train saved no checkpoint"
echo "ok: trained a tiny character GPT ($CKPT)"

start_server() {
  "$ZOO" serve --checkpoint "tiny=$CKPT" --port 0 --device cpu "$@" > "$WORK/serve.out" 2> "$WORK/serve.log" &
  SERVER=$!
  PORT=""
  for _ in $(seq 600); do
    PORT=$(sed -n 's|.*zoo serve: listening on http://127\.0\.0\.1:\([0-9][0-9]*\).*|\1|p' "$WORK/serve.log" | head -n 1)
    [ -n "$PORT" ] && break
    kill -0 "$SERVER" 2> /dev/null || die "zoo serve exited before listening"
    sleep 0.1
  done
  [ -n "$PORT" ] || die "zoo serve did not print 'zoo serve: listening on http://127.0.0.1:PORT' within 60 s"
  echo "ok: zoo serve listens on port $PORT"
}
