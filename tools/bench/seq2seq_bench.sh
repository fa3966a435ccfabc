#!/usr/bin/env bash
# seq2seq benchmark: zoo (C++) against document 000's own PyTorch modules in Python
# (tests/py/seq2seq_doc000.py), same machine, threads, batch and shapes, in interleaved
# rounds so that both sides see the same machine noise.
#
#   tools/bench/seq2seq_bench.sh [--rounds N] [--build DIR] [-- ARGS for both sides]
#   e.g. tools/bench/seq2seq_bench.sh --rounds 3 -- --batch 64 --units 1024 --threads 2
#
# 1. Training step (teacher forcing, masked cross-entropy, backward, clip, Adam): medians
#    and the ratio zoo/python (the issue's target: <= 0.5) against the fastest of the Python
#    settings (torch's defaults, set_num_threads(--threads), OPENBLAS_NUM_THREADS=1; see
#    common.sh).
# 2. Beam search (--beams, --max-len, --sentences): zoo's batched search against a Python
#    loop over the sentences with the same weights and sources, under each Python setting;
#    sentences/s of each, the speed-up against the fastest, and a checksum of the outputs
#    that must agree (the same translations).
# Both sides run the document's configuration: no source mask (--mask 0).
NAME=seq2seq_bench.sh ROUNDS=3 BIN=zoo_bench_seq2seq
source "$(dirname "$0")/common.sh"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT

step_rounds training tools/bench/seq2seq_bench.py --mode train

c=$("$BUILD/zoo_bench_seq2seq" --mode beam --save "$TMP/beam.safetensors" "${ARGS[@]}")
cs=$(echo "$c" | field sentences_per_s)
echo "beam search: zoo $(num "$cs") sentences/s, checksum $(echo "$c" | field checksum)"
rates=()
for s in 0 1 2; do
  p=$(run_python "$s" tools/bench/seq2seq_bench.py --mode beam --load "$TMP/beam.safetensors" "${ARGS[@]}")
  rates+=("$(echo "$p" | field sentences_per_s)")
  echo "  python loop ${PY_SETTINGS[s]}: $(num "${rates[s]}") sentences/s, checksum $(echo "$p" | field checksum)"
done
echo "  (equal checksums = the same translations)"
best=$(fastest per_s "${rates[@]}")
awk -v c="$cs" -v p="${rates[best]}" -v n="${PY_SETTINGS[best]}" \
  'BEGIN {printf "speed-up zoo/python loop: %.2fx against the fastest Python setting, %s (%.1f sentences/s)\n", c/p, n, p}'
