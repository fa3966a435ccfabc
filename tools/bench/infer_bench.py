"""The plain-PyTorch side of tools/bench/infer_bench.sh (issue 64): CPU inference with the
reference models of tests/py (Hugging Face's module trees, loading zoo's safetensors strictly),
fp32 or int8 (torch.quantization.quantize_dynamic on every nn.Linear), timed as the zoo side
(tools/bench/infer_bench.cc) times the same rows on the same inputs.

  infer_bench.py make gpt|bert|transformer DIR [--preset P] [--seed S]
      a zoo checkpoint directory (config.json + model.safetensors in Hugging Face's layout)
      of random weights (N(0, 0.02), as the models' own init) of a recipe's or a published
      model's shape: gpt2-124m, gpt-nano-char (the GPT CPU recipe), bert-base,
      bert-small-imdb (the IMDB recipe), transformer-small (the Transformer recipe).
  infer_bench.py inputs ROW DIR OUT.safetensors [--src-ids FILE]
      the inputs of ROW for the model of DIR, the same for every side (seeded).
  infer_bench.py run ROW DIR INPUTS [--int8] [--threads N] [--default-threads] [--warmup W]
      [--repeat R] [--out FILE]
      times ROW (warm-up runs, then R timed ones) and prints one JSON line with the median;
      --out writes what the row computes (logits, tokens) for the equality checks.
  infer_bench.py export ROW DIR INPUTS OUT.onnx
      torch.onnx.export (opset 14) of ROW's forward pass: gpt-prefill (logits), bert
      (classification logits), mt-encoder (the Transformer's encoder, dynamic batch and length).
  infer_bench.py compare KIND A B      KIND logits|tokens: one JSON line (max abs diff /
      agreement) between two outputs files.
  infer_bench.py profile-table TRACE [N]   the N operators of a Chrome trace (the zoo side's
      --profile) with the most self time.
  infer_bench.py flops ROW DIR INPUTS
      the floating-point operations of ROW's matrix products (mm, addmm, mv, addmv, bmm,
      baddbmm, counted from their shapes as they run), one fp32 run: what no implementation of
      the row can skip.
  infer_bench.py peak [--threads N]
      the fp32 matrix-product rate of this machine at N threads (GFLOP/s, the best of 5
      products of 2048 x 2048 matrices through the BLAS LibTorch uses), one JSON line.

Rows: gpt-prefill (one forward of the prompt batch, logits), gpt-gen (greedy generation with the
key/value cache, as zoo's GPT2Decoder: the context, when full, is rebuilt from its last half),
bert (sequence classification logits), mt-encoder (the encoder over every batch), mt-translate
(beam search over every batch, zoo's models/generation.cc beam_search ported as is).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "py"))

import torch  # noqa: E402
from torch import nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

import hf_bert  # noqa: E402
import hf_gpt2  # noqa: E402
import hf_marian  # noqa: E402
import st_io  # noqa: E402

PRESETS = {
    "gpt2-124m": ("gpt", {"model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024, "n_embd": 768,
                          "n_layer": 12, "n_head": 12}),
    "gpt-nano-char": ("gpt", {"model_type": "gpt2", "vocab_size": 65, "n_positions": 64, "n_embd": 128,
                              "n_layer": 4, "n_head": 4}),
    "bert-base": ("bert", {"model_type": "bert", "vocab_size": 30522, "hidden_size": 768, "num_hidden_layers": 12,
                           "num_attention_heads": 12, "intermediate_size": 3072, "max_position_embeddings": 512}),
    "bert-small-imdb": ("bert", {"model_type": "bert", "vocab_size": 30522, "hidden_size": 256,
                                 "num_hidden_layers": 4, "num_attention_heads": 4, "intermediate_size": 1024,
                                 "max_position_embeddings": 512}),
    "transformer-small": ("transformer", {"model_type": "transformer", "source_vocab_size": 8000,
                                          "target_vocab_size": 8000, "d_model": 256, "encoder_layers": 3,
                                          "decoder_layers": 3, "encoder_attention_heads": 4,
                                          "decoder_attention_heads": 4, "encoder_ffn_dim": 1024,
                                          "decoder_ffn_dim": 1024, "max_position_embeddings": 256,
                                          "share_encoder_decoder_embeddings": True, "pad_id": 0, "bos_id": 1,
                                          "eos_id": 2, "dropout": 0.0}),
}

# Shapes of the rows (the issue's): prefill 8 x 256 tokens (a model's context if shorter),
# generation of 128 tokens after a 64-token prompt (16 where the context is 64), BERT 32 x 256,
# translation batches of 32 sentences.
PREFILL_BATCH, PREFILL_LEN = 8, 256
GEN_NEW = 128
BERT_BATCH, BERT_LEN = 32, 256
MT_BATCH, MT_BEAMS, MT_MAX_LENGTH = 32, 4, 50


def zoo_config(d):
    with open(os.path.join(d, "config.json")) as f:
        return json.load(f)


# ---- GPT ------------------------------------------------------------------------------------

class GPT(nn.Module):
    """hf_gpt2's GPT2LMHeadModel (loaded strictly from zoo's file) run with a key/value cache:
    Conv1D layers as nn.Linear (their weights transposed, so that quantize_dynamic packs them),
    the tied output projection as an nn.Linear sharing wte's weight (an int8 copy of its own
    under quantize_dynamic, as zoo's int8 makes one)."""

    def __init__(self, ref, c):
        super().__init__()
        t = ref.transformer
        self.wte, self.wpe, self.ln_f = t.wte, t.wpe, t.ln_f
        self.n_head, self.n_embd, self.act, self.n_positions = c.n_head, c.n_embd, c.activation_function, c.n_positions
        self.blocks = nn.ModuleList()
        for b in t.h:
            m = nn.Module()
            m.ln_1, m.ln_2 = b.ln_1, b.ln_2
            m.c_attn, m.attn_proj = linear_of(b.attn.c_attn), linear_of(b.attn.c_proj)
            m.c_fc, m.mlp_proj = linear_of(b.mlp.c_fc), linear_of(b.mlp.c_proj)
            self.blocks.append(m)
        self.lm_head = nn.Linear(c.n_embd, c.vocab_size, bias=False)
        self.lm_head.weight = t.wte.weight

    def forward(self, ids, past=None):
        """ids (B, T) after the `past` (one (k, v) per block, (B, H, S, d)) -> logits (B, T, V), past."""
        b, t = ids.shape
        s = past[0][0].size(2) if past else 0
        x = self.wte(ids) + self.wpe(torch.arange(s, s + t))
        h, hd = self.n_head, self.n_embd // self.n_head
        mask = None
        if t > 1:
            mask = torch.ones(t, s + t).triu(s + 1).bool()  # the keys after each query
        out_past = []
        for i, m in enumerate(self.blocks):
            q, k, v = m.c_attn(m.ln_1(x)).split(self.n_embd, dim=2)
            q, k, v = (z.view(b, t, h, hd).transpose(1, 2) for z in (q, k, v))
            if past:
                k, v = torch.cat([past[i][0], k], 2), torch.cat([past[i][1], v], 2)
            out_past.append((k, v))
            w = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
            if mask is not None:
                w = w.masked_fill(mask, float("-inf"))
            a = (w.softmax(-1) @ v).transpose(1, 2).reshape(b, t, self.n_embd)
            x = x + m.attn_proj(a)
            x = x + m.mlp_proj(hf_gpt2.act(self.act, m.c_fc(m.ln_2(x))))
        return self.lm_head(self.ln_f(x)), out_past


