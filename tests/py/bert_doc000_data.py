"""Document 000's IMDBBertDataset preparation, its deterministic part, in plain Python: the
sentence split on '. ', the word counts and their 70th percentile (numpy), torchtext's
basic_english tokenizer (its regular expressions, copied from torchtext/data/utils.py) and
the vocabulary of torchtext.vocab.vocab(Counter, min_freq=2) with the five specials inserted
at 0..4 -- torchtext itself is not packaged for Debian.

  bert_doc000_data.py REVIEWS.json  ->  JSON {"length", "vocab", "tokens", "pairs"} on stdout
"""
import json
import re
import sys
from collections import Counter

import numpy as np

_patterns = [r"\'", r"\"", r"\.", r"<br \/>", r",", r"\(", r"\)", r"\!", r"\?", r"\;", r"\:", r"\s+"]
_replacements = [" '  ", "", " . ", " ", " , ", " ( ", " ) ", " ! ", " ? ", " ", " ", " "]
_patterns_dict = list((re.compile(p), r) for p, r in zip(_patterns, _replacements))


def basic_english(line):
    line = line.lower()
    for pattern_re, replaced_str in _patterns_dict:
        line = pattern_re.sub(replaced_str, line)
    return line.split()


def main():
    with open(sys.argv[1]) as f:
        reviews = json.load(f)
    sentences, lengths = [], []
    for review in reviews:
        review_sentences = review.split('. ')
        sentences += review_sentences
        lengths += [len(v.split()) for v in review_sentences]
    length = int(np.percentile(np.array(lengths), 70))
    counter = Counter()
    for s in sentences:
        counter.update(basic_english(s))
    words = [t for t, n in counter.items() if n >= 2]
    vocab = ["[CLS]", "[PAD]", "[MASK]", "[SEP]", "[UNK]"] + words
    pairs = sum(max(0, len(r.split('. ')) - 1) for r in reviews)
    print(json.dumps({"length": length, "vocab": vocab, "tokens": [basic_english(s) for s in sentences],
                      "pairs": pairs}))


if __name__ == "__main__":
    main()
