"""Shared by the Python sides of the benchmarks: the synthetic sentences the C++ sides build
(tools/bench/bench_util.h, synthetic_sentences)."""
import torch


def synthetic(batch, length, vocab, framed, pad, bos, eos, first_word):
    """(batch, length) random tokens; row r is length - r % (length // 2) long, framed by
    bos/eos if asked, padded at the end."""
    x = torch.randint(first_word, vocab, (batch, length))
    for r in range(batch):
        n = length - r % max(1, length // 2)
        if framed:
            x[r, 0], x[r, n - 1] = bos, eos
        x[r, n:] = pad
    return x
