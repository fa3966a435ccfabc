#!/usr/bin/python3
"""Python side of tools/bench/bert_prep_bench.sh: document 000's IMDBBertDataset (~l.1336-1535)
as the document writes it, preparing every review of a CSV (review,sentiment), timed.

torchtext is not packaged for Debian, so the two functions the class takes from it are
stand-ins with torchtext's semantics: get_tokenizer("basic_english") (torchtext's own regular
expressions) and vocab(Counter, min_freq) with insert_token / set_default_index /
lookup_indices / lookup_token over a dict (torchtext's lookups are C++; a dict lookup is the
fastest Python has, so this does not slow the document's code down). Prints JSON.

  bert_prep_doc000.py --csv imdb.csv [--rows N]
"""
import argparse
import json
import os
import random
import sys
import time
import typing
from collections import Counter
from typing import List

import numpy as np
import pandas as pd
import torch
from torch.utils.data import Dataset
from tqdm import tqdm

# --- torchtext stand-ins ---------------------------------------------------------------
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "py"))
from bert_doc000_data import basic_english as _basic_english_normalize  # noqa: E402  (torchtext's regexes)


def get_tokenizer(name):
    assert name == "basic_english"
    return _basic_english_normalize


class _Vocab:
    def __init__(self, tokens):
        self.itos = list(tokens)
        self.stoi = {t: i for i, t in enumerate(self.itos)}
        self.default = None

    def insert_token(self, token, index):
        self.itos.insert(index, token)
        self.stoi = {t: i for i, t in enumerate(self.itos)}

    def set_default_index(self, index):
        self.default = index

    def __len__(self):
        return len(self.itos)

    def __getitem__(self, token):
        return self.stoi.get(token, self.default)

    def lookup_indices(self, tokens):
        get, d = self.stoi.get, self.default
        return [get(t, d) for t in tokens]

    def lookup_token(self, index):
        return self.itos[index]


def vocab(ordered_dict, min_freq=1):
    return _Vocab(t for t, n in ordered_dict.items() if n >= min_freq)


device = torch.device("cpu")


