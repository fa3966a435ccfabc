"""Reference outputs of the documents' Transformer blocks, for tests/blocks_test.cc.

Document 000's SelfAttention, SelfAttentionClassifier and multi-head self-attention
fragments; document 004's scaled_dot_product_attention, AttentionHead, MultiHeadAttention,
FeedForward, TransformerEncoderLayer (pre-norm) and Embeddings, document 003's batch-first
MultiheadAttention and document 002's sinusoidal PositionalEncoding table, copied below
(indentation restored: the documents' text lost it), run on random weights in eval mode.

  doc_blocks.py OUT_DIR
      writes OUT_DIR/NAME.safetensors with each block's weights, named as zoo's blocks name
      them (document 004's per-head q/k/v Linears concatenated into one projection each,
      head 0 first: the layout zoo's split_heads reads), and OUT_DIR/io.safetensors with the
      inputs and the documents' outputs.
"""
import os
import sys
from math import sqrt

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402


# ---- document 004 ------------------------------------------------------------------------
def scaled_dot_product_attention(query, key, value, mask=None):
    dim_k = query.size(-1)
    scores = torch.bmm(query, key.transpose(1, 2)) / sqrt(dim_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, float("-inf"))
    weights = F.softmax(scores, dim=-1)
    return weights.bmm(value)


class AttentionHead(nn.Module):
    def __init__(self, embed_dim, head_dim):
        super().__init__()
        self.q = nn.Linear(embed_dim, head_dim)
        self.k = nn.Linear(embed_dim, head_dim)
        self.v = nn.Linear(embed_dim, head_dim)

    def forward(self, hidden_state):
        attn_outputs = scaled_dot_product_attention(
            self.q(hidden_state), self.k(hidden_state), self.v(hidden_state))
        return attn_outputs


class MultiHeadAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        embed_dim = config.hidden_size
        num_heads = config.num_attention_heads
        head_dim = embed_dim // num_heads
        self.heads = nn.ModuleList(
            [AttentionHead(embed_dim, head_dim) for _ in range(num_heads)]
        )
        self.output_linear = nn.Linear(embed_dim, embed_dim)

    def forward(self, hidden_state):
        x = torch.cat([h(hidden_state) for h in self.heads], dim=-1)
        x = self.output_linear(x)
        return x


class FeedForward(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.linear_1 = nn.Linear(config.hidden_size, config.intermediate_size)
        self.linear_2 = nn.Linear(config.intermediate_size, config.hidden_size)
        self.gelu = nn.GELU()
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, x):
        x = self.linear_1(x)
        x = self.gelu(x)
        x = self.linear_2(x)
        x = self.dropout(x)
        return x


class TransformerEncoderLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer_norm_1 = nn.LayerNorm(config.hidden_size)
        self.layer_norm_2 = nn.LayerNorm(config.hidden_size)
        self.attention = MultiHeadAttention(config)
        self.feed_forward = FeedForward(config)

    def forward(self, x):
        # Apply layer normalization and then copy input into query, key, valu
        hidden_state = self.layer_norm_1(x)
        # Apply attention with a skip connection
        x = x + self.attention(hidden_state)
        # Apply feed-forward layer with a skip connection
        x = x + self.feed_forward(self.layer_norm_2(x))
        return x


