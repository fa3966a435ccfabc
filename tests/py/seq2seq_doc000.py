"""Document 000's PyTorch seq2seq (Encoder, BahdanauAttention, Decoder), run as written.

The three classes below are copied from the document (~l.375-460) with their comments;
only the indentation, lost in the document's text, is restored. They keep the document's
defects (BahdanauAttention hard-codes nn.Linear(1024, units), no source padding mask), so
the parity test uses units = 1024 and zoo's mask_source_padding = false.

  seq2seq_doc000.py OUT_DIR
      builds the modules with torch.manual_seed(0) (source vocabulary 50, target 60,
      embedding 16, units 1024, batch 3, source length 7 with right padding 0; weights
      other than the embeddings redrawn from U(-0.2, 0.2)), runs the
      encoder and 4 decoder steps fed with the gold token as the tutorial's train_step does
      (dec_input = targ[:, t].unsqueeze(1)), and writes
        OUT_DIR/weights.safetensors   encoder.* and decoder.* state dicts
        OUT_DIR/io.safetensors        src, targ, enc_output, enc_state and, per step t,
                                      logits.t, state.t, attention.t (as the modules return
                                      them)
"""
import os
import sys

import torch
from torch import nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402


# ---- document 000, as written ------------------------------------------------------------
class Encoder(nn.Module):
    def __init__(self, vocab_size, embedding_dim, enc_units, batch_sz):
        super(Encoder, self).__init__()
        self.batch_sz = batch_sz
        self.enc_units = enc_units
        self.embedding = nn.Embedding(
            vocab_size,
            embedding_dim
        )
        # pytorch use tanh as activation function for GRU units
        # and initialize them using uniform distribution
        self.gru = nn.GRU(
            embedding_dim,
            enc_units,
            batch_first = True
        )

    def forward(self, x, hidden):
        # x: training data with shape (batch_size, max_length) -> (128, 46)
        # hidden: hidden states with shape (batch_size, units) -> (128, 1024)
        # after embedding, the input batch's shape is converted into (batch_size, max_length, embedding_dim) -> (128, 46, 256)
        x = self.embedding(x) # convert the input sentence into hidden representations
        # Now perform computation through GRU units
        # output contains the state(in GRU, the hidden state and the output are same) from all timestamps,
        # output shape == (batch_size, max_length, units) -> (128, 46, 1024)
        # state is the hidden state of the last timestamp, shape == (batch_size, units) -> (128, 1024)
        output, state = self.gru(x, hidden)
        return output, state

    def initialize_hidden_state(self):
        return torch.zeros((1, self.batch_sz, self.enc_units))


class BahdanauAttention(nn.Module):
    def __init__(self, units):
        super(BahdanauAttention, self).__init__()
        self.W1 = nn.Linear(1024, units) # fully connected layer: 1024*units matrix; input_dim = 1024, output_dim = `units`
        self.W2 = nn.Linear(1024, units) # fully connected layer: 1024*units matrix; input_dim = 1024, output_dim = `units`
        self.V = nn.Linear(units, 1) # fully connected layer: input_dim = 1024, output_dim = 1

    def forward(self, query, values):
        # query shape: (1, batch_size, hidden_size) -> (1, 128, 1024)
        # values shape: (batch size, sequence length, units) -> (128, 46, 1024)
        # (values) hidden_with_time_axis shape: (batch_size, hidden_size)
        query_with_time_axis = query.permute(1, 0, 2) # from [1, 128, 1024] to [128, 1, 1024]
        # score shape: (batch_size, max_length, 1)
        # acording to paper: v * tanh(W1*values + W2 * query)
        # score: [10x1] * [128*10] => [128x46x1]
        score = self.V(
            # [128x46x10] + [128x1x10] (broadcast along 2nd dimension)
            torch.tanh(self.W1(values) + self.W2(query_with_time_axis))
        )
        # score shape: (batch_size, max_length, 1)
        # produced by the "alignment model"
        attention_weights = F.softmax(score, dim=1) # [128x46x1]
        # context_vector shape == (batch_size, max_length, hidden_size)
        # perform weighted sum with computed attention weights with GRU units' hidden outputs
        context_vector = attention_weights * values
        context_vector = torch.sum(context_vector, dim=1) # [128x1024]
        return context_vector, attention_weights


class Decoder(nn.Module):
    def __init__(self, vocab_size, embedding_dim, dec_units, batch_sz):
        super(Decoder, self).__init__()
        self.batch_sz = batch_sz
        self.dec_units = dec_units
        self.embedding = nn.Embedding(
            vocab_size,
            embedding_dim
        ) # 6082x256
        self.gru = nn.GRU(
            embedding_dim + dec_units,
            dec_units,
            batch_first = True
        )
        self.fc = nn.Linear(dec_units, vocab_size)
        self.attention = BahdanauAttention(dec_units)

    def forward(self, x, hidden, enc_output):
        context_vector, attention_weights = self.attention(hidden, enc_output)
        x = self.embedding(x)
        x = torch.cat(
            tensors = (context_vector.unsqueeze(1), x),
            dim = -1
        )
        output, state = self.gru(x, hidden)
        output = output.view(
            -1,
            output.size(2)
        )
        x = self.fc(output)
        return x, state, attention_weights
# ---- end of document 000 -----------------------------------------------------------------


def main(out_dir):
    torch.manual_seed(0)
    vocab_inp, vocab_tar, embedding_dim, units, batch = 50, 60, 16, 1024, 3
    src_len, steps = 7, 4
    encoder = Encoder(vocab_inp, embedding_dim, units, batch)
    decoder = Decoder(vocab_tar, embedding_dim, units, batch)
    # PyTorch's default init (U(+-1/sqrt(1024))) leaves the attention almost uniform and the
    # logits tiny, which would hide errors in the score; wider weights make them peaked.
    with torch.no_grad():
        for name, p in list(encoder.named_parameters()) + list(decoder.named_parameters()):
            if "embedding" not in name:
                p.uniform_(-0.2, 0.2)

    inp = torch.randint(1, vocab_inp, (batch, src_len))
    inp[0, 5:] = 0  # pad_sequences(padding='post') pads with 0 at the end
    inp[1, 3:] = 0
    targ = torch.randint(2, vocab_tar, (batch, steps + 1))
    targ[:, 0] = 1  # <start>

    io = {"src": inp, "targ": targ}
    with torch.no_grad():
        enc_hidden = encoder.initialize_hidden_state()
        enc_output, enc_hidden = encoder(inp, enc_hidden)
        io["enc_output"], io["enc_state"] = enc_output, enc_hidden
        dec_hidden = enc_hidden
        dec_input = targ[:, 0].unsqueeze(1)
        for t in range(1, steps + 1):
            predictions, dec_hidden, attention_weights = decoder(dec_input, dec_hidden, enc_output)
            io[f"logits.{t - 1}"] = predictions      # (B, V)
            io[f"state.{t - 1}"] = dec_hidden         # (1, B, units)
            io[f"attention.{t - 1}"] = attention_weights  # (B, S, 1)
            dec_input = targ[:, t].unsqueeze(1)

    weights = {"encoder." + k: v for k, v in encoder.state_dict().items()}
    weights.update({"decoder." + k: v for k, v in decoder.state_dict().items()})
    st_io.save(os.path.join(out_dir, "weights.safetensors"), weights)
    st_io.save(os.path.join(out_dir, "io.safetensors"), io)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
