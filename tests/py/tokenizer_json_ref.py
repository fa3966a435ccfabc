"""A byte-level BPE tokenizer.json reader and encoder written from Hugging Face tokenizers'
format (model.vocab, model.merges, added_tokens; the ByteLevel pre-tokenizer with GPT-2's
pattern and bytes_to_unicode), not from zoo's code; and a small BPE learner that writes such a
file, so that zoo is checked on a tokenizer.json it did not write.

  tokenizer_json_ref.py learn TEXT N OUT_DIR     N merges learned from TEXT -> OUT_DIR/tokenizer.json
  tokenizer_json_ref.py encode DIR TEXT OUT.json  ids of each line of TEXT (a JSON list of lists)
"""
import collections
import json
import os
import sys

import regex

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hf_gpt2 import bytes_to_unicode  # noqa: E402  (encoder.py's byte-to-character map)

PATTERN = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
EOT = "<|endoftext|>"
BYTE = bytes_to_unicode()


def merged(symbols, pair):
    """The symbols with every adjacent occurrence of `pair` joined, left to right."""
    out, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            out.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            out.append(symbols[i])
            i += 1
    return out


def symbols_of(piece):
    return [BYTE[b] for b in piece.encode("utf-8")]


def learn(text_path, n, out_dir):
    words = collections.Counter()
    with open(text_path, encoding="utf-8") as f:
        for line in f:
            for piece in PATTERN.findall(line.rstrip("\n")):
                words[tuple(symbols_of(piece))] += 1
    words = {w: c for w, c in words.items()}
    merges = []
    for _ in range(n):
        pairs = collections.Counter()
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                pairs[(a, b)] += c
        if not pairs:
            break
        best = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))[0]
        merges.append(best)
        joined = {}
        for w, c in words.items():
            key = tuple(merged(list(w), best))
            joined[key] = joined.get(key, 0) + c
        words = joined
    vocab = {BYTE[b]: b for b in range(256)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    eot = len(vocab)
    tok = {
        "version": "1.0",
        "added_tokens": [{"id": eot, "content": EOT, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False)


def load(path):
    with open(path, encoding="utf-8") as f:
        tok = json.load(f)
    model = tok["model"]
    assert model["type"] == "BPE" and tok["pre_tokenizer"]["type"] == "ByteLevel"
    vocab = dict(model["vocab"])
    for t in tok.get("added_tokens", []):
        vocab[t["content"]] = t["id"]
    ranks = {}
    for i, m in enumerate(model["merges"]):
        a, b = m if isinstance(m, list) else m.split(" ")
        ranks[(a, b)] = i
    return vocab, ranks


def bpe(symbols, ranks):
    while len(symbols) > 1:
        candidates = [(ranks[p], p) for p in zip(symbols, symbols[1:]) if p in ranks]
        if not candidates:
            break
        _, best = min(candidates)
        symbols = merged(symbols, best)
    return symbols


def encode(vocab, ranks, text):
    ids = []
    parts = text.split(EOT)
    for k, part in enumerate(parts):
        for piece in PATTERN.findall(part):
            ids += [vocab[s] for s in bpe(symbols_of(piece), ranks)]
        if k + 1 < len(parts):
            ids.append(vocab[EOT])
    return ids


def main():
    if sys.argv[1] == "learn":
        learn(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif sys.argv[1] == "encode":
        vocab, ranks = load(os.path.join(sys.argv[2], "tokenizer.json"))
        with open(sys.argv[3], encoding="utf-8") as f:
            lines = [line.rstrip("\n") for line in f]
        with open(sys.argv[4], "w") as f:
            json.dump([encode(vocab, ranks, line) for line in lines], f)
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main()
