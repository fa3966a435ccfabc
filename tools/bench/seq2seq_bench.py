#!/usr/bin/python3
"""Python side of the seq2seq benchmark: document 000's own Encoder / BahdanauAttention /
Decoder (tests/py/seq2seq_doc000.py, as the document wrote them), driven as a Python user
drives them, against tools/bench/zoo_bench_seq2seq on the same shapes, threads and batch.
Prints JSON.

  --mode train  the tutorial's train_step: encoder, then one decoder call per target
                position fed the gold token, padding-masked cross-entropy summed over the
                steps, backward, clipping to norm 5, Adam.
  --mode beam   beam search in a Python loop, one sentence at a time (its beams batched),
                over the weights and sources that zoo_bench_seq2seq --save wrote; the same
                candidate rule as zoo's beam search, so both should print the same checksum.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "py"))
import seq2seq_doc000 as doc  # noqa: E402
import st_io  # noqa: E402
import bench_data  # noqa: E402  (beside this script)

PAD, BOS, EOS, FIRST_WORD = 0, 2, 3, 4

p = argparse.ArgumentParser()
p.add_argument("--mode", choices=["train", "beam"], default="train")
for name, default in [("embedding", 256), ("units", 1024), ("src-vocab", 2779), ("tgt-vocab", 6800), ("mask", 0),
                      ("batch", 64), ("src-len", 14), ("tgt-len", 12), ("steps", 10), ("warmup", 2), ("threads", 2),
                      ("sentences", 200), ("beam-batch", 100), ("beams", 4), ("max-len", 20)]:
    p.add_argument("--" + name, type=int, default=default)
p.add_argument("--default-threads", action="store_true",
               help="leave torch's thread count at its default (no torch.set_num_threads(--threads))")
p.add_argument("--load", help="beam mode: weights + sources written by zoo_bench_seq2seq --save")
a = p.parse_args()
if a.mask:
    sys.exit("seq2seq_bench.py: document 000's modules have no source mask (run with --mask 0)")
if a.units != 1024:
    sys.exit("seq2seq_bench.py: document 000's BahdanauAttention hard-codes nn.Linear(1024, units): --units must be 1024")
if not a.default_threads:
    torch.set_num_threads(a.threads)
torch.manual_seed(0)
encoder = doc.Encoder(a.src_vocab, a.embedding, a.units, a.batch)
decoder = doc.Decoder(a.tgt_vocab, a.embedding, a.units, a.batch)


def synthetic(batch, length, vocab, framed):
    return bench_data.synthetic(batch, length, vocab, framed, PAD, BOS, EOS, FIRST_WORD)


def loss_function(real, pred):
    mask = real != PAD
    return (F.cross_entropy(pred, real, reduction="none") * mask).mean()


def train():
    params = list(encoder.parameters()) + list(decoder.parameters())
    opt = torch.optim.Adam(params, lr=1e-3)
    times = []
    for i in range(a.warmup + a.steps):
        inp = synthetic(a.batch, a.src_len, a.src_vocab, False)
        targ = synthetic(a.batch, a.tgt_len, a.tgt_vocab, True)
        t0 = time.perf_counter()
        opt.zero_grad()
        enc_output, enc_hidden = encoder(inp, torch.zeros(1, inp.size(0), a.units))
        dec_hidden = enc_hidden
        loss = 0
        for t in range(1, targ.shape[1]):
            predictions, dec_hidden, _ = decoder(targ[:, t - 1].unsqueeze(1), dec_hidden, enc_output)
            loss = loss + loss_function(targ[:, t], predictions)
        (loss / (targ.shape[1] - 1)).backward()
        torch.nn.utils.clip_grad_norm_(params, 5.0)
        opt.step()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({"impl": "document 000 PyTorch (Python)", "mode": "train", "threads": torch.get_num_threads(),
                      "batch": a.batch, "median_step_ms": 1000 * times[len(times) // 2]}))


def beam_one(src):
    """Beam search for one sentence (1, S): its beams are the batch of each decoder call."""
    k = a.beams
    enc_output, hidden = encoder(src, torch.zeros(1, 1, a.units))
    enc_output = enc_output.expand(k, -1, -1)
    hidden = hidden.expand(-1, k, -1).contiguous()
    seqs = [[] for _ in range(k)]
    scores = torch.full((k,), -math.inf)  # float32 sums, as zoo's search adds them
    scores[0] = 0
    prev = torch.full((k, 1), BOS, dtype=torch.long)
    finished = []  # (score, tokens)
    for t in range(a.max_len):
        logits, hidden, _ = decoder(prev, hidden, enc_output)
        cand = (F.log_softmax(logits, -1) + scores.unsqueeze(1)).view(-1)
        vocab = logits.size(1)
        top_scores, top_ids = cand.topk(min(2 * k, cand.numel()))
        rows, toks, nxt = [], [], []
        for j, (s, i) in enumerate(zip(top_scores.tolist(), top_ids.tolist())):
            if not math.isfinite(s):
                break
            row, tok = i // vocab, i % vocab
            if tok == EOS:
                if j < k:
                    finished.append((s / (len(seqs[row]) + 1), seqs[row] + [tok]))
            elif len(rows) < k:
                rows.append(row), toks.append(tok), nxt.append(s)
            if len(rows) == k and j + 1 >= k:
                break
        best_live = nxt[0] if nxt else -math.inf
        done = t + 1 == a.max_len or not math.isfinite(best_live)
        if not done and finished:
            d1, d2 = t + 2, a.max_len
            bound = best_live / max(d1, d2) if best_live <= 0 else best_live / min(d1, d2)
            done = max(f[0] for f in finished) >= bound
        if done:
            if not finished:
                finished = [(s / (len(seqs[r]) + 1), seqs[r] + [tok]) for s, r, tok in zip(nxt, rows, toks)]
            return max(finished, key=lambda f: f[0])[1]
        while len(rows) < k:  # too few live extensions: inactive beams
            rows.append(0), toks.append(EOS), nxt.append(-math.inf)
        index = torch.tensor(rows)
        hidden = hidden.index_select(1, index)
        seqs = [seqs[r] + [tok] for r, tok in zip(rows, toks)]
        scores = torch.tensor(nxt)
        prev = torch.tensor(toks).unsqueeze(1)
    raise AssertionError("unreachable")


def beam():
    if not a.load:
        sys.exit("seq2seq_bench.py: --mode beam needs --load FILE (from zoo_bench_seq2seq --save)")
    tensors = st_io.load(a.load)
    encoder.load_state_dict({k[len("encoder."):]: v for k, v in tensors.items() if k.startswith("encoder.")})
    decoder.load_state_dict({k[len("decoder."):]: v for k, v in tensors.items() if k.startswith("decoder.")})
    encoder.eval(), decoder.eval()
    src = tensors["src"]
    checksum = tokens = 0
    t0 = time.perf_counter()
    with torch.no_grad():
        for s in range(src.size(0)):
            out = beam_one(src[s:s + 1])
            for tok in out:
                checksum = (checksum * 31 + tok) % 1000000007
            tokens += len(out)
    dt = time.perf_counter() - t0
    print(json.dumps({"impl": "document 000 PyTorch (Python loop)", "mode": "beam", "threads": torch.get_num_threads(),
                      "beams": a.beams, "sentences": src.size(0), "sentences_per_s": src.size(0) / dt,
                      "output_tokens": tokens, "checksum": checksum}))


train() if a.mode == "train" else beam()
