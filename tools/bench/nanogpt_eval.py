"""Shared by nanogpt_char_ref.py, nanogpt_val_estimate.py and tests/py/transformers_check.py:
the validation split of a zoo run's token stream, nanoGPT's random windows and its
validation-loss estimate, zoo eval's whole-split loss, and the spread of many estimates. A
model is given as loss(x, y): the mean next-token loss of windows x with targets y."""
import json
import math

import numpy as np
import torch


def validation_split(tokens, fraction):
    """The last `fraction` of a zoo run's token stream (tokens.bin; its .json gives the width),
    as zoo's language_modeling task cuts it, as int64."""
    with open(tokens + ".json") as f:
        width = json.load(f)["bytes_per_token"]
    stream = np.fromfile(tokens, dtype={2: np.uint16, 4: np.uint32}[width]).astype(np.int64)
    return torch.from_numpy(stream[len(stream) - math.floor(len(stream) * fraction):])


def random_windows(data, block_size, batch_size):
    """nanoGPT's get_batch: batch_size random windows of data and their next tokens."""
    ix = torch.randint(len(data) - block_size, (batch_size,))
    return (torch.stack([data[i:i + block_size] for i in ix]),
            torch.stack([data[i + 1:i + 1 + block_size] for i in ix]))


@torch.no_grad()
def estimate(loss, data, block_size, batch_size, eval_iters):
    """nanoGPT's estimate_loss for one split: the mean loss of eval_iters random batches."""
    return torch.stack([loss(*random_windows(data, block_size, batch_size)) for _ in range(eval_iters)]).mean().item()


@torch.no_grad()
def whole_split(loss, data, block_size, rows=64, max_windows=0):
    """zoo eval's protocol: the mean loss over every consecutive block_size window of data, or
    over max_windows of them spread evenly (data.max_eval_windows) when there are more."""
    available = (len(data) - 1) // block_size
    count = min(available, max_windows) if max_windows > 0 else available
    starts = [(j * available // count) * block_size for j in range(count)]
    total = 0.0
    for i in range(0, count, rows):
        ids = torch.stack([data[s:s + block_size + 1] for s in starts[i:i + rows]])
        total += loss(ids[:, :-1], ids[:, 1:]).item() * len(ids) * block_size
    return total / (count * block_size)


def spread(figures, threshold):
    """Mean, standard deviation, range and the share at or below threshold of many estimates."""
    f = torch.tensor(figures, dtype=torch.float64)
    return {"estimates": len(figures), "mean": f.mean().item(), "std": f.std().item(), "min": f.min().item(),
            "max": f.max().item(), "threshold": threshold, "share_at_or_below": (f <= threshold).double().mean().item()}
