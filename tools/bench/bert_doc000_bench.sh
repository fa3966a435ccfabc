#!/usr/bin/env bash
# Document 000's BERT: a training step of zoo (build/zoo_bench_bert_doc000) against the
# document's own classes and trainer loss in Python (tools/bench/bert_doc000_bench.py), same
# machine, threads and batch (the trainer's 24; 55 tokens, IMDB's 71,942-word vocabulary,
# the document's 64/36 sizes and 4 heads), in interleaved rounds. Target: ratio <= 0.7.
#   tools/bench/bert_doc000_bench.sh [--rounds N] [--build DIR] [-- ARGS for both sides]
NAME=bert_doc000_bench.sh ROUNDS=5 BIN=zoo_bench_bert_doc000
source "$(dirname "$0")/common.sh"
step_rounds training tools/bench/bert_doc000_bench.py