class Embeddings(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.token_embeddings = nn.Embedding(config.vocab_size, config.hidden_size)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.layer_norm = nn.LayerNorm(config.hidden_size, eps=1e-12)
        # Document 004 writes nn.Dropout() here, i.e. p = 0.5, where it means the config's
        # hidden_dropout_prob; the comparison runs in eval mode, where dropout is the identity.
        self.dropout = nn.Dropout()

    def forward(self, input_ids):
        # Create position IDs for input sequence
        seq_length = input_ids.size(1)
        position_ids = torch.arange(seq_length, dtype=torch.long).unsqueeze(0)
        # Create token and position embeddings
        token_embeddings = self.token_embeddings(input_ids)
        position_embeddings = self.position_embeddings(position_ids)
        # Combine token and position embeddings
        embeddings = token_embeddings + position_embeddings
        embeddings = self.layer_norm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class TransformerEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.embeddings = Embeddings(config)
        self.layers = nn.ModuleList([TransformerEncoderLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, x):
        x = self.embeddings(x)
        for layer in self.layers:
            x = layer(x)
        return x


class TransformerForSequenceClassification(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.encoder = TransformerEncoder(config)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)

    def forward(self, x):
        x = self.encoder(x)[:, 0, :]  # select hidden state of [CLS] token
        x = self.dropout(x)
        x = self.classifier(x)
        return x
# ---- end of document 004 -----------------------------------------------------------------


# ---- document 000 ------------------------------------------------------------------------
class SelfAttention(nn.Module):
    def __init__(self, embed_dim):
        super(SelfAttention, self).__init__()
        self.query = nn.Linear(embed_dim, embed_dim)
        self.key = nn.Linear(embed_dim, embed_dim)
        self.value = nn.Linear(embed_dim, embed_dim)

    def forward(self, x):
        q = self.query(x)
        k = self.key(x)
        v = self.value(x)
        attn_weights = torch.matmul(q, k.transpose(1, 2))
        attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attended_values = torch.matmul(attn_weights, v)
        return attended_values


class SelfAttentionClassifier(nn.Module):
    def __init__(self, embed_dim, hidden_dim, num_classes):
        super(SelfAttentionClassifier, self).__init__()
        self.attention = SelfAttention(embed_dim)
        self.fc1 = nn.Linear(embed_dim, hidden_dim)
        self.fc2 = nn.Linear(hidden_dim, num_classes)

    def forward(self, x):
        attended_values = self.attention(x)
        x = attended_values.mean(dim=1)
        x = self.fc1(x)
        x = torch.relu(x)
        x = self.fc2(x)
        return x


# The document's multi-head self-attention is printed as fragments (the attributes, the
# projections, trans_to_multiple_heads, the scaled scores, the merge); joined here into the
# module they describe, which has no output projection.
class MultiHeadSelfAttention000(nn.Module):
    def __init__(self, input_size, hidden_size, num_attention_heads):
        super().__init__()
        self.num_attention_heads = num_attention_heads
        self.attention_head_size = int(hidden_size / num_attention_heads)
        self.all_head_size = hidden_size
        self.key_layer = nn.Linear(input_size, hidden_size)
        self.query_layer = nn.Linear(input_size, hidden_size)
        self.value_layer = nn.Linear(input_size, hidden_size)

    def trans_to_multiple_heads(self, x):
        new_size = x.size()[: -1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_size)
        return x.permute(0, 2, 1, 3)

    def forward(self, x):
        key = self.key_layer(x)
        query = self.query_layer(x)
        value = self.value_layer(x)
        key_heads = self.trans_to_multiple_heads(key)
        query_heads = self.trans_to_multiple_heads(query)
        value_heads = self.trans_to_multiple_heads(value)
        attention_scores = torch.matmul(query_heads, key_heads.permute(0, 1, 3, 2))
        attention_scores = attention_scores / sqrt(self.attention_head_size)
        attention_probs = F.softmax(attention_scores, dim=-1)
        context = torch.matmul(attention_probs, value_heads)
        context = context.permute(0, 2, 1, 3).contiguous()
        new_size = context.size()[: -2] + (self.all_head_size,)
        context = context.view(*new_size)
        return context
# ---- end of document 000 -----------------------------------------------------------------


# ---- document 003 ------------------------------------------------------------------------
# The document's text joined the lines of this class; the line that applies the mask ended
# up inside the comment before it ("# 如果沒有mask,就生成一個 if mask is not None: ..."), so as
# printed the mask is never applied. Restored as the text describes: mask == 0 -> -1e10.
class MultiheadAttention(nn.Module):
    def __init__(self, hid_dim, n_heads, dropout):
        super(MultiheadAttention, self).__init__()
        self.hid_dim = hid_dim
        self.n_heads = n_heads
        assert hid_dim % n_heads == 0  # d_model // h 是要能整除
        self.w_q = nn.Linear(hid_dim, hid_dim)
        self.w_k = nn.Linear(hid_dim, hid_dim)
        self.w_v = nn.Linear(hid_dim, hid_dim)
        self.fc = nn.Linear(hid_dim, hid_dim)
        self.do = nn.Dropout(dropout)
        self.scale = torch.sqrt(torch.FloatTensor([hid_dim // n_heads]))

    def forward(self, query, key, value, mask=None):
        bsz = query.shape[0]
        Q = self.w_q(query)
        K = self.w_k(key)
        V = self.w_v(value)
        Q = Q.view(bsz, -1, self.n_heads, self.hid_dim // self.n_heads).permute(0, 2, 1, 3)
        K = K.view(bsz, -1, self.n_heads, self.hid_dim // self.n_heads).permute(0, 2, 1, 3)
        V = V.view(bsz, -1, self.n_heads, self.hid_dim // self.n_heads).permute(0, 2, 1, 3)
        # Q, K相乘除以scale,這是計(jì)算scaled dot product attention的第一步
        energy = torch.matmul(Q, K.permute(0, 1, 3, 2)) / self.scale
        # 如果沒有mask,就生成一個(gè)
        if mask is not None:
            energy = energy.masked_fill(mask == 0, -1e10)
        # 然后對Q,K相乘的結(jié)果計(jì)算softmax加上dropout,這是計(jì)算scaled dot product attention的第二步
        attention = self.do(torch.softmax(energy, dim=-1))
        # 第三步,attention結(jié)果與V相乘
        x = torch.matmul(attention, V)
        # 最后將多頭排列好,就是multi-head attention的結(jié)果了
        x = x.permute(0, 2, 1, 3).contiguous()
        x = x.view(bsz, -1, self.n_heads * (self.hid_dim // self.n_heads))
        x = self.fc(x)
        return x
# ---- end of document 003 -----------------------------------------------------------------


def positional_encoding_002(d_model, max_seq_len):
    """Document 002's PositionalEncoding table. The document calls np.pow (numpy has
    np.power) and concatenates its numpy table to a torch pad row; both fixed. Its row 0 is
    that all-zero PAD row, so position p (from 0) is its row p + 1."""
    position_encoding = np.array([
        [pos / np.power(10000, 2.0 * (j // 2) / d_model) for j in range(d_model)]
        for pos in range(max_seq_len)])
    # 偶数列使用sin，奇数列使用cos
    position_encoding[:, 0::2] = np.sin(position_encoding[:, 0::2])
    position_encoding[:, 1::2] = np.cos(position_encoding[:, 1::2])
    pad_row = torch.zeros([1, d_model], dtype=torch.float64)
    return torch.cat((pad_row, torch.from_numpy(position_encoding)))


class Config:
    hidden_size = 32
    num_attention_heads = 4
    intermediate_size = 48
    hidden_dropout_prob = 0.1
    vocab_size = 20
    max_position_embeddings = 16
    num_hidden_layers = 2
    num_labels = 3


def fused_heads(heads):
    """Document 004's per-head Linears as one (H, H) projection each: head i's rows i*d.."""
    out = {}
    for name in ("q", "k", "v"):
        out[name + ".weight"] = torch.cat([getattr(h, name).weight for h in heads], 0)
        out[name + ".bias"] = torch.cat([getattr(h, name).bias for h in heads], 0)
    return out


def perturbed(module):
    """Non-trivial values everywhere (LayerNorm 1/0 and zero biases hide errors)."""
    with torch.no_grad():
        for p in module.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    return module.eval()


def main(out_dir):
    torch.manual_seed(0)
    c = Config()
    io = {}
    x = torch.randn(2, 5, c.hidden_size)
    memory = torch.randn(2, 6, c.hidden_size)
    io["x"], io["memory"] = x, memory
    with torch.no_grad():
        # A single head as wide as the input, so that zoo's one-head attention with an
        # identity output projection computes exactly AttentionHead.
        head = perturbed(AttentionHead(c.hidden_size, c.hidden_size))
        io["head004"] = head(x)
        st_io.save(os.path.join(out_dir, "head004.safetensors"), {k: v for k, v in head.state_dict().items()})

        mha = perturbed(MultiHeadAttention(c))
        io["mha004"] = mha(x)
        weights = fused_heads(mha.heads)
        weights.update({"output_linear." + k: v for k, v in mha.output_linear.state_dict().items()})
        st_io.save(os.path.join(out_dir, "mha004.safetensors"), weights)

        ff = perturbed(FeedForward(c))
        io["ff004"] = ff(x)
        st_io.save(os.path.join(out_dir, "ff004.safetensors"), ff.state_dict())

        layer = perturbed(TransformerEncoderLayer(c))
        io["layer004"] = layer(x)
        weights = {k: v for k, v in layer.state_dict().items() if not k.startswith("attention.")}
        weights.update({"attention." + k: v for k, v in fused_heads(layer.attention.heads).items()})
        weights.update({"attention.output_linear." + k: v
                        for k, v in layer.attention.output_linear.state_dict().items()})
        st_io.save(os.path.join(out_dir, "layer004.safetensors"), weights)

        emb = perturbed(Embeddings(c))
        ids = torch.randint(0, c.vocab_size, (2, 7))
        io["ids"], io["emb004"] = ids, emb(ids)
        st_io.save(os.path.join(out_dir, "emb004.safetensors"), emb.state_dict())

        classifier = perturbed(TransformerForSequenceClassification(c))
        io["cls004"] = classifier(ids)
        weights = {}
        for k, v in classifier.state_dict().items():
            if ".attention.heads." not in k:
                weights[k] = v
        for i, layer_i in enumerate(classifier.encoder.layers):
            for k, v in fused_heads(layer_i.attention.heads).items():
                weights[f"encoder.layers.{i}.attention.{k}"] = v
        st_io.save(os.path.join(out_dir, "cls004.safetensors"), weights)

        selfcls = perturbed(SelfAttentionClassifier(c.hidden_size, 16, 3))
        io["self000"] = selfcls.attention(x)
        io["selfcls000"] = selfcls(x)
        st_io.save(os.path.join(out_dir, "selfcls000.safetensors"), selfcls.state_dict())
        mhsa = perturbed(MultiHeadSelfAttention000(c.hidden_size, c.hidden_size, c.num_attention_heads))
        io["mhsa000"] = mhsa(x)
        st_io.save(os.path.join(out_dir, "mhsa000.safetensors"), mhsa.state_dict())

        mha3 = perturbed(MultiheadAttention(c.hidden_size, c.num_attention_heads, 0.1))
        x_keep = torch.ones(2, 5, dtype=torch.bool)
        x_keep[1, 3:] = False
        m_keep = torch.ones(2, 6, dtype=torch.bool)
        m_keep[0, 4:] = False
        io["x_keep"], io["memory_keep"] = x_keep, m_keep
        io["self003"] = mha3(x, x, x, x_keep[:, None, None, :])
        io["cross003"] = mha3(x, memory, memory, m_keep[:, None, None, :])
        st_io.save(os.path.join(out_dir, "mha003.safetensors"), mha3.state_dict())

        io["sinusoid002"] = positional_encoding_002(c.hidden_size, 50)[1:].float()
    st_io.save(os.path.join(out_dir, "io.safetensors"), io)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
