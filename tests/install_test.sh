#!/usr/bin/env bash
# ctest install_package (issue 62): installs the build into a temporary prefix, builds examples/
# out of tree against it with find_package(zoo) alone, and checks that examples/generate prints
# what the installed `zoo generate --greedy` prints for a checkpoint trained here with a
# SentencePiece tokenizer (so the helper program must be found through the installed package).
#   tests/install_test.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
BUILD=$1 SRC=$2
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
P=$T/prefix
unset ZOO_SPM
fail() { echo "install_test: $*" >&2; exit 1; }

cmake --install "$BUILD" --prefix "$P" >"$T/install.log" || { cat "$T/install.log"; fail "cmake --install failed"; }
for f in bin/zoo libexec/zoo/zoo-spm include/zoo/zoo.h include/zoo/error.h include/zoo/export.h include/zoo/version.h \
         lib/cmake/zoo/zooConfig.cmake lib/cmake/zoo/zooConfigVersion.cmake lib/cmake/zoo/zooTargets.cmake; do
  [ -e "$P/$f" ] || fail "$f is missing from the install"
done
ls "$P"/lib/libzoo.* >/dev/null 2>&1 || fail "no lib/libzoo.* in the install"
version=$(sed -n 's/^#define ZOO_VERSION "\(.*\)"/\1/p' "$P/include/zoo/version.h")
[ "$("$P/bin/zoo" --version)" = "zoo $version" ] || fail "zoo --version says '$("$P/bin/zoo" --version)', version.h '$version'"
grep -q "project(zoo VERSION $version " "$SRC/CMakeLists.txt" || fail "CMakeLists.txt's project() is not version $version"

# The examples, as a user builds them: only the prefix is known.
cmake -S "$SRC/examples" -B "$T/examples" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$P" \
  >"$T/configure.log" 2>&1 || { cat "$T/configure.log"; fail "configuring examples/ against $P failed"; }
start=$(date +%s)
cmake --build "$T/examples" >"$T/build.log" 2>&1 || { cat "$T/build.log"; fail "building examples/ failed"; }
echo "install_test: examples built in $(( $(date +%s) - start )) s"

# A tiny GPT with a SentencePiece tokenizer, trained by the installed zoo.
python3 - "$T/text.txt" <<'PY'
import sys
lines = ["the cat sat on the mat.", "a dog ran in the park!", "we sing, you dance."]
open(sys.argv[1], "w").write("\n".join(lines[i % 3] for i in range(600)) + "\n")
PY
"$P/bin/zoo" tokenizer train --input "$T/text.txt" --model-type bpe --vocab-size 60 --out "$T/tok" >/dev/null 2>&1 \
  || fail "zoo tokenizer train failed"
cat >"$T/gpt.json" <<JSON
{"task": "language_modeling",
 "model": {"preset": "gpt-nano-char", "n_positions": 32, "n_layer": 2, "n_embd": 32},
 "data": {"files": ["$T/text.txt"], "tokenizer": "$T/tok", "max_eval_windows": 20},
 "train": {"max_steps": 20, "per_device_train_batch_size": 8, "learning_rate": 0.003, "save_steps": 20,
           "eval_steps": 20, "logging_steps": 10, "report_to_tensorboard": false}}
JSON
"$P/bin/zoo" train --config "$T/gpt.json" --output-dir "$T/run" >"$T/train.log" 2>&1 || { cat "$T/train.log"; fail "training failed"; }
ckpt=$T/run/checkpoint-20
cli=$("$P/bin/zoo" generate --checkpoint "$ckpt" --prompt "the cat" --greedy --max-new-tokens 20 2>/dev/null)
example=$("$T/examples/generate" "$ckpt" "the cat" 20) || fail "examples/generate failed"
[ "$cli" = "$example" ] || fail "examples/generate printed '$example', zoo generate '$cli'"
echo "install_test: examples/generate = zoo generate --greedy: '$example'"
# The other two examples run too (errors are zoo::Error messages, exit 1).
out=$("$T/examples/classify" "$ckpt" 2>&1 </dev/null) && fail "classify took a language model"
echo "$out" | grep -q "zoo classify needs one for" || fail "classify's error: $out"
out=$("$T/examples/translate" "$T/nothing" 2>&1 </dev/null) && fail "translate took a missing directory"
echo "$out" | grep -q "nothing" || fail "translate's error: $out"
echo "1 passed, 0 failed"
