#!/usr/bin/env python3
"""Independent reference for data/text.cc and data/vocab.cc.

Contains the translation tutorial's preprocessing functions verbatim and a plain-Python
re-implementation of Keras' Tokenizer(filters='') (fit_on_texts, texts_to_sequences,
sequences_to_texts) following its documented source behaviour: word counts in an OrderedDict in
first-appearance order, sorted(key=count, reverse=True) (a stable sort, so ties keep their first
appearance), the OOV token first, indices from 1, num_words applied at encode time. Keras itself
is not needed.

Usage:
  keras_tokenizer_ref.py preprocess IN.json   IN: a JSON list of raw sentences
      -> {"eng": [...], "chinese": [...]}
  keras_tokenizer_ref.py tokenizer IN.json    IN: {"texts": [...], "probes": [...],
      "id_seqs": [[...]], "configs": [{"num_words": int|null, "oov_token": str|null}]}
      -> [{"word_index": [[w, i], ...] by index, "word_counts": [[w, c], ...],
           "sequences": [[...]], "texts": [...]}, ...] one per config
  keras_tokenizer_ref.py codepoints           -> {"unidata": "14.0.0", "map": [[cp, lower,
      unicode_to_ascii(lower)], ...]} for every assigned code point whose result is not itself
"""
import json
import re
import sys
import unicodedata
from collections import OrderedDict


# --- The tutorial's preprocessing, unchanged -----------------------------------------------
def unicode_to_ascii(s):
    return ''.join(c for c in unicodedata.normalize('NFD', s) if unicodedata.category(c) != 'Mn')


def preprocess_eng(w):
    w = unicode_to_ascii(w.lower().strip())
    w = re.sub(r"([?.!,])", r" \1 ", w)
    w = re.sub(r'[" "]+', " ", w)
    w = re.sub(r"[^a-zA-Z?.!,]+", " ", w)
    w = w.rstrip().strip()
    w = '<start> ' + w + ' <end>'
    return w


def preprocess_chinese(w):
    w = unicode_to_ascii(w.lower().strip())
    w = re.sub(r'[" "]+', "", w)
    w = w.rstrip().strip()
    w = " ".join(list(w))
    w = '<start> ' + w + ' <end>'
    return w


# --- Keras Tokenizer(filters='') re-implemented ---------------------------------------------
class Tokenizer:
    def __init__(self, num_words=None, oov_token=None):
        self.num_words = num_words
        self.oov_token = oov_token
        self.word_counts = OrderedDict()
        self.word_index = {}
        self.index_word = {}

    @staticmethod
    def words(text):
        # text_to_word_sequence(text, filters='', lower=True, split=' ')
        return [piece for piece in text.lower().split(' ') if piece]

    def fit_on_texts(self, texts):
        for text in texts:
            for w in self.words(text):
                self.word_counts[w] = self.word_counts.get(w, 0) + 1
        counted = list(self.word_counts.items())
        counted.sort(key=lambda item: item[1], reverse=True)
        vocabulary = [] if self.oov_token is None else [self.oov_token]
        vocabulary.extend(word for word, _ in counted)
        self.word_index = dict(zip(vocabulary, range(1, len(vocabulary) + 1)))
        self.index_word = {i: w for w, i in self.word_index.items()}

    def texts_to_sequences(self, texts):
        oov_index = self.word_index.get(self.oov_token)
        result = []
        for text in texts:
            seq = []
            for w in self.words(text):
                i = self.word_index.get(w)
                if i is not None:
                    if self.num_words and i >= self.num_words:
                        if oov_index is not None:
                            seq.append(oov_index)
                    else:
                        seq.append(i)
                elif self.oov_token is not None:
                    seq.append(oov_index)
            result.append(seq)
        return result

    def sequences_to_texts(self, sequences):
        oov_index = self.word_index.get(self.oov_token)
        result = []
        for seq in sequences:
            words = []
            for i in seq:
                w = self.index_word.get(i)
                if w is not None:
                    if self.num_words and i >= self.num_words:
                        if oov_index is not None:
                            words.append(self.index_word[oov_index])
                    else:
                        words.append(w)
                elif self.oov_token is not None:
                    words.append(self.index_word[oov_index])
            result.append(' '.join(words))
        return result


def main():
    mode = sys.argv[1]
    if mode == 'preprocess':
        with open(sys.argv[2], encoding='utf-8') as f:
            sentences = json.load(f)
        out = {'eng': [preprocess_eng(s) for s in sentences],
               'chinese': [preprocess_chinese(s) for s in sentences]}
    elif mode == 'tokenizer':
        with open(sys.argv[2], encoding='utf-8') as f:
            spec = json.load(f)
        out = []
        for config in spec['configs']:
            tok = Tokenizer(num_words=config['num_words'], oov_token=config['oov_token'])
            tok.fit_on_texts(spec['texts'])
            out.append({
                'word_index': sorted(tok.word_index.items(), key=lambda item: item[1]),
                'word_counts': list(tok.word_counts.items()),
                'sequences': tok.texts_to_sequences(spec['probes']),
                'texts': tok.sequences_to_texts(spec['id_seqs']),
            })
    elif mode == 'codepoints':
        table = []
        for cp in range(0x110000):
            c = chr(cp)
            if 0xD800 <= cp <= 0xDFFF or unicodedata.category(c) == 'Cn':
                continue
            lower = c.lower()
            folded = unicode_to_ascii(lower)
            if lower != c or folded != c:
                table.append([cp, lower, folded])
        out = {'unidata': unicodedata.unidata_version, 'map': table}
    else:
        sys.exit('unknown mode ' + mode)
    json.dump(out, sys.stdout)


if __name__ == '__main__':
    main()
