#!/usr/bin/env bash
# BERT data preparation: zoo's examples (build/zoo_bench_bert_prep) against document 000's
# IMDBBertDataset in Python (tools/bench/bert_prep_doc000.py) on the same CSV of the 50,000
# labelled IMDB reviews (written from the archive's train/test pos/neg folders, in the
# Kaggle "IMDB Dataset.csv" layout the document reads), same machine, one after the other.
#
#   tools/bench/bert_prep_bench.sh [--build DIR] [--rows N]
# Needs tools/fetch_data.sh imdb, python3-pandas and python3-tqdm (tools/setup.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
BUILD=build ROWS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --build) BUILD=$2; shift 2 ;;
    --rows) ROWS=$2; shift 2 ;;
    *) echo "bert_prep_bench.sh: unknown option $1" >&2; exit 2 ;;
  esac
done
PY=/usr/bin/python3
DATA=${ZOO_DATA_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/zoo/data}
IMDB=$DATA/imdb/aclImdb
[ -d "$IMDB/train/pos" ] || { echo "bert_prep_bench.sh: $IMDB missing: run tools/fetch_data.sh imdb" >&2; exit 1; }
cmake --build "$BUILD" --target zoo_bench_bert_prep >/dev/null ||
  { echo "bert_prep_bench.sh: cannot build $BUILD/zoo_bench_bert_prep (run tools/setup.sh first)" >&2; exit 1; }
"$PY" -c "import pandas, tqdm" 2>/dev/null || { echo "bert_prep_bench.sh: apt-get install python3-pandas python3-tqdm" >&2; exit 1; }
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
"$PY" - "$IMDB" "$TMP/imdb.csv" "${ROWS:-0}" <<'PYEOF'
import csv, os, sys
root, out, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(out, "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["review", "sentiment"])
    n = 0
    for split in ("train", "test"):
        for label, name in (("pos", "positive"), ("neg", "negative")):
            folder = os.path.join(root, split, label)
            for file in sorted(os.listdir(folder)):
                with open(os.path.join(folder, file), encoding="utf-8") as r:
                    w.writerow([r.read(), name])
                n += 1
                if rows and n >= rows:
                    sys.exit(0)
PYEOF
c=$("$BUILD/zoo_bench_bert_prep" --csv "$TMP/imdb.csv")
echo "zoo:    $c"
p=$("$PY" tools/bench/bert_prep_doc000.py --csv "$TMP/imdb.csv" 2>/dev/null)
echo "python: $p"
source tools/json.sh
awk -v c="$(echo "$c" | field seconds)" -v p="$(echo "$p" | field seconds)" \
  'BEGIN {printf "zoo %.2f s, document 000 %.1f s: zoo takes %.4f of the time (1/%.0f)\n", c, p, c/p, p/c}'
