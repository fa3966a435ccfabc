#!/usr/bin/env python3
"""Interop checks against Hugging Face `transformers` itself (not part of ctest: Debian has no
`transformers`; tools/check_gpu.sh runs these where it is installed).

  transformers_check.py classify MODEL_DIR IMAGE...
      loads MODEL_DIR with ViTForImageClassification.from_pretrained (a `zoo export`
      directory), normalises each image as its preprocessor_config.json says and prints
      "FILE<TAB>LABEL<TAB>PROBABILITY" per image, the format of `zoo classify`.
  transformers_check.py make MODEL_DIR IMAGE_DIR
      writes a randomly initialised transformers ViT (save_pretrained: model.safetensors,
      config.json) with a preprocessor_config.json, and a few PNG images of its input size
      into IMAGE_DIR, for `zoo classify --checkpoint MODEL_DIR` to read.
  transformers_check.py compare A.tsv B.tsv
      exits 1 unless both outputs name the same label per file and probabilities agree to 2e-4.

GPT-2 (GPT2LMHeadModel):
  transformers_check.py gpt2-loss MODEL_DIR TOKENS_BIN [VALIDATION_FRACTION] [MAX_WINDOWS]
      loads MODEL_DIR with from_pretrained (a `zoo export` directory) and prints, as one JSON
      line, its fp32 loss on the validation split of a zoo run's token stream (tokens.bin, the
      last VALIDATION_FRACTION, default 0.1), over the windows `zoo eval` reads: consecutive
      windows of n_positions + 1 tokens, at most MAX_WINDOWS (default 2000) spread evenly.
  transformers_check.py gpt2-make MODEL_DIR
      writes a randomly initialised transformers GPT2LMHeadModel (save_pretrained) with a
      byte-level BPE tokenizer (vocab.json + merges.txt), for `zoo generate` to read.
  transformers_check.py gpt2-greedy MODEL_DIR N PROMPT
      prints the prompt and N greedily generated tokens as bytes (the prompt encoded by
      transformers' AutoTokenizer, then its generate), the format of `zoo generate --greedy`;
      stops early at the end token.
  transformers_check.py same A B
      exits 1 unless files A and B hold the same bytes.
"""
import json
import os
import sys

import numpy as np
import torch
from PIL import Image
from transformers import GPT2Config, GPT2LMHeadModel, ViTConfig, ViTForImageClassification

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools", "bench"))
import hf_gpt2  # noqa: E402  (the byte-level BPE fixture writer)
import nanogpt_eval  # noqa: E402  (zoo eval's windows over a run's validation split)


def classify(model_dir, images):
    model = ViTForImageClassification.from_pretrained(model_dir).eval()
    pre = json.load(open(os.path.join(model_dir, "preprocessor_config.json")))
    c = model.config.num_channels
    mean = torch.tensor(pre["image_mean"], dtype=torch.float64).reshape(-1, 1, 1)
    std = torch.tensor(pre["image_std"], dtype=torch.float64).reshape(-1, 1, 1)
    for path in images:
        img = Image.open(path).convert("L" if c == 1 else "RGB")
        size = model.config.image_size
        if img.size != (size, size):
            raise SystemExit(f"{path}: {img.size}, expected {size}x{size} (no resizing here)")
        x = torch.from_numpy(np.asarray(img, dtype=np.float64)).reshape(size, size, c).permute(2, 0, 1)
        x = ((x / 255.0 - mean) / std).float().unsqueeze(0)
        with torch.no_grad():
            p = torch.softmax(model(pixel_values=x).logits, -1)[0]
        k = int(p.argmax())
        print(f"{path}\t{model.config.id2label[k]}\t{float(p[k]):.4f}")


def make(model_dir, image_dir):
    torch.manual_seed(5)
    labels = ["cat", "dog", "bird", "fish"]
    cfg = ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=48, num_hidden_layers=2,
                    num_attention_heads=4, intermediate_size=96, hidden_act="gelu",
                    id2label=dict(enumerate(labels)), label2id={l: i for i, l in enumerate(labels)})
    model = ViTForImageClassification(cfg)
    with torch.no_grad():  # non-trivial norms and biases so every tensor matters
        for p in model.parameters():
            p.add_(torch.randn_like(p) * 0.2)
    model.save_pretrained(model_dir, safe_serialization=True)
    json.dump({"image_processor_type": "ViTImageProcessor", "do_normalize": True, "do_rescale": True,
               "rescale_factor": 1 / 255, "do_resize": True, "size": {"height": 32, "width": 32},
               "image_mean": [0.5, 0.4, 0.3], "image_std": [0.2, 0.25, 0.3]},
              open(os.path.join(model_dir, "preprocessor_config.json"), "w"))
    os.makedirs(image_dir, exist_ok=True)
    rng = np.random.default_rng(7)
    for i in range(6):
        Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(
            os.path.join(image_dir, f"img{i}.png"))


