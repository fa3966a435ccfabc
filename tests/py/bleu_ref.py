#!/usr/bin/env python3
"""Independent reference for train/bleu.cc.

Tokenises with the mteval-v13a rules (written here with Python's `re`, as sacreBLEU's
Tokenizer13a applies them) and scores with NLTK's corpus_bleu (one reference per hypothesis,
uniform weights over 1..4-grams, no smoothing). NLTK and sacreBLEU agree when every n-gram order
has a match and every hypothesis has at least 4 tokens (NLTK counts a denominator of at least 1
per sentence, sacreBLEU does not); the fixtures respect that.

Usage: bleu_ref.py IN.json   IN: {"hyps": [...], "refs": [...]}
  -> {"bleu": float (0..1), "hyp_tokens": [...], "ref_tokens": [...]}
"""
import json
import re
import sys

from nltk.translate.bleu_score import corpus_bleu

_RULES = [
    # ASCII punctuation and symbols except ' , - . become separate tokens.
    (re.compile(r'([\{-\~\[-\` -\&\(-\+\:-\@\/])'), r' \1 '),
    # '.' and ',': split off unless preceded / followed by a digit.
    (re.compile(r'([^0-9])([\.,])'), r'\1 \2 '),
    (re.compile(r'([\.,])([^0-9])'), r' \1 \2'),
    # '-' after a digit.
    (re.compile(r'([0-9])(-)'), r'\1 \2 '),
]


def tokenize_13a(line):
    line = line.rstrip()  # as sacreBLEU's BLEU._preprocess_segment
    line = line.replace('<skipped>', '').replace('-\n', '').replace('\n', ' ')
    if '&' in line:
        for escaped, plain in (('&quot;', '"'), ('&amp;', '&'), ('&lt;', '<'), ('&gt;', '>')):
            line = line.replace(escaped, plain)
    line = ' ' + line + ' '
    for pattern, replacement in _RULES:
        line = pattern.sub(replacement, line)
    return line.split()


def main():
    with open(sys.argv[1], encoding='utf-8') as f:
        spec = json.load(f)
    hyps = [tokenize_13a(h) for h in spec['hyps']]
    refs = [tokenize_13a(r) for r in spec['refs']]
    score = corpus_bleu([[r] for r in refs], hyps)
    json.dump({'bleu': float(score),
               'hyp_tokens': [' '.join(h) for h in hyps],
               'ref_tokens': [' '.join(r) for r in refs]}, sys.stdout)


if __name__ == '__main__':
    main()
