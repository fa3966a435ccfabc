"""The SentencePiece library's own Python binding (Debian's python3-sentencepiece) as the
reference for zoo's SentencePiece tokenizer, which runs the C++ library in a helper process.

  spm_ref.py MODEL TEXT_FILE   prints one JSON line per line of TEXT_FILE: {"ids": [...], "text": decoded}
"""
import json
import sys

import sentencepiece

model, path = sys.argv[1], sys.argv[2]
sp = sentencepiece.SentencePieceProcessor(model_file=model)
with open(path, encoding="utf-8") as f:
    for line in f.read().split("\n"):
        ids = sp.encode(line)
        print(json.dumps({"ids": ids, "text": sp.decode(ids)}, ensure_ascii=False))