# --- document 000's IMDBBertDataset, as written ------------------------------------------
class IMDBBertDataset(Dataset):
    CLS = '[CLS]'
    PAD = '[PAD]'
    SEP = '[SEP]'
    MASK = '[MASK]'
    UNK = '[UNK]'
    MASK_PERCENTAGE = 0.15
    MASKED_INDICES_COLUMN = 'masked_indices'
    TARGET_COLUMN = 'indices'
    NSP_TARGET_COLUMN = 'is_next'
    TOKEN_MASK_COLUMN = 'token_mask'
    OPTIMAL_LENGTH_PERCENTILE = 70

    def __init__(self, path: str, ds_from: int = None, ds_to: int = None, should_include_text: bool = False):
        self.ds: pd.Series = pd.read_csv(path)['review']
        if ds_from is not None or ds_to is not None:
            self.ds = self.ds[ds_from: ds_to]
        self.tokenizer = get_tokenizer('basic_english')
        self.counter = Counter()
        self.vocab = None
        self.optimal_sentence_length = None
        self.should_include_text = should_include_text
        if should_include_text:
            self.columns = ['masked_sentence', self.MASKED_INDICES_COLUMN, 'sentence', self.TARGET_COLUMN,
                            self.TOKEN_MASK_COLUMN, self.NSP_TARGET_COLUMN]
        else:
            self.columns = [self.MASKED_INDICES_COLUMN, self.TARGET_COLUMN, self.TOKEN_MASK_COLUMN,
                            self.NSP_TARGET_COLUMN]
        self.df = self.prepare_dataset()

    def __len__(self):
        return len(self.df)

    def prepare_dataset(self) -> pd.DataFrame:
        sentences, nsp, sentence_lens = [], [], []
        for review in self.ds:
            review_sentences = review.split('. ')
            sentences += review_sentences
            self._update_length(review_sentences, sentence_lens)
        self.optimal_sentence_length = self._find_optimal_sentence_length(sentence_lens)
        print("[INF] Creating vocabulary...", file=sys.stderr)
        for sentence in tqdm(sentences, file=sys.stderr):
            s = self.tokenizer(sentence)
            self.counter.update(s)
        self._fill_vocab()
        print("[INF] Preprocessing dataset...", file=sys.stderr)
        for review in tqdm(self.ds, file=sys.stderr):
            review_sentences = review.split('. ')
            if len(review_sentences) > 1:
                for i in range(len(review_sentences) - 1):
                    first, second = self.tokenizer(review_sentences[i]), self.tokenizer(review_sentences[i + 1])
                    nsp += [self._create_item(first, second, 1)]
                    first, second = self._select_false_nsp_sentences(sentences)
                    first, second = self.tokenizer(first), self.tokenizer(second)
                    nsp += [self._create_item(first, second, 0)]
        return pd.DataFrame(nsp, columns=self.columns)

    def _update_length(self, sentences: List[str], lengths: List[int]):
        for v in sentences:
            l = len(v.split())
            lengths += [l]
        return lengths

    def _find_optimal_sentence_length(self, lengths: List[int]):
        return int(np.percentile(np.array(lengths), self.OPTIMAL_LENGTH_PERCENTILE))

    def _fill_vocab(self):
        self.vocab = vocab(self.counter, min_freq=2)
        self.vocab.insert_token(self.CLS, 0)
        self.vocab.insert_token(self.PAD, 1)
        self.vocab.insert_token(self.MASK, 2)
        self.vocab.insert_token(self.SEP, 3)
        self.vocab.insert_token(self.UNK, 4)
        self.vocab.set_default_index(4)

    def _create_item(self, first: List[str], second: List[str], target: int = 1):
        updated_first, first_mask = self._preprocess_sentence(first.copy())
        updated_second, second_mask = self._preprocess_sentence(second.copy())
        nsp_sentence = updated_first + [self.SEP] + updated_second
        nsp_indices = self.vocab.lookup_indices(nsp_sentence)
        inverse_token_mask = first_mask + [True] + second_mask
        first, _ = self._preprocess_sentence(first.copy(), should_mask=False)
        second, _ = self._preprocess_sentence(second.copy(), should_mask=False)
        original_nsp_sentence = first + [self.SEP] + second
        original_nsp_indices = self.vocab.lookup_indices(original_nsp_sentence)
        if self.should_include_text:
            return (nsp_sentence, nsp_indices, original_nsp_sentence, original_nsp_indices, inverse_token_mask,
                    target)
        return (nsp_indices, original_nsp_indices, inverse_token_mask, target)

    def _select_false_nsp_sentences(self, sentences: List[str]):
        sentences_len = len(sentences)
        sentence_index = random.randint(0, sentences_len - 1)
        next_sentence_index = random.randint(0, sentences_len - 1)
        while next_sentence_index == sentence_index + 1:
            next_sentence_index = random.randint(0, sentences_len - 1)
        return sentences[sentence_index], sentences[next_sentence_index]

    def _preprocess_sentence(self, sentence: List[str], should_mask: bool = True):
        inverse_token_mask = []
        if should_mask:
            sentence, inverse_token_mask = self._mask_sentence(sentence)
        sentence, inverse_token_mask = self._pad_sentence([self.CLS] + sentence, [True] + inverse_token_mask)
        return sentence, inverse_token_mask

    def _mask_sentence(self, sentence: List[str]):
        len_s = len(sentence)
        inverse_token_mask = [True for _ in range(max(len_s, self.optimal_sentence_length))]
        mask_amount = round(len_s * self.MASK_PERCENTAGE)
        for _ in range(mask_amount):
            i = random.randint(0, len_s - 1)
            if random.random() < 0.8:
                sentence[i] = self.MASK
            else:
                j = random.randint(5, len(self.vocab) - 1)
                sentence[i] = self.vocab.lookup_token(j)
            inverse_token_mask[i] = False
        return sentence, inverse_token_mask

    def _pad_sentence(self, sentence: typing.List[str], inverse_token_mask: typing.List[bool] = None):
        len_s = len(sentence)
        if len_s >= self.optimal_sentence_length:
            s = sentence[:self.optimal_sentence_length]
        else:
            s = sentence + [self.PAD] * (self.optimal_sentence_length - len_s)
        if inverse_token_mask:
            len_m = len(inverse_token_mask)
            if len_m >= self.optimal_sentence_length:
                inverse_token_mask = inverse_token_mask[:self.optimal_sentence_length]
            else:
                inverse_token_mask = inverse_token_mask + [True] * (self.optimal_sentence_length - len_m)
        return s, inverse_token_mask


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--csv", required=True)
    p.add_argument("--rows", type=int, default=None, help="the first N rows only (ds_to)")
    a = p.parse_args()
    random.seed(0)
    t0 = time.perf_counter()
    ds = IMDBBertDataset(a.csv, ds_from=0, ds_to=a.rows)
    seconds = time.perf_counter() - t0
    print(json.dumps({"impl": "document 000 IMDBBertDataset (Python)", "reviews": len(ds.ds), "items": len(ds),
                      "sentence_length": ds.optimal_sentence_length, "vocab": len(ds.vocab), "seconds": seconds}))


if __name__ == "__main__":
    main()
