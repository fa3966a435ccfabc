"""Document 002's PyTorch Transformer (its "Transformer的实现" section: ScaledDotProductAttention,
MultiHeadAttention, PositionalEncoding, PositionalWiseFeedForward, EncoderLayer, Encoder,
DecoderLayer, Decoder, Transformer), copied below with the document's defects fixed
(docs/sources.md lists them), run on random weights in eval mode, for
tests/transformer_test.cc's twin of zoo's Transformer.

The fixes, each marked FIX below:
  - MultiHeadAttention splits heads with view + transpose (the document: view alone, which
    mixes positions across heads), scales by dim_per_head ** -0.5 (the document:
    (dim_per_head // num_heads) ** -0.5) and tests its mask with `is not None`;
  - PositionalWiseFeedForward's second layer maps ffn_dim -> model_dim;
  - DecoderLayer has its own attention for the encoder's output (the document reuses the
    self-attention's module);
  - Transformer masks the encoder's padding in the context attention, padding_mask(src, tgt)
    (the document: padding_mask(tgt_seq, src_seq), keys and queries swapped);
  - EncoderLayer passes its attn_mask (the document: a global `padding_mask`).

  doc002_transformer.py OUT_DIR
      writes OUT_DIR/doc002.safetensors with the weights under zoo's Transformer names
      (Marian's: model.encoder.layers.N.self_attn.q_proj, ...) and OUT_DIR/io002.safetensors
      with src, tgt (right-padded with 0), their lengths and the document's logits (the
      output Linear before its softmax).
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402


class ScaledDotProductAttention(nn.Module):
    def __init__(self, attention_dropout=0.0):
        super(ScaledDotProductAttention, self).__init__()
        self.dropout = nn.Dropout(attention_dropout)
        self.softmax = nn.Softmax(dim=2)

    def forward(self, q, k, v, scale=None, attn_mask=None):
        attention = torch.bmm(q, k.transpose(1, 2))
        if scale:
            attention = attention * scale
        if attn_mask is not None:  # FIX: `if attn_mask:` fails on a tensor
            attention = attention.masked_fill_(attn_mask, -np.inf)
        attention = self.softmax(attention)
        attention = self.dropout(attention)
        context = torch.bmm(attention, v)
        return context, attention


class MultiHeadAttention(nn.Module):
    def __init__(self, model_dim=512, num_heads=8, dropout=0.0):
        super(MultiHeadAttention, self).__init__()
        self.dim_per_head = model_dim // num_heads
        self.num_heads = num_heads
        self.linear_k = nn.Linear(model_dim, self.dim_per_head * num_heads)
        self.linear_v = nn.Linear(model_dim, self.dim_per_head * num_heads)
        self.linear_q = nn.Linear(model_dim, self.dim_per_head * num_heads)
        self.dot_product_attention = ScaledDotProductAttention(dropout)
        self.linear_final = nn.Linear(model_dim, model_dim)
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(model_dim)

    def forward(self, key, value, query, attn_mask=None):
        residual = query
        dim_per_head = self.dim_per_head
        num_heads = self.num_heads
        batch_size = key.size(0)
        key = self.linear_k(key)
        value = self.linear_v(value)
        query = self.linear_q(query)

        # FIX: split by heads with a transpose, head-major within each sentence
        def split(t):
            return t.view(batch_size, -1, num_heads, dim_per_head).transpose(1, 2).reshape(
                batch_size * num_heads, -1, dim_per_head)
        key, value, query = split(key), split(value), split(query)
        if attn_mask is not None:
            attn_mask = attn_mask.repeat_interleave(num_heads, 0)  # FIX: row b * heads + h
        scale = dim_per_head ** -0.5  # FIX: 1 / sqrt(d_k) of the heads' width
        context, attention = self.dot_product_attention(query, key, value, scale, attn_mask)
        context = context.view(batch_size, num_heads, -1, dim_per_head).transpose(1, 2).reshape(
            batch_size, -1, dim_per_head * num_heads)
        output = self.linear_final(context)
        output = self.dropout(output)
        output = self.layer_norm(residual + output)
        return output, attention


def padding_mask(seq_k, seq_q):
    len_q = seq_q.size(1)
    pad_mask = seq_k.eq(0)
    pad_mask = pad_mask.unsqueeze(1).expand(-1, len_q, -1)
    return pad_mask


def sequence_mask(seq):
    batch_size, seq_len = seq.size()
    mask = torch.triu(torch.ones((seq_len, seq_len), dtype=torch.uint8), diagonal=1)
    mask = mask.unsqueeze(0).expand(batch_size, -1, -1)
    return mask


class PositionalEncoding(nn.Module):
    def __init__(self, d_model, max_seq_len):
        super(PositionalEncoding, self).__init__()
        position_encoding = np.array([
            [pos / np.power(10000, 2.0 * (j // 2) / d_model) for j in range(d_model)]
            for pos in range(max_seq_len)])
        position_encoding[:, 0::2] = np.sin(position_encoding[:, 0::2])
        position_encoding[:, 1::2] = np.cos(position_encoding[:, 1::2])
        pad_row = torch.zeros([1, d_model])
        position_encoding = torch.cat((pad_row, torch.from_numpy(position_encoding).float()))
        self.position_encoding = nn.Embedding(max_seq_len + 1, d_model)
        self.position_encoding.weight = nn.Parameter(position_encoding, requires_grad=False)

    def forward(self, input_len):
        max_len = torch.max(input_len)
        tensor = torch.LongTensor
        input_pos = tensor([list(range(1, len + 1)) + [0] * (max_len - len) for len in input_len.tolist()])
        return self.position_encoding(input_pos)


class PositionalWiseFeedForward(nn.Module):
    def __init__(self, model_dim=512, ffn_dim=2048, dropout=0.0):
        super(PositionalWiseFeedForward, self).__init__()
        self.w1 = nn.Conv1d(model_dim, ffn_dim, 1)
        self.w2 = nn.Conv1d(ffn_dim, model_dim, 1)  # FIX: ffn_dim -> model_dim
        self.dropout = nn.Dropout(dropout)
        self.layer_norm = nn.LayerNorm(model_dim)

    def forward(self, x):
        output = x.transpose(1, 2)
        output = self.w2(F.relu(self.w1(output)))
        output = self.dropout(output.transpose(1, 2))
        output = self.layer_norm(x + output)
        return output


class EncoderLayer(nn.Module):
    def __init__(self, model_dim=512, num_heads=8, ffn_dim=2018, dropout=0.0):
        super(EncoderLayer, self).__init__()
        self.attention = MultiHeadAttention(model_dim, num_heads, dropout)
        self.feed_forward = PositionalWiseFeedForward(model_dim, ffn_dim, dropout)

    def forward(self, inputs, attn_mask=None):
        context, attention = self.attention(inputs, inputs, inputs, attn_mask)  # FIX: its own mask
        output = self.feed_forward(context)
        return output, attention


class Encoder(nn.Module):
    def __init__(self, vocab_size, max_seq_len, num_layers=6, model_dim=512, num_heads=8, ffn_dim=2048,
                 dropout=0.0):
        super(Encoder, self).__init__()
        self.encoder_layers = nn.ModuleList(
            [EncoderLayer(model_dim, num_heads, ffn_dim, dropout) for _ in range(num_layers)])
        self.seq_embedding = nn.Embedding(vocab_size + 1, model_dim, padding_idx=0)
        self.pos_embedding = PositionalEncoding(model_dim, max_seq_len)

    def forward(self, inputs, inputs_len):
        output = self.seq_embedding(inputs)
        output += self.pos_embedding(inputs_len)
        self_attention_mask = padding_mask(inputs, inputs)
        attentions = []
        for encoder in self.encoder_layers:
            output, attention = encoder(output, self_attention_mask)
            attentions.append(attention)
        return output, attentions


class DecoderLayer(nn.Module):
    def __init__(self, model_dim, num_heads=8, ffn_dim=2048, dropout=0.0):
        super(DecoderLayer, self).__init__()
        self.attention = MultiHeadAttention(model_dim, num_heads, dropout)
        self.context_attention = MultiHeadAttention(model_dim, num_heads, dropout)  # FIX: its own module
        self.feed_forward = PositionalWiseFeedForward(model_dim, ffn_dim, dropout)

    def forward(self, dec_inputs, enc_outputs, self_attn_mask=None, context_attn_mask=None):
        dec_output, self_attention = self.attention(dec_inputs, dec_inputs, dec_inputs, self_attn_mask)
        dec_output, context_attention = self.context_attention(enc_outputs, enc_outputs, dec_output,
                                                               context_attn_mask)
        dec_output = self.feed_forward(dec_output)
        return dec_output, self_attention, context_attention


class Decoder(nn.Module):
    def __init__(self, vocab_size, max_seq_len, num_layers=6, model_dim=512, num_heads=8, ffn_dim=2048,
                 dropout=0.0):
        super(Decoder, self).__init__()
        self.num_layers = num_layers
        self.decoder_layers = nn.ModuleList(
            [DecoderLayer(model_dim, num_heads, ffn_dim, dropout) for _ in range(num_layers)])
        self.seq_embedding = nn.Embedding(vocab_size + 1, model_dim, padding_idx=0)
        self.pos_embedding = PositionalEncoding(model_dim, max_seq_len)

    def forward(self, inputs, inputs_len, enc_output, context_attn_mask=None):
        output = self.seq_embedding(inputs)
        output += self.pos_embedding(inputs_len)
        self_attention_padding_mask = padding_mask(inputs, inputs)
        seq_mask = sequence_mask(inputs)
        self_attn_mask = torch.gt((self_attention_padding_mask + seq_mask), 0)
        self_attentions = []
        context_attentions = []
        for decoder in self.decoder_layers:
            output, self_attn, context_attn = decoder(output, enc_output, self_attn_mask, context_attn_mask)
            self_attentions.append(self_attn)
            context_attentions.append(context_attn)
        return output, self_attentions, context_attentions


class Transformer(nn.Module):
    def __init__(self, src_vocab_size, src_max_len, tgt_vocab_size, tgt_max_len, num_layers=6, model_dim=512,
                 num_heads=8, ffn_dim=2048, dropout=0.2):
        super(Transformer, self).__init__()
        self.encoder = Encoder(src_vocab_size, src_max_len, num_layers, model_dim, num_heads, ffn_dim, dropout)
        self.decoder = Decoder(tgt_vocab_size, tgt_max_len, num_layers, model_dim, num_heads, ffn_dim, dropout)
        self.linear = nn.Linear(model_dim, tgt_vocab_size, bias=False)
        self.softmax = nn.Softmax(dim=2)

    def forward(self, src_seq, src_len, tgt_seq, tgt_len):
        context_attn_mask = padding_mask(src_seq, tgt_seq)  # FIX: the encoder's padding, per decoder row
        output, enc_self_attn = self.encoder(src_seq, src_len)
        output, dec_self_attn, ctx_attn = self.decoder(tgt_seq, tgt_len, output, context_attn_mask)
        output = self.linear(output)
        output = self.softmax(output)
        return output, enc_self_attn, dec_self_attn, ctx_attn


# ---- zoo's names ----------------------------------------------------------------------------
def zoo_tensors(model, max_len):
    """The document's weights under zoo's (Marian's) Transformer names. Its position tables
    have a zero row for padding first, so row p + 1 is position p: zoo's table is the rest."""
    sd = model.state_dict()
    out = {
        "model.encoder.embed_tokens.weight": sd["encoder.seq_embedding.weight"],
        "model.decoder.embed_tokens.weight": sd["decoder.seq_embedding.weight"],
        "model.encoder.embed_positions.weight": sd["encoder.pos_embedding.position_encoding.weight"][1:max_len + 1],
        "model.decoder.embed_positions.weight": sd["decoder.pos_embedding.position_encoding.weight"][1:max_len + 1],
    }
    # The document's output Linear has tgt_vocab_size rows, its embedding one more (for padding):
    # zoo's lm_head gets a zero row for that id, whose logit is left out of the comparison.
    linear = sd["linear.weight"]
    out["lm_head.weight"] = torch.cat([linear, torch.zeros(1, linear.size(1))])
    out["final_logits_bias"] = torch.zeros(1, linear.size(0) + 1)

    def attention(prefix, ours):
        for theirs, name in (("linear_q", "q_proj"), ("linear_k", "k_proj"), ("linear_v", "v_proj"),
                             ("linear_final", "out_proj")):
            for kind in ("weight", "bias"):
                out[f"{ours}.{name}.{kind}"] = sd[f"{prefix}.{theirs}.{kind}"]
        for kind in ("weight", "bias"):
            out[f"{ours}_layer_norm.{kind}"] = sd[f"{prefix}.layer_norm.{kind}"]

    def feed_forward(prefix, ours):
        for theirs, name in (("w1", "fc1"), ("w2", "fc2")):
            out[f"{ours}.{name}.weight"] = sd[f"{prefix}.{theirs}.weight"].squeeze(-1)  # Conv1d, kernel 1
            out[f"{ours}.{name}.bias"] = sd[f"{prefix}.{theirs}.bias"]
        for kind in ("weight", "bias"):
            out[f"{ours}.final_layer_norm.{kind}"] = sd[f"{prefix}.layer_norm.{kind}"]

    for i in range(len(model.encoder.encoder_layers)):
        attention(f"encoder.encoder_layers.{i}.attention", f"model.encoder.layers.{i}.self_attn")
        feed_forward(f"encoder.encoder_layers.{i}.feed_forward", f"model.encoder.layers.{i}")
    for i in range(len(model.decoder.decoder_layers)):
        attention(f"decoder.decoder_layers.{i}.attention", f"model.decoder.layers.{i}.self_attn")
        attention(f"decoder.decoder_layers.{i}.context_attention", f"model.decoder.layers.{i}.encoder_attn")
        feed_forward(f"decoder.decoder_layers.{i}.feed_forward", f"model.decoder.layers.{i}")
    return {k: v.contiguous() for k, v in out.items()}


def main(out_dir):
    torch.manual_seed(2)
    src_vocab, tgt_vocab, max_len = 20, 18, 16
    model = Transformer(src_vocab, max_len, tgt_vocab, max_len, num_layers=2, model_dim=32, num_heads=4,
                        ffn_dim=48, dropout=0.2)
    with torch.no_grad():  # non-trivial LayerNorms and biases
        for p in model.parameters():
            if p.requires_grad:
                p.add_(torch.randn_like(p) * 0.1)
    model.eval()
    src_len = torch.tensor([7, 4])
    tgt_len = torch.tensor([6, 3])
    src = torch.randint(1, src_vocab + 1, (2, 7))
    tgt = torch.randint(1, tgt_vocab, (2, 6))
    src[1, 4:] = 0
    tgt[1, 3:] = 0
    with torch.no_grad():
        enc, _ = model.encoder(src, src_len)
        dec, _, _ = model.decoder(tgt, tgt_len, enc, padding_mask(src, tgt))
        logits = model.linear(dec)
        probs, _, _, _ = model(src, src_len, tgt, tgt_len)
    assert torch.allclose(logits.softmax(-1), probs)
    st_io.save(os.path.join(out_dir, "doc002.safetensors"), zoo_tensors(model, max_len))
    st_io.save(os.path.join(out_dir, "io002.safetensors"),
               {"src": src, "tgt": tgt, "src_len": src_len, "tgt_len": tgt_len, "logits": logits.contiguous()})


if __name__ == "__main__":
    main(sys.argv[1])