def linear_of(conv):
    lin = nn.Linear(conv.weight.size(0), conv.weight.size(1))
    with torch.no_grad():
        lin.weight.copy_(conv.weight.t())
        lin.bias.copy_(conv.bias)
    return lin


def load_gpt(d):
    m = zoo_config(d)["model"]
    c = hf_gpt2.Config(m)
    ref = hf_gpt2.GPT2LMHeadModel(c)
    ref.load_state_dict(st_io.load(os.path.join(d, "model.safetensors")), strict=True)
    return GPT(ref, c).eval()


def greedy(model, prompts, new_tokens):
    """zoo's GPT2Decoder + greedy search: prefill all but the last prompt token, feed the last
    one at the first step; at a full context the cache is rebuilt from the window's last half."""
    window = model.n_positions
    tokens = prompts
    past = None
    if prompts.size(1) > 1:
        _, past = model(prompts[:, :-1])
    prev = prompts[:, -1:]
    out = []
    for _ in range(new_tokens):
        tokens = torch.cat([tokens, prev], 1)
        cached = past[0][0].size(2) if past else 0
        if cached + 1 > window:
            logits, past = model(tokens[:, -max(1, window // 2):])
        else:
            logits, past = model(prev, past)
        prev = logits[:, -1].argmax(-1, keepdim=True)
        out.append(prev)
    return torch.cat(out, 1)


# ---- BERT -----------------------------------------------------------------------------------

def load_bert(d):
    c = dict(zoo_config(d)["model"])
    for k, v in {"hidden_act": "gelu", "layer_norm_eps": 1e-12, "type_vocab_size": 2, "num_labels": 2}.items():
        c.setdefault(k, v)
    model = hf_bert.BertForSequenceClassification(c)
    model.load_state_dict(st_io.load(os.path.join(d, "model.safetensors")), strict=True)
    return model.eval()


# ---- Transformer ----------------------------------------------------------------------------

def marian_config(m):
    return {"d_model": m["d_model"], "vocab_size": m["source_vocab_size"], "decoder_vocab_size": m["target_vocab_size"],
            "encoder_layers": m["encoder_layers"], "decoder_layers": m["decoder_layers"],
            "encoder_attention_heads": m["encoder_attention_heads"],
            "decoder_attention_heads": m["decoder_attention_heads"], "encoder_ffn_dim": m["encoder_ffn_dim"],
            "decoder_ffn_dim": m["decoder_ffn_dim"], "activation_function": m.get("activation_function", "relu"),
            "max_position_embeddings": m["max_position_embeddings"], "pad_token_id": m.get("pad_id", 0),
            "scale_embedding": m.get("scale_embedding", True),
            "share_encoder_decoder_embeddings": m.get("share_encoder_decoder_embeddings", False)}


def load_marian(d):
    m = zoo_config(d)["model"]
    assert m["model_type"] == "transformer" and not m.get("normalize_before", False), "a post-norm zoo transformer"
    model = hf_marian.MarianMTModel(marian_config(m))
    tensors = st_io.load(os.path.join(d, "model.safetensors"))
    model.load_state_dict(tensors, strict=True)
    model.bos, model.eos = m["bos_id"], m["eos_id"]
    return model.eval()


class MarianEncoder(nn.Module):
    def __init__(self, model):
        super().__init__()
        self.m = model

    def forward(self, src):
        bias = (src == self.m.pad).float()[:, None, None, :] * torch.finfo(torch.float32).min
        x = self.m.model.encoder.embed(src)
        for layer in self.m.model.encoder.layers:
            x = layer(x, bias)
        return x


def heads(x, a):
    b, t, d = x.shape
    return x.view(b, t, a.heads, d // a.heads).transpose(1, 2)


def attend(q, k, v, a, bias=None):
    w = q @ k.transpose(-1, -2)
    if bias is not None:
        w = w + bias
    b, _, t, hd = q.shape
    return a.out_proj((w.softmax(-1) @ v).transpose(1, 2).reshape(b, t, hd * a.heads))


class MarianDecoder:
    """One decoding step at a time with the self-attention keys/values cached per row and the
    cross-attention's computed once from the encoder output."""

    def __init__(self, model, src):
        self.m = model
        memory = MarianEncoder(model)(src)
        self.cross_bias = (src == model.pad).float()[:, None, None, :] * torch.finfo(torch.float32).min
        self.cross = [(heads(l.encoder_attn.k_proj(memory), l.encoder_attn), heads(l.encoder_attn.v_proj(memory), l.encoder_attn))
                      for l in model.model.decoder.layers]
        self.self_kv = None
        self.t = 0

    def rows(self, idx, cross_too):
        if self.self_kv is not None:
            self.self_kv = [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in self.self_kv]
        if cross_too:
            self.cross = [(k.index_select(0, idx), v.index_select(0, idx)) for k, v in self.cross]
            self.cross_bias = self.cross_bias.index_select(0, idx)

    def step(self, prev):
        dec = self.m.model.decoder
        y = dec.embed_tokens(prev[:, None]) * dec.scale + dec.embed_positions.weight[self.t]
        new_kv = []
        for i, l in enumerate(dec.layers):
            a = l.self_attn
            q = heads(a.q_proj(y) * (y.size(-1) // a.heads) ** -0.5, a)
            k, v = heads(a.k_proj(y), a), heads(a.v_proj(y), a)
            if self.self_kv is not None:
                k, v = torch.cat([self.self_kv[i][0], k], 2), torch.cat([self.self_kv[i][1], v], 2)
            new_kv.append((k, v))
            y = l.self_attn_layer_norm(y + attend(q, k, v, a))
            c = l.encoder_attn
            q = heads(c.q_proj(y) * (y.size(-1) // c.heads) ** -0.5, c)
            y = l.encoder_attn_layer_norm(y + attend(q, self.cross[i][0], self.cross[i][1], c, self.cross_bias))
            y = l.final_layer_norm(y + l.fc2(l.act(l.fc1(y))))
        self.self_kv = new_kv
        self.t += 1
        return (self.m.lm_head(y[:, 0]) + self.m.final_logits_bias).float().log_softmax(-1)


def beam_search(model, src, beams=MT_BEAMS, max_new=MT_MAX_LENGTH, length_penalty=1.0):
    """zoo's beam_search (models/generation.cc), num_return_sequences 1, no early stopping:
    the same candidates, float32 scores, finishing rule and ranking, so the same tokens."""
    max_new = min(max_new, model.model.decoder.embed_positions.weight.size(0))
    bos, eos = model.bos, model.eos
    batch = src.size(0)
    div = lambda n: float(max(n, 1)) ** length_penalty  # noqa: E731
    dec = MarianDecoder(model, src)
    rep = torch.arange(batch).repeat_interleave(beams)
    dec.rows(rep, True)
    live = list(range(batch))
    seqs = [[] for _ in range(batch * beams)]
    scores = [0.0 if i % beams == 0 else -math.inf for i in range(batch * beams)]
    prev = [bos] * (batch * beams)
    finished = [[] for _ in range(batch)]
    for t in range(max_new):
        n_live = len(live)
        n_rows = n_live * beams
        log_probs = dec.step(torch.tensor(prev))
        vocab = log_probs.size(1)
        row_scores = torch.tensor(scores, dtype=torch.float64).to(log_probs.dtype)
        cand = (log_probs + row_scores[:, None]).view(n_live, beams * vocab)
        width = min(2 * beams, beams * vocab)
        ts, ti = cand.topk(width, 1)
        ts, ti = ts.double().tolist(), ti.tolist()
        frm, toks, nxt = [0] * n_rows, [0] * n_rows, [-math.inf] * n_rows
        done = [False] * n_live
        last = t + 1 == max_new
        for a in range(n_live):
            b = live[a]
            filled = 0
            for j in range(width):
                s = ts[a][j]
                if not math.isfinite(s):
                    break
                row = a * beams + ti[a][j] // vocab
                tok = ti[a][j] % vocab
                if tok == eos:
                    if j < beams:
                        toks_eos = seqs[row] + [tok]
                        finished[b].append((s / div(len(toks_eos)), toks_eos))
                elif filled < beams:
                    frm[a * beams + filled], toks[a * beams + filled], nxt[a * beams + filled] = row, tok, s
                    filled += 1
                if filled == beams and j + 1 >= beams:
                    break
            for f in range(filled, beams):
                frm[a * beams + f], toks[a * beams + f] = a * beams, eos
            fin = finished[b]
            best_live = nxt[a * beams]
            if last or not math.isfinite(best_live):
                is_done = True
            elif len(fin) < 1:
                is_done = False
            else:
                d1, d2 = div(t + 2), div(max_new)
                bound = best_live / max(d1, d2) if best_live <= 0 else best_live / min(d1, d2)
                is_done = max(x[0] for x in fin) >= bound
            if is_done and len(fin) < 1:
                for k in range(beams):
                    i = a * beams + k
                    if not math.isfinite(nxt[i]):
                        break
                    cut = seqs[frm[i]] + [toks[i]]
                    fin.append((nxt[i] / div(len(cut)), cut))
            done[a] = is_done
        dec.rows(torch.tensor(frm), False)
        seqs = [seqs[frm[i]] + [toks[i]] for i in range(n_rows)]
        scores, prev = nxt, toks
        if not any(done):
            continue
        keep, still = [], []
        for a in range(n_live):
            if not done[a]:
                still.append(live[a])
                keep.extend(range(a * beams, a * beams + beams))
        live = still
        if not live:
            break
        dec.rows(torch.tensor(keep), True)
        seqs = [seqs[i] for i in keep]
        scores = [scores[i] for i in keep]
        prev = [prev[i] for i in keep]
    out = []
    for fin in finished:
        fin = sorted(fin, key=lambda x: -x[0])  # stable, as std::stable_sort
        out.append(fin[0][1])
    return out


# ---- rows -----------------------------------------------------------------------------------

def family(row):
    return {"gpt-prefill": "gpt", "gpt-gen": "gpt", "bert": "bert", "mt-encoder": "mt", "mt-translate": "mt"}[row]


def load(row, d):
    return {"gpt": load_gpt, "bert": load_bert, "mt": load_marian}[family(row)](d)


def mt_batches(inputs):
    return [inputs[f"src_{i}"] for i in range(int(inputs["batches"].item()))]


def make_runner(row, model, inputs):
    """A function running the row once and returning what it computes."""
    if row == "gpt-prefill":
        ids = inputs["input_ids"]
        return lambda: model(ids)[0]
    if row == "gpt-gen":
        prompts = inputs["prompts"]
        return lambda: greedy(model, prompts, int(inputs["new_tokens"].item()))
    if row == "bert":
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        types = torch.zeros_like(ids)
        return lambda: model(ids, types, mask)["logits"]
    if row == "mt-encoder":
        enc = MarianEncoder(model)
        return lambda: [enc(s) for s in mt_batches(inputs)]
    if row == "mt-translate":
        return lambda: [beam_search(model, s) for s in mt_batches(inputs)]
    raise SystemExit(f"unknown row {row}")


def outputs_of(row, result, inputs):
    """What the equality checks read: the rows' logits (prefill: the positions of `positions`),
    tokens, encoder states, or translations (one row of ids per sentence, -1 padded)."""
    if row == "gpt-prefill":
        return {"logits": result.index_select(1, inputs["positions"]).contiguous()}
    if row == "gpt-gen":
        return {"tokens": result.contiguous()}
    if row == "bert":
        return {"logits": result.contiguous()}
    if row == "mt-encoder":
        return {"logits": torch.cat([r.reshape(-1) for r in result])}
    sents = [s for batch in result for s in batch]
    n = max(len(s) for s in sents)
    out = torch.full((len(sents), n), -1, dtype=torch.long)
    for i, s in enumerate(sents):
        out[i, :len(s)] = torch.tensor(s)
    return {"tokens": out}


def cmd_make(a):
    kind, cfg = PRESETS[a.preset]
    assert kind == a.kind, f"preset {a.preset} is a {kind}"
    torch.manual_seed(a.seed)
    os.makedirs(a.dir, exist_ok=True)
    task = {"gpt": "language_modeling", "bert": "text_classification", "transformer": "translation"}[kind]
    if kind == "gpt":
        model = hf_gpt2.GPT2LMHeadModel(hf_gpt2.Config(cfg))
    elif kind == "bert":
        cfg = dict(cfg, num_labels=2, hidden_act="gelu", layer_norm_eps=1e-12, type_vocab_size=2)
        model = hf_bert.BertForSequenceClassification(cfg)
    else:
        model = hf_marian.MarianMTModel(marian_config(cfg))
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "LayerNorm" in name or "ln_" in name or "layer_norm" in name:
                p.fill_(1.0 if name.endswith("weight") else 0.0)
            elif name.endswith("bias"):
                p.zero_()
            elif "embed_positions" not in name:
                p.normal_(0, 0.02)
        if kind == "transformer":  # one joint embedding, tied to the output layer
            w = model.model.shared.weight
            for t in (model.model.encoder.embed_tokens.weight, model.model.decoder.embed_tokens.weight,
                      model.lm_head.weight):
                t.copy_(w)
    tensors = {k: v.contiguous() for k, v in model.state_dict().items()}
    config = {"task": task, "model": cfg, "train": {"check_memory": False}}
    with open(os.path.join(a.dir, "config.json"), "w") as f:
        json.dump(config, f, indent=1)
    st_io.save(os.path.join(a.dir, "model.safetensors"), tensors, {"format": "pt"})
    with open(os.path.join(a.dir, "RANDOM_WEIGHTS"), "w") as f:
        f.write(f"random weights N(0, 0.02) of preset {a.preset}, seed {a.seed} (tools/bench/infer_bench.py make)\n")


def cmd_inputs(a):
    g = torch.Generator().manual_seed(64)
    m = zoo_config(a.dir)["model"]
    out = {}
    if a.row == "gpt-prefill":
        t = min(PREFILL_LEN, m["n_positions"])
        out["input_ids"] = torch.randint(0, m["vocab_size"], (PREFILL_BATCH, t), generator=g)
        out["positions"] = torch.unique(torch.cat([torch.arange(0, t, 32), torch.tensor([t - 1])]))
    elif a.row == "gpt-gen":
        prompt = 64 if m["n_positions"] >= 256 else 16
        out["prompts"] = torch.randint(0, m["vocab_size"], (a.batch, prompt), generator=g)
        out["new_tokens"] = torch.tensor([GEN_NEW])
    elif a.row == "bert":
        out["input_ids"] = torch.randint(1000, m["vocab_size"], (BERT_BATCH, BERT_LEN), generator=g)
        out["input_ids"][:, 0] = 101  # [CLS]
        out["attention_mask"] = torch.ones(BERT_BATCH, BERT_LEN, dtype=torch.long)
    else:  # mt-*: batches of 32 sentences of similar lengths (zoo translate's bucketing: by length)
        if a.src_ids:
            with open(a.src_ids) as f:
                sents = [[int(x) for x in line.split()] for line in f if line.strip()]
        else:  # 256 random sources of 5..30 tokens, ending with <end> as the text side's
            lengths = torch.randint(5, 31, (256,), generator=g).tolist()
            sents = [torch.randint(4, m["source_vocab_size"], (n - 1,), generator=g).tolist() + [m["eos_id"]]
                     for n in lengths]
        order = sorted(range(len(sents)), key=lambda i: len(sents[i]))
        batches = [order[i:i + MT_BATCH] for i in range(0, len(order), MT_BATCH)]
        for k, idx in enumerate(batches):
            n = max(len(sents[i]) for i in idx)
            src = torch.full((len(idx), n), m.get("pad_id", 0), dtype=torch.long)
            for r, i in enumerate(idx):
                src[r, :len(sents[i])] = torch.tensor(sents[i])
            out[f"src_{k}"] = src
        out["batches"] = torch.tensor([len(batches)])
        out["sentences"] = torch.tensor([len(sents)])
    st_io.save(a.out, out)


def cmd_run(a):
    if not a.default_threads:
        torch.set_num_threads(a.threads)
    model = load(a.row, a.dir)
    if a.int8:
        model = torch.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    inputs = st_io.load(a.inputs)
    run = make_runner(a.row, model, inputs)
    times = []
    with torch.inference_mode():
        for i in range(a.warmup + a.repeat):
            t0 = time.perf_counter()
            result = run()
            if i >= a.warmup:
                times.append(time.perf_counter() - t0)
        if a.out:
            st_io.save(a.out, outputs_of(a.row, result, inputs))
    print(json.dumps({"impl": "pytorch", "row": a.row, "int8": a.int8, "threads": torch.get_num_threads(),
                      "openblas_num_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""),
                      "median_ms": 1000 * statistics.median(times), "runs": len(times)}))


def cmd_export(a):
    model = load(a.row, a.dir)
    inputs = st_io.load(a.inputs)
    with torch.no_grad():
        if a.row == "gpt-prefill":
            class Prefill(nn.Module):
                def __init__(self, m):
                    super().__init__()
                    self.m = m

                def forward(self, ids):
                    return self.m(ids)[0]
            torch.onnx.export(Prefill(model), (inputs["input_ids"],), a.out, input_names=["input_ids"],
                              output_names=["logits"], opset_version=14)
        elif a.row == "bert":
            class Cls(nn.Module):
                def __init__(self, m):
                    super().__init__()
                    self.m = m

                def forward(self, ids, types, mask):
                    return self.m(ids, types, mask)["logits"]
            ids = inputs["input_ids"]
            torch.onnx.export(Cls(model), (ids, torch.zeros_like(ids), inputs["attention_mask"]), a.out,
                              input_names=["input_ids", "token_type_ids", "attention_mask"],
                              output_names=["logits"], opset_version=14)
        elif a.row == "mt-encoder":
            src = mt_batches(inputs)[0]
            torch.onnx.export(MarianEncoder(model), (src,), a.out, input_names=["input_ids"],
                              output_names=["hidden"], opset_version=14,
                              dynamic_axes={"input_ids": {0: "batch", 1: "length"}, "hidden": {0: "batch", 1: "length"}})
        else:
            raise SystemExit(f"no ONNX export for row {a.row}")


def cmd_compare(a):
    x, y = st_io.load(a.a), st_io.load(a.b)
    if a.kind == "logits":
        p, q = x["logits"].float(), y["logits"].float()
        if p.shape != q.shape:
            print(json.dumps({"error": f"shapes {list(p.shape)} and {list(q.shape)}"}))
            return
        d = (p - q).abs().max().item()
        top = (p.reshape(-1, p.size(-1)).argmax(-1) == q.reshape(-1, q.size(-1)).argmax(-1)).float().mean().item()
        print(json.dumps({"max_abs_diff": d, "max_abs": p.abs().max().item(), "argmax_agreement": top}))
    else:
        p, q = x["tokens"], y["tokens"]
        n = max(p.size(1), q.size(1))
        pad = lambda t: torch.cat([t, torch.full((t.size(0), n - t.size(1)), -1, dtype=t.dtype)], 1)  # noqa: E731
        p, q = pad(p), pad(q)
        rows = (p == q).all(1).float().mean().item()
        tok = ((p == q) & (p >= 0)).sum().item() / max(1, (p >= 0).sum().item())
        print(json.dumps({"identical": bool((p == q).all()), "rows_identical": rows, "token_agreement": tok}))


def cmd_profile_table(a):
    """Self time per operator name over a Chrome trace (complete events of one thread nest)."""
    with open(a.trace) as f:
        data = json.load(f)
    events = data["traceEvents"] if isinstance(data, dict) else data
    events = [e for e in events if e.get("ph") == "X" and "dur" in e]
    self_us, count = {}, {}
    by_tid = {}
    for e in events:
        by_tid.setdefault(e.get("tid"), []).append(e)
    total = 0.0
    for evs in by_tid.values():
        evs.sort(key=lambda e: (float(e["ts"]), -float(e["dur"])))
        stack = []
        for e in evs:
            ts, dur = float(e["ts"]), float(e["dur"])
            while stack and ts >= stack[-1][0] + stack[-1][1]:
                stack.pop()
            if stack:
                stack[-1][2]["child"] = stack[-1][2].get("child", 0.0) + dur
            else:
                total += dur
            e["child"] = 0.0
            stack.append((ts, dur, e))
        for e in evs:
            s = float(e["dur"]) - e.get("child", 0.0)
            self_us[e["name"]] = self_us.get(e["name"], 0.0) + s
            count[e["name"]] = count.get(e["name"], 0) + 1
    print(f"| operator | self ms | share | calls |\n|---|---:|---:|---:|")
    for name, us in sorted(self_us.items(), key=lambda kv: -kv[1])[:a.n]:
        print(f"| {name} | {us / 1000:.1f} | {100 * us / max(total, 1e-9):.1f}% | {count[name]} |")
    print(f"| (all, top level) | {total / 1000:.1f} | 100% | |")


class MatrixProductFlops(TorchDispatchMode):
    """Counts the floating-point operations (2 per multiply-add) of the matrix products run
    under it, from their operands' shapes (nothing is recorded per call)."""

    def __init__(self):
        super().__init__()
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if name in ("mm", "addmm", "mv", "addmv", "bmm", "baddbmm"):
            a, b = args[1:3] if name in ("addmm", "addmv", "baddbmm") else args[:2]  # after the added input
            batch = a.shape[0] if a.dim() == 3 else 1
            rows, inner = a.shape[-2], a.shape[-1]
            cols = b.shape[-1] if b.dim() >= 2 else 1
            self.flops += 2 * batch * rows * inner * cols
        return func(*args, **(kwargs or {}))


def cmd_flops(a):
    torch.set_num_threads(1)
    model = load(a.row, a.dir)
    inputs = st_io.load(a.inputs)
    run = make_runner(a.row, model, inputs)
    counter = MatrixProductFlops()
    with torch.no_grad(), counter:  # (under inference_mode the mode would see linear, not its product)
        run()
    print(json.dumps({"row": a.row, "matrix_product_flops": counter.flops}))


def cmd_peak(a):
    torch.set_num_threads(a.threads)
    x, y = torch.randn(2048, 2048), torch.randn(2048, 2048)
    best = float("inf")
    for _ in range(6):  # the first warms the BLAS's threads and buffers up
        t0 = time.perf_counter()
        torch.mm(x, y)
        best = min(best, time.perf_counter() - t0)
    print(json.dumps({"threads": torch.get_num_threads(), "fp32_gflops": 2 * 2048 ** 3 / best / 1e9}))


def positionals(parser, *names):
    """Adds the positional arguments `names` to `parser`; returns it."""
    for name in names:
        parser.add_argument(name)
    return parser


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("make")
    s.add_argument("kind", choices=["gpt", "bert", "transformer"])
    s.add_argument("dir")
    s.add_argument("--preset", required=True, choices=sorted(PRESETS))
    s.add_argument("--seed", type=int, default=0)
    s = positionals(sub.add_parser("inputs"), "row", "dir", "out")
    s.add_argument("--batch", type=int, default=1)
    s.add_argument("--src-ids")
    s = positionals(sub.add_parser("run"), "row", "dir", "inputs")
    s.add_argument("--int8", action="store_true")
    s.add_argument("--threads", type=int, default=2)
    s.add_argument("--default-threads", action="store_true")
    s.add_argument("--warmup", type=int, default=1)
    s.add_argument("--repeat", type=int, default=3)
    s.add_argument("--out")
    positionals(sub.add_parser("export"), "row", "dir", "inputs", "out")
    s = sub.add_parser("compare")
    s.add_argument("kind", choices=["logits", "tokens"])
    s.add_argument("a")
    s.add_argument("b")
    s = sub.add_parser("profile-table")
    s.add_argument("trace")
    s.add_argument("n", type=int, nargs="?", default=15)
    positionals(sub.add_parser("flops"), "row", "dir", "inputs")
    s = sub.add_parser("peak")
    s.add_argument("--threads", type=int, default=2)
    a = p.parse_args()
    {"make": cmd_make, "inputs": cmd_inputs, "run": cmd_run, "export": cmd_export, "compare": cmd_compare,
     "profile-table": cmd_profile_table, "flops": cmd_flops, "peak": cmd_peak}[a.cmd](a)


if __name__ == "__main__":
    main()
