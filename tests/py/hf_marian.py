"""Hugging Face's MarianMTModel, re-written in plain PyTorch (an independent reference).

The module tree and parameter names follow transformers' modeling_marian.py (MarianModel
with shared / encoder / decoder, MarianEncoderLayer and MarianDecoderLayer with q/k/v/out
projections, self_attn_layer_norm, encoder_attn_layer_norm, fc1, fc2, final_layer_norm,
the sinusoidal tables as embed_positions.weight, lm_head and final_logits_bias), so
`load_state_dict(strict=True)` on a zoo export fails on any name or shape mismatch, as
transformers' from_pretrained would.

  hf_marian.py logits MODEL_DIR INPUT.safetensors OUTPUT.safetensors
      builds the model from MODEL_DIR/config.json (model_type marian), loads
      MODEL_DIR/model.safetensors strictly, writes the logits of INPUT's input_ids (B, S,
      padded with pad_token_id) and decoder_input_ids (B, T).
"""
import json
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402


def activation(name):
    return {"relu": torch.relu, "gelu": nn.functional.gelu, "silu": nn.functional.silu,
            "swish": nn.functional.silu}[name]


def sinusoidal(n_pos, dim):
    """Marian's table: column j < dim/2 is sin(p / 10000^(2j/dim)), column dim/2 + j its cos."""
    pos = torch.arange(n_pos, dtype=torch.float64).unsqueeze(1)
    enc = pos / torch.pow(10000.0, 2 * (torch.arange(dim, dtype=torch.float64) // 2) / dim)
    out = torch.zeros(n_pos, dim, dtype=torch.float64)
    half = dim // 2 + dim % 2
    out[:, :half] = torch.sin(enc[:, 0::2])
    out[:, half:] = torch.cos(enc[:, 1::2])
    return out.float()


class Positions(nn.Module):
    def __init__(self, n_pos, dim):
        super().__init__()
        self.weight = nn.Parameter(sinusoidal(n_pos, dim), requires_grad=False)

    def forward(self, length):
        return self.weight[:length]


class Attention(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))

    def forward(self, x, kv, bias):
        b, t, d = x.shape
        s = kv.size(1)
        hd = d // self.heads
        q = (self.q_proj(x) * hd ** -0.5).view(b, t, self.heads, hd).transpose(1, 2)
        k = self.k_proj(kv).view(b, s, self.heads, hd).transpose(1, 2)
        v = self.v_proj(kv).view(b, s, self.heads, hd).transpose(1, 2)
        w = (q @ k.transpose(-1, -2) + bias).softmax(-1)
        return self.out_proj((w @ v).transpose(1, 2).reshape(b, t, d))


class EncoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.self_attn = Attention(d, c["encoder_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, c["encoder_ffn_dim"])
        self.fc2 = nn.Linear(c["encoder_ffn_dim"], d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.act = activation(c["activation_function"])

    def forward(self, x, bias):
        x = self.self_attn_layer_norm(x + self.self_attn(x, x, bias))
        return self.final_layer_norm(x + self.fc2(self.act(self.fc1(x))))


class DecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.self_attn = Attention(d, c["decoder_attention_heads"])
        self.self_attn_layer_norm = nn.LayerNorm(d)
        self.encoder_attn = Attention(d, c["decoder_attention_heads"])
        self.encoder_attn_layer_norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, c["decoder_ffn_dim"])
        self.fc2 = nn.Linear(c["decoder_ffn_dim"], d)
        self.final_layer_norm = nn.LayerNorm(d)
        self.act = activation(c["activation_function"])

    def forward(self, x, memory, self_bias, cross_bias):
        x = self.self_attn_layer_norm(x + self.self_attn(x, x, self_bias))
        x = self.encoder_attn_layer_norm(x + self.encoder_attn(x, memory, cross_bias))
        return self.final_layer_norm(x + self.fc2(self.act(self.fc1(x))))


class Stack(nn.Module):
    def __init__(self, c, vocab, n_layers, layer):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, c["d_model"], c["pad_token_id"])
        self.embed_positions = Positions(c["max_position_embeddings"], c["d_model"])
        self.layers = nn.ModuleList([layer(c) for _ in range(n_layers)])
        self.scale = math.sqrt(c["d_model"]) if c.get("scale_embedding", False) else 1.0

    def embed(self, ids):
        return self.embed_tokens(ids) * self.scale + self.embed_positions(ids.size(1))


class MarianModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        share = c.get("share_encoder_decoder_embeddings", True)
        if share:
            self.shared = nn.Embedding(c["vocab_size"], c["d_model"], c["pad_token_id"])
        self.encoder = Stack(c, c["vocab_size"], c["encoder_layers"], EncoderLayer)
        self.decoder = Stack(c, c.get("decoder_vocab_size") or c["vocab_size"], c["decoder_layers"], DecoderLayer)


class MarianMTModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = MarianModel(c)
        vocab = c.get("decoder_vocab_size") or c["vocab_size"]
        self.lm_head = nn.Linear(c["d_model"], vocab, bias=False)
        self.register_buffer("final_logits_bias", torch.zeros(1, vocab))
        self.pad = c["pad_token_id"]

    def forward(self, input_ids, decoder_input_ids):
        neg = torch.finfo(torch.float32).min
        cross_bias = (input_ids == self.pad).float()[:, None, None, :] * neg
        x = self.model.encoder.embed(input_ids)
        for layer in self.model.encoder.layers:
            x = layer(x, cross_bias)
        t = decoder_input_ids.size(1)
        causal = torch.triu(torch.full((t, t), neg), 1)[None, None]
        y = self.model.decoder.embed(decoder_input_ids)
        for layer in self.model.decoder.layers:
            y = layer(y, x, causal, cross_bias)
        return self.lm_head(y) + self.final_logits_bias


def load(model_dir):
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    assert config["model_type"] == "marian", config.get("model_type")
    assert config["architectures"] == ["MarianMTModel"], config.get("architectures")
    model = MarianMTModel(config)
    model.load_state_dict(st_io.load(os.path.join(model_dir, "model.safetensors")), strict=True)
    return model.eval()


def main():
    mode = sys.argv[1]
    if mode == "logits":
        model_dir, inp, out = sys.argv[2:5]
        model = load(model_dir)
        t = st_io.load(inp)
        with torch.no_grad():
            logits = model(t["input_ids"], t["decoder_input_ids"])
        st_io.save(out, {"logits": logits.contiguous()})
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