def compare(a, b):
    def rows(f):
        return {l.split("\t")[0]: l.rstrip("\n").split("\t")[1:] for l in open(f) if l.strip()}
    ra, rb = rows(a), rows(b)
    if set(ra) != set(rb):
        raise SystemExit(f"different files: {sorted(ra)} vs {sorted(rb)}")
    worst = 0.0
    for f in ra:
        if ra[f][0] != rb[f][0]:
            raise SystemExit(f"{f}: label {ra[f][0]} vs {rb[f][0]}")
        worst = max(worst, abs(float(ra[f][1]) - float(rb[f][1])))
    print(f"{len(ra)} files: same labels, max |probability difference| {worst:.4f}")
    if worst > 2e-4:
        raise SystemExit("probabilities differ")


def gpt2_loss(model_dir, tokens, fraction=0.1, max_windows=2000):
    model = GPT2LMHeadModel.from_pretrained(model_dir).eval()
    val = nanogpt_eval.validation_split(tokens, fraction)

    def loss(x, y):
        return torch.nn.functional.cross_entropy(model(x).logits.float().flatten(0, 1), y.flatten())

    t = model.config.n_positions
    n = min((len(val) - 1) // t, max_windows) if max_windows > 0 else (len(val) - 1) // t
    print(json.dumps({"loss": nanogpt_eval.whole_split(loss, val, t, max_windows=max_windows), "windows": n,
                      "tokens": n * t}))


def gpt2_make(model_dir):
    torch.manual_seed(6)
    os.makedirs(model_dir, exist_ok=True)
    vocab = hf_gpt2.write_tokenizer(model_dir)
    cfg = GPT2Config(vocab_size=vocab, n_positions=64, n_embd=48, n_layer=2, n_head=4,
                     bos_token_id=vocab - 1, eos_token_id=vocab - 1)
    model = GPT2LMHeadModel(cfg)
    with torch.no_grad():  # large enough weights that greedy decoding has clear winners
        for p in model.parameters():
            p.normal_(0, 0.1)
    model.save_pretrained(model_dir, safe_serialization=True)


def gpt2_greedy(model_dir, n, prompt):
    from transformers import AutoTokenizer  # finds vocab.json + merges.txt by the model type

    model = GPT2LMHeadModel.from_pretrained(model_dir).eval()
    ids = AutoTokenizer.from_pretrained(model_dir)(prompt, add_special_tokens=False)["input_ids"]
    x = torch.tensor([ids])
    eos = model.config.eos_token_id
    with torch.no_grad():
        out = model.generate(x, attention_mask=torch.ones_like(x), max_new_tokens=n, do_sample=False, num_beams=1,
                             pad_token_id=eos, eos_token_id=eos)[0].tolist()
    new = out[len(ids):]
    if eos in new:
        new = new[:new.index(eos)]
    # The tokens' bytes through GPT-2's byte-to-unicode table, read here rather than from the
    # tokenizer's internals (which differ between transformers versions).
    symbols = {i: t for t, i in json.load(open(os.path.join(model_dir, "vocab.json"))).items()}
    byte_of = {ch: b for b, ch in hf_gpt2.bytes_to_unicode().items()}
    sys.stdout.buffer.write(bytes(byte_of[c] for i in ids + new for c in symbols[i]) + b"\n")


def same(a, b):
    x, y = open(a, "rb").read(), open(b, "rb").read()
    print(f"{a}: {x!r}\n{b}: {y!r}")
    if x != y:
        raise SystemExit("different outputs")


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "classify" and len(sys.argv) >= 4:
        classify(sys.argv[2], sys.argv[3:])
    elif cmd == "make" and len(sys.argv) == 4:
        make(sys.argv[2], sys.argv[3])
    elif cmd == "compare" and len(sys.argv) == 4:
        compare(sys.argv[2], sys.argv[3])
    elif cmd == "gpt2-loss" and 4 <= len(sys.argv) <= 6:
        gpt2_loss(sys.argv[2], sys.argv[3], *[f(x) for f, x in zip((float, int), sys.argv[4:])])
    elif cmd == "gpt2-make" and len(sys.argv) == 3:
        gpt2_make(sys.argv[2])
    elif cmd == "gpt2-greedy" and len(sys.argv) == 5:
        gpt2_greedy(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif cmd == "same" and len(sys.argv) == 4:
        same(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
