"""Document 000's BERT (~l.1546-1700: JointEmbedding, AttentionHead, MultiHeadAttention,
Encoder, BERT) as the document writes it, for parity with models/bert_doc000.

  bert_doc000.py run VOCAB DIM_INP DIM_OUT HEADS SEED OUT.safetensors
      builds the document's BERT with torch.manual_seed(SEED), evaluates it (eval mode) on
      random ids (4 x 15, the last positions of two rows [PAD]=1) and writes the weights (its
      state dict), the inputs (input_ids, attention_mask as the dataset builds it) and the
      outputs (token_predictions, nsp) to OUT.
"""
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as f

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

device = torch.device("cpu")


class JointEmbedding(nn.Module):
    def __init__(self, vocab_size, size):
        super(JointEmbedding, self).__init__()
        self.size = size
        self.token_emb = nn.Embedding(vocab_size, size)
        self.segment_emb = nn.Embedding(vocab_size, size)
        self.norm = nn.LayerNorm(size)

    def forward(self, input_tensor):
        sentence_size = input_tensor.size(-1)
        pos_tensor = self.attention_position(self.size, input_tensor)
        segment_tensor = torch.zeros_like(input_tensor).to(device)
        segment_tensor[:, sentence_size // 2 + 1:] = 1
        output = self.token_emb(input_tensor) + self.segment_emb(segment_tensor) + pos_tensor
        return self.norm(output)

    def attention_position(self, dim, input_tensor):
        batch_size = input_tensor.size(0)
        sentence_size = input_tensor.size(-1)
        pos = torch.arange(sentence_size, dtype=torch.long).to(device)
        d = torch.arange(dim, dtype=torch.long).to(device)
        d = (2 * d / dim)
        pos = pos.unsqueeze(1)
        pos = pos / (1e4 ** d)
        pos[:, ::2] = torch.sin(pos[:, ::2])
        pos[:, 1::2] = torch.cos(pos[:, 1::2])
        return pos.expand(batch_size, *pos.size())


class AttentionHead(nn.Module):
    def __init__(self, dim_inp, dim_out):
        super(AttentionHead, self).__init__()
        self.dim_inp = dim_inp
        self.q = nn.Linear(dim_inp, dim_out)
        self.k = nn.Linear(dim_inp, dim_out)
        self.v = nn.Linear(dim_inp, dim_out)

    def forward(self, input_tensor: torch.Tensor, attention_mask: torch.Tensor = None):
        query, key, value = self.q(input_tensor), self.k(input_tensor), self.v(input_tensor)
        scale = query.size(1) ** 0.5
        attention_scores = torch.bmm(query, key.transpose(1, 2)) / scale
        attention_scores = attention_scores.masked_fill_(attention_mask, -1e9)
        attention_val = f.softmax(attention_scores, dim=-1)
        attention_context = torch.bmm(attention_val, value)
        return attention_context


class MultiHeadAttention(nn.Module):
    def __init__(self, num_heads, dim_inp, dim_out):
        super(MultiHeadAttention, self).__init__()
        self.heads = nn.ModuleList([AttentionHead(dim_inp, dim_out) for _ in range(num_heads)])
        self.linear = nn.Linear(dim_out * num_heads, dim_inp)
        self.norm = nn.LayerNorm(dim_inp)

    def forward(self, input_tensor: torch.Tensor, attention_mask: torch.Tensor):
        s = [head(input_tensor, attention_mask) for head in self.heads]
        attention_values = torch.cat(s, dim=-1)
        attention_values = self.linear(attention_values)
        return self.norm(attention_values)


class Encoder(nn.Module):
    def __init__(self, dim_inp, dim_out, attention_heads=4, dropout=0.1):
        super(Encoder, self).__init__()
        self.attention = MultiHeadAttention(attention_heads, dim_inp, dim_out)
        self.feed_forward = nn.Sequential(
            nn.Linear(dim_inp, dim_out), nn.Dropout(dropout), nn.GELU(), nn.Linear(dim_out, dim_inp), nn.Dropout(dropout))
        self.norm = nn.LayerNorm(dim_inp)

    def forward(self, input_tensor: torch.Tensor, attention_mask: torch.Tensor):
        context = self.attention(input_tensor, attention_mask)
        res = self.feed_forward(context)
        return self.norm(res)


class BERT(nn.Module):
    def __init__(self, vocab_size, dim_inp, dim_out, attention_heads=4):
        super(BERT, self).__init__()
        self.embedding = JointEmbedding(vocab_size, dim_inp)
        self.encoder = Encoder(dim_inp, dim_out, attention_heads)
        self.token_prediction_layer = nn.Linear(dim_inp, vocab_size)
        self.softmax = nn.LogSoftmax(dim=-1)
        self.classification_layer = nn.Linear(dim_inp, 2)

    def forward(self, input_tensor: torch.Tensor, attention_mask: torch.Tensor):
        embeddeding = self.embedding(input_tensor)
        encoded_embedding = self.encoder(embeddeding, attention_mask)
        token_predictions = self.token_prediction_layer(encoded_embedding)
        first_word = encoded_embedding[:, 0, :]
        return self.softmax(token_predictions), self.classification_layer(first_word)


def main():
    _, vocab, dim_inp, dim_out, heads, seed, out = sys.argv[1:8]
    vocab, dim_inp, dim_out, heads, seed = int(vocab), int(dim_inp), int(dim_out), int(heads), int(seed)
    torch.manual_seed(seed)
    model = BERT(vocab, dim_inp, dim_out, heads).eval()
    ids = torch.randint(5, vocab, (4, 15))
    ids[1, 11:] = 1
    ids[3, 6:] = 1
    ids[:, 0] = 0
    mask = (ids == 1).unsqueeze(1)  # (B, 1, T), as the dataset's (inp == PAD).unsqueeze(0) batched
    with torch.no_grad():
        tokens, nsp = model(ids, mask)
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    tensors.update({"input_ids": ids, "attention_mask": mask, "token_predictions": tokens, "nsp": nsp})
    st_io.save(out, tensors)


if __name__ == "__main__":
    main()
