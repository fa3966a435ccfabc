"""Hugging Face's ViTForImageClassification, re-written in plain PyTorch.

The module tree and parameter names follow transformers' modeling_vit.py
(ViTEmbeddings, ViTSelfAttention, ViTSelfOutput, ViTIntermediate, ViTOutput, ViTLayer,
ViTEncoder, ViTModel without pooler, classifier), so `load_state_dict(strict=True)` on a
zoo export fails on any name or shape mismatch, as transformers' from_pretrained would.
Also the Python side of tools/bench/vit_bench.py.

  hf_vit.py logits MODEL_DIR INPUT.safetensors OUTPUT.safetensors
      builds the model from MODEL_DIR/config.json (Hugging Face format), loads
      MODEL_DIR/model.safetensors strictly, writes logits of INPUT's "pixel_values".
  hf_vit.py make MODEL_DIR SEED
      writes a randomly initialised model as a Hugging Face checkpoint
      (config.json with id2label, model.safetensors).
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
        self.hidden_size = d.get("hidden_size", 768)
        self.num_hidden_layers = d.get("num_hidden_layers", 12)
        self.num_attention_heads = d.get("num_attention_heads", 12)
        self.intermediate_size = d.get("intermediate_size", 3072)
        self.hidden_act = d.get("hidden_act", "gelu")
        self.hidden_dropout_prob = d.get("hidden_dropout_prob", 0.0)
        self.attention_probs_dropout_prob = d.get("attention_probs_dropout_prob", 0.0)
        self.layer_norm_eps = d.get("layer_norm_eps", 1e-12)
        self.image_size = d.get("image_size", 224)
        self.patch_size = d.get("patch_size", 16)
        self.num_channels = d.get("num_channels", 3)
        self.qkv_bias = d.get("qkv_bias", True)
        self.num_labels = len(d["id2label"]) if "id2label" in d else d.get("num_labels", 2)


def act(name):
    return {"gelu": nn.GELU(), "relu": nn.ReLU(), "silu": nn.SiLU(),
            "gelu_new": nn.GELU(approximate="tanh"), "gelu_pytorch_tanh": nn.GELU(approximate="tanh")}[name]


class ViTPatchEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.projection = nn.Conv2d(c.num_channels, c.hidden_size, c.patch_size, stride=c.patch_size)

    def forward(self, x):
        return self.projection(x).flatten(2).transpose(1, 2)


class ViTEmbeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        n = (c.image_size // c.patch_size) ** 2
        self.cls_token = nn.Parameter(torch.randn(1, 1, c.hidden_size) * 0.02)
        self.patch_embeddings = ViTPatchEmbeddings(c)
        self.position_embeddings = nn.Parameter(torch.randn(1, n + 1, c.hidden_size) * 0.02)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, x):
        e = self.patch_embeddings(x)
        e = torch.cat([self.cls_token.expand(e.shape[0], -1, -1), e], dim=1)
        return self.dropout(e + self.position_embeddings)


class ViTSelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads = c.num_attention_heads
        self.head_size = c.hidden_size // c.num_attention_heads
        self.query = nn.Linear(c.hidden_size, c.hidden_size, bias=c.qkv_bias)
        self.key = nn.Linear(c.hidden_size, c.hidden_size, bias=c.qkv_bias)
        self.value = nn.Linear(c.hidden_size, c.hidden_size, bias=c.qkv_bias)
        self.dropout = nn.Dropout(c.attention_probs_dropout_prob)

    def split(self, x):
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_size).permute(0, 2, 1, 3)

    def forward(self, h):
        q, k, v = self.split(self.query(h)), self.split(self.key(h)), self.split(self.value(h))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_size)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.shape[0], ctx.shape[1], -1)


class ViTSelfOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.hidden_size)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, h):
        return self.dropout(self.dense(h))


class ViTAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = ViTSelfAttention(c)
        self.output = ViTSelfOutput(c)

    def forward(self, h):
        return self.output(self.attention(h))


class ViTIntermediate(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.hidden_size, c.intermediate_size)
        self.act = act(c.hidden_act)

    def forward(self, h):
        return self.act(self.dense(h))


class ViTOutput(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.dense = nn.Linear(c.intermediate_size, c.hidden_size)
        self.dropout = nn.Dropout(c.hidden_dropout_prob)

    def forward(self, h, residual):
        return self.dropout(self.dense(h)) + residual


class ViTLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attention = ViTAttention(c)
        self.intermediate = ViTIntermediate(c)
        self.output = ViTOutput(c)
        self.layernorm_before = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)
        self.layernorm_after = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x):
        x = self.attention(self.layernorm_before(x)) + x
        return self.output(self.intermediate(self.layernorm_after(x)), x)


class ViTEncoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(c) for _ in range(c.num_hidden_layers)])

    def forward(self, x):
        for layer in self.layer:
            x = layer(x)
        return x


class ViTModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = ViTEmbeddings(c)
        self.encoder = ViTEncoder(c)
        self.layernorm = nn.LayerNorm(c.hidden_size, eps=c.layer_norm_eps)

    def forward(self, x):
        return self.layernorm(self.encoder(self.embeddings(x)))


class ViTForImageClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.vit = ViTModel(c)
        self.classifier = nn.Linear(c.hidden_size, c.num_labels)

    def forward(self, x):
        return self.classifier(self.vit(x)[:, 0, :])


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    assert cfg.get("model_type") == "vit", cfg.get("model_type")
    assert cfg.get("architectures") in (None, ["ViTForImageClassification"])
    model = ViTForImageClassification(Config(cfg))
    model.load_state_dict(st_io.load(os.path.join(model_dir, "model.safetensors")), strict=True)
    return model.eval()


def main(argv):
    if argv[1] == "logits":
        model = load(argv[2])
        x = st_io.load(argv[3])["pixel_values"]
        with torch.no_grad():
            st_io.save(argv[4], {"logits": model(x)})
    elif argv[1] == "make":
        torch.manual_seed(int(argv[3]))
        cfg = {"model_type": "vit", "architectures": ["ViTForImageClassification"], "hidden_size": 32,
               "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 48,
               "hidden_act": "gelu", "image_size": 16, "patch_size": 4, "num_channels": 3,
               "qkv_bias": True, "layer_norm_eps": 1e-12, "initializer_range": 0.02,
               "transformers_version": "4.35.0", "torch_dtype": "float32", "encoder_stride": 4,
               "id2label": {"0": "cat", "1": "dog", "2": "bird"}, "label2id": {"cat": 0, "dog": 1, "bird": 2}}
        model = ViTForImageClassification(Config(cfg))
        for p in model.parameters():  # non-trivial values everywhere (LayerNorms too)
            with torch.no_grad():
                p.add_(torch.randn_like(p) * 0.1)
        os.makedirs(argv[2], exist_ok=True)
        with open(os.path.join(argv[2], "config.json"), "w") as f:
            json.dump(cfg, f, indent=2)
        st_io.save(os.path.join(argv[2], "model.safetensors"), model.state_dict(), {"format": "pt"})
    else:
        sys.exit(f"unknown command {argv[1]}")


if __name__ == "__main__":
    main(sys.argv)
