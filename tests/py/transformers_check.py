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
"""
import json
import os
import sys

import numpy as np
import torch
from PIL import Image
from transformers import ViTConfig, ViTForImageClassification


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


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else ""
    if cmd == "classify" and len(sys.argv) >= 4:
        classify(sys.argv[2], sys.argv[3:])
    elif cmd == "make" and len(sys.argv) == 4:
        make(sys.argv[2], sys.argv[3])
    elif cmd == "compare" and len(sys.argv) == 4:
        compare(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
