"""The language-model loss alone on CUDA: which way of computing cross-entropy over bf16 logits of
GPT-2 124M's step (16 x 1,024 rows, 50,257 words) costs least, forward and backward, before zoo's
step changes its own (tools/check_gpu.sh, part speed; issue #40: the logits' fp32 copy).

  lm_loss_bench.py [--rows 16384] [--vocab 50257] [--repeat 20]

Prints one JSON line per variant: median milliseconds of forward + backward and the largest
difference of its loss and gradient from the first variant's; a variant that torch refuses
prints its error instead.
"""
import argparse
import json

import torch
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--rows", type=int, default=16384)
p.add_argument("--vocab", type=int, default=50257)
p.add_argument("--repeat", type=int, default=20)
a = p.parse_args()
dev = torch.device("cuda")
torch.manual_seed(0)
padded = (a.vocab + 63) // 64 * 64
base = torch.randn(a.rows, padded, device=dev, dtype=torch.bfloat16) * 3
labels = torch.randint(0, a.vocab, (a.rows,), device=dev)


def autocast_ce(x):  # what zoo and eager PyTorch run today: autocast casts the logits to fp32
    with torch.autocast("cuda", dtype=torch.bfloat16):
        return F.cross_entropy(x, labels)


def log_softmax_dtype(x):  # log_softmax's own dtype argument: no separate cast kernel where torch fuses it
    return F.nll_loss(torch.log_softmax(x, -1, dtype=torch.float32), labels)


def half_to_float(x):  # the private half_to_float flag (fp16 only in some torch versions)
    return F.nll_loss(torch.ops.aten._log_softmax(x, -1, True), labels)


def logsumexp(x):  # logsumexp in fp32 minus the label's logit: no (rows, vocab) fp32 tensor kept
    xf = x.float()
    return (torch.logsumexp(xf, -1) - xf.gather(1, labels[:, None]).squeeze(1)).mean()


def chunked(x, chunk=4096):  # the rows in chunks: the fp32 copy of one chunk at a time
    total = x.new_zeros((), dtype=torch.float32)
    for s in range(0, x.size(0), chunk):
        total = total + F.cross_entropy(x[s:s + chunk].float(), labels[s:s + chunk], reduction="sum")
    return total / x.size(0)


variants = [("autocast cross_entropy (today)", autocast_ce), ("log_softmax(dtype=float32) + nll", log_softmax_dtype),
            ("_log_softmax(half_to_float=True) + nll", half_to_float), ("logsumexp - gathered logit", logsumexp),
            ("4 chunks of rows", chunked)]
for width, name_of in ((a.vocab, "narrowed to the vocabulary"), (padded, "padded width (wrong loss: timing only)")):
    ref = None
    for name, fn in variants:
        x = base[:, :width].detach().requires_grad_()
        try:
            times = []
            for i in range(a.repeat + 3):
                x.grad = None
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                start.record()
                loss = fn(x)
                loss.backward()
                end.record()
                torch.cuda.synchronize()
                if i >= 3:
                    times.append(start.elapsed_time(end))
            out = {"logits": name_of, "variant": name, "median_ms": sorted(times)[len(times) // 2]}
            if ref is None:
                ref = (loss.item(), x.grad.float())
            out["loss_diff"] = abs(loss.item() - ref[0])
            out["grad_max_diff"] = (x.grad.float() - ref[1]).abs().max().item()
        except Exception as e:  # noqa: BLE001 - a refused variant is a result
            out = {"logits": name_of, "variant": name, "error": str(e).splitlines()[0][:200]}
        print(json.dumps(out), flush=True)
