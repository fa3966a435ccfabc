"""Hugging Face's BertForPreTraining and BertForSequenceClassification, re-written in plain
PyTorch (an independent reference). Module names follow transformers' modeling_bert.py
(bert.embeddings.*, bert.encoder.layer.N.attention.self.query, ...attention.output.LayerNorm,
intermediate.dense, output.dense, output.LayerNorm, bert.pooler.dense, cls.predictions.*
with the decoder tied to the word embedding, cls.seq_relationship, classifier), so a strict
load fails on any name or shape mismatch.

  hf_bert.py logits MODEL_DIR HEAD INPUT.safetensors OUTPUT.safetensors
      HEAD: pretraining | classification. INPUT holds input_ids, token_type_ids and
      attention_mask; OUTPUT gets prediction_logits + seq_relationship_logits, or logits.
"""
import json
import math
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402


def act(name, x):
    if name == "gelu":
        return nn.functional.gelu(x)
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))
    return {"relu": torch.relu, "silu": nn.functional.silu}[name](x)


class Dense(nn.Module):  # a module with .dense (and .LayerNorm), as Hugging Face nests them
    def __init__(self, i, o, c=None):
        super().__init__()
        self.dense = nn.Linear(i, o)
        if c is not None:
            self.LayerNorm = nn.LayerNorm(o, eps=c["layer_norm_eps"])


class SelfAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.heads = c["num_attention_heads"]
        self.query, self.key, self.value = nn.Linear(h, h), nn.Linear(h, h), nn.Linear(h, h)

    def forward(self, x, bias):
        b, t, h = x.shape
        d = h // self.heads
        q, k, v = (m(x).view(b, t, self.heads, d).transpose(1, 2) for m in (self.query, self.key, self.value))
        w = (q @ k.transpose(-1, -2) / math.sqrt(d) + bias).softmax(-1)
        return (w @ v).transpose(1, 2).reshape(b, t, h)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.self = SelfAttention(c)
        self.output = Dense(c["hidden_size"], c["hidden_size"], c)


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.attention = Attention(c)
        self.intermediate = Dense(c["hidden_size"], c["intermediate_size"])
        self.output = Dense(c["intermediate_size"], c["hidden_size"], c)

    def forward(self, x, bias):
        a = self.attention
        x = a.output.LayerNorm(x + a.output.dense(a.self(x, bias)))
        f = self.output.dense(act(self.c["hidden_act"], self.intermediate.dense(x)))
        return self.output.LayerNorm(x + f)


class Embeddings(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden_size"]
        self.word_embeddings = nn.Embedding(c["vocab_size"], h)
        self.position_embeddings = nn.Embedding(c["max_position_embeddings"], h)
        self.token_type_embeddings = nn.Embedding(c["type_vocab_size"], h)
        self.LayerNorm = nn.LayerNorm(h, eps=c["layer_norm_eps"])

    def forward(self, ids, types):
        pos = torch.arange(ids.size(1))
        return self.LayerNorm(self.word_embeddings(ids) + self.token_type_embeddings(types) + self.position_embeddings(pos))


class Encoder(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.layer = nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embeddings = Embeddings(c)
        self.encoder = Encoder(c)
        self.pooler = Dense(c["hidden_size"], c["hidden_size"])

    def forward(self, ids, types, mask):
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        x = self.embeddings(ids, types)
        for layer in self.encoder.layer:
            x = layer(x, bias)
        return x, torch.tanh(self.pooler.dense(x[:, 0]))


class Predictions(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transform = Dense(c["hidden_size"], c["hidden_size"], c)
        self.decoder = nn.Linear(c["hidden_size"], c["vocab_size"])
        self.bias = nn.Parameter(torch.zeros(c["vocab_size"]))


class Heads(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.predictions = Predictions(c)
        self.seq_relationship = nn.Linear(c["hidden_size"], 2)


class BertForPreTraining(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.bert = Bert(c)
        self.cls = Heads(c)

    def forward(self, ids, types, mask):
        x, pooled = self.bert(ids, types, mask)
        p = self.cls.predictions
        t = p.transform.LayerNorm(act(self.c["hidden_act"], p.transform.dense(x)))
        return {"prediction_logits": p.decoder(t), "seq_relationship_logits": self.cls.seq_relationship(pooled)}


class BertForSequenceClassification(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.bert = Bert(c)
        self.classifier = nn.Linear(c["hidden_size"], c["num_labels"])

    def forward(self, ids, types, mask):
        return {"logits": self.classifier(self.bert(ids, types, mask)[1])}


def main():
    mode, model_dir, head, inp, out = sys.argv[1:6]
    assert mode == "logits"
    with open(os.path.join(model_dir, "config.json")) as f:
        config = json.load(f)
    model = (BertForPreTraining if head == "pretraining" else BertForSequenceClassification)(config)
    tensors = st_io.load(os.path.join(model_dir, "model.safetensors"))
    model.load_state_dict(tensors, strict=True)
    model.eval()
    t = st_io.load(inp)
    with torch.no_grad():
        result = model(t["input_ids"], t["token_type_ids"], t["attention_mask"])
    st_io.save(out, {k: v.contiguous() for k, v in result.items()})


if __name__ == "__main__":
    main()
