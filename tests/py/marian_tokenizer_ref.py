"""Hugging Face MarianTokenizer's source encoding, re-written over python3-sentencepiece (an
independent reference for zoo's Marian export).

  marian_tokenizer_ref.py MODEL_DIR < sentences
      for every input line: the ids MarianTokenizer gives it (source.spm's pieces looked up
      in vocab.json, <unk> for unknown pieces, then </s>), space-separated, one line each.
"""
import json
import os
import sys

import sentencepiece as spm


def main():
    model_dir = sys.argv[1]
    with open(os.path.join(model_dir, "tokenizer_config.json")) as f:
        config = json.load(f)
    assert config["tokenizer_class"] == "MarianTokenizer", config
    with open(os.path.join(model_dir, "vocab.json")) as f:
        vocab = json.load(f)
    sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "source.spm"))
    unk, eos = vocab[config["unk_token"]], vocab[config["eos_token"]]
    for line in sys.stdin.read().splitlines():
        ids = [vocab.get(p, unk) for p in sp.encode(line, out_type=str)] + [eos]
        print(" ".join(map(str, ids)))


if __name__ == "__main__":
    main()
