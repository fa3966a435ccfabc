"""Hugging Face's GPT2LMHeadModel, re-written in plain PyTorch (an independent reference).

The module tree and parameter names follow transformers' modeling_gpt2.py (Conv1D with
(in, out) weights, GPT2Attention with c_attn/c_proj, GPT2MLP with c_fc/c_proj, ln_1/ln_2,
wte/wpe/ln_f, lm_head tied to wte), so `load_state_dict(strict=True)` on a zoo export fails
on any name or shape mismatch, as transformers' from_pretrained would. Also the Python side
of tools/bench/gpt_bench.py (a nanoGPT-style training step).

  hf_gpt2.py logits MODEL_DIR INPUT.safetensors OUTPUT.safetensors
      builds the model from MODEL_DIR/config.json, loads MODEL_DIR/model.safetensors
      strictly, writes the logits of INPUT's "input_ids".
  hf_gpt2.py make MODEL_DIR SEED [bare]
      writes a randomly initialised model as a Hugging Face checkpoint (config.json,
      model.safetensors, and a byte-level BPE tokenizer: vocab.json + merges.txt with the 256
      byte symbols, three merges and <|endoftext|>); with "bare", the tensor names of a
      GPT2Model save (h.0..., wte...) plus the attn.bias mask buffers, as in the original gpt2
      checkpoint.
  hf_gpt2.py greedy MODEL_DIR N ID...
      prints the N ids that greedy decoding (recomputing the prefix) appends to the ids.
"""
import json
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402


class Config:
    def __init__(self, d):
        self.vocab_size = d.get("vocab_size", 50257)
        self.n_positions = d.get("n_positions", 1024)
        self.n_embd = d.get("n_embd", 768)
        self.n_layer = d.get("n_layer", 12)
        self.n_head = d.get("n_head", 12)
        self.n_inner = d.get("n_inner") or 4 * self.n_embd
        self.activation_function = d.get("activation_function", "gelu_new")
        self.layer_norm_epsilon = d.get("layer_norm_epsilon", 1e-5)


class Conv1D(nn.Module):
    """y = x W + b with W of shape (in, out), as GPT-2's original TensorFlow code."""

    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(nx, nf).normal_(std=0.02))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        return torch.addmm(self.bias, x.reshape(-1, x.size(-1)), self.weight).view(*x.shape[:-1], -1)


def act(name, x):
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    if name == "gelu":
        return nn.functional.gelu(x)
    if name == "relu":
        return torch.relu(x)
    if name == "silu":
        return nn.functional.silu(x)
    raise ValueError(name)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.n_embd = c.n_head, c.n_embd
        self.c_attn = Conv1D(3 * c.n_embd, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_embd)

    def forward(self, x):
        b, t, h = x.shape
        q, k, v = self.c_attn(x).split(h, dim=2)
        q, k, v = (z.view(b, t, self.n_head, h // self.n_head).transpose(1, 2) for z in (q, k, v))
        w = q @ k.transpose(-1, -2) / math.sqrt(h // self.n_head)
        mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
        w = w.masked_fill(~mask, torch.finfo(w.dtype).min).softmax(-1)
        return self.c_proj((w @ v).transpose(1, 2).reshape(b, t, h))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.act = c.activation_function
        self.c_fc = Conv1D(c.n_inner, c.n_embd)
        self.c_proj = Conv1D(c.n_embd, c.n_inner)

    def forward(self, x):
        return self.c_proj(act(self.act, self.c_fc(x)))


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.ln_1 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.attn = Attention(c)
        self.ln_2 = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)
        self.mlp = MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c.vocab_size, c.n_embd)
        self.wpe = nn.Embedding(c.n_positions, c.n_embd)
        self.h = nn.ModuleList([Block(c) for _ in range(c.n_layer)])
        self.ln_f = nn.LayerNorm(c.n_embd, eps=c.layer_norm_epsilon)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.size(1)))
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)

    def forward(self, ids):
        return self.transformer(ids) @ self.transformer.wte.weight.t()


def bytes_to_unicode():
    """GPT-2's encoder.py mapping of bytes to printable characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


MERGES = [("Ġ", "t"), ("h", "e"), ("Ġt", "he")]


def write_tokenizer(model_dir):
    vocab = {ch: b for b, ch in sorted(bytes_to_unicode().items())}
    for a, b in MERGES:
        vocab[a + b] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    with open(os.path.join(model_dir, "vocab.json"), "w") as f:
        json.dump(vocab, f)
    with open(os.path.join(model_dir, "merges.txt"), "w") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in MERGES))
    return len(vocab)


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config["architectures"] == ["GPT2LMHeadModel"], config.get("architectures")
    assert config["model_type"] == "gpt2"
    model = GPT2LMHeadModel(Config(config))
    tensors = st_io.load(os.path.join(model_dir, "model.safetensors"))
    if not any(k.startswith("transformer.") for k in tensors):  # a GPT2Model save, as transformers
        tensors = {"transformer." + k: v for k, v in tensors.items() if not k.endswith(".attn.bias")}
    model.load_state_dict(tensors, strict=True)
    return model.eval()


def main():
    mode = sys.argv[1]
    if mode == "logits":
        model_dir, inp, out = sys.argv[2:5]
        model = load(model_dir)
        ids = st_io.load(inp)["input_ids"]
        with torch.no_grad():
            st_io.save(out, {"logits": model(ids).contiguous()})
    elif mode == "greedy":
        model = load(sys.argv[2])
        n, ids = int(sys.argv[3]), [int(x) for x in sys.argv[4:]]
        out = []
        with torch.no_grad():
            for _ in range(n):
                out.append(int(model(torch.tensor([ids + out]))[0, -1].argmax()))
        print(" ".join(map(str, out)))
    elif mode == "make":
        model_dir, seed = sys.argv[2], int(sys.argv[3])
        bare = len(sys.argv) > 4 and sys.argv[4] == "bare"
        torch.manual_seed(seed)
        os.makedirs(model_dir, exist_ok=True)
        vocab_size = write_tokenizer(model_dir)
        config = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": vocab_size,
                  "n_positions": 32, "n_embd": 48, "n_layer": 2, "n_head": 4, "n_inner": None,
                  "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5,
                  "bos_token_id": vocab_size - 1, "eos_token_id": vocab_size - 1}
        model = GPT2LMHeadModel(Config(config))
        with torch.no_grad():
            for p in model.parameters():
                p.normal_(0, 0.1)
        tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
        if bare:
            tensors = {k[len("transformer."):]: v for k, v in tensors.items()}
            for i in range(config["n_layer"]):
                t = config["n_positions"]
                tensors[f"h.{i}.attn.bias"] = torch.tril(torch.ones(t, t)).view(1, 1, t, t)
        os.makedirs(model_dir, exist_ok=True)
        with open(os.path.join(model_dir, "config.json"), "w") as f:
            json.dump(config, f)
        st_io.save(os.path.join(model_dir, "model.safetensors"), tensors, {"format": "pt"})
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
