"""LoRA (Hu et al. 2021) on the plain-PyTorch GPT-2 of hf_gpt2.py, written from the paper's
formula and PEFT's file format, not from zoo's code: every layer named in adapter_config.json's
target_modules computes h = x W + b + (lora_alpha / r) * x A^T B^T, with A = lora_A.weight
(r x in) and B = lora_B.weight (out x r) from adapter_model.safetensors under the names
"base_model.model." + the layer's name + ".lora_A.weight".

  lora_reference.py logits BASE_DIR ADAPTER_DIR INPUT.safetensors OUTPUT.safetensors
      loads the base model (a Hugging Face GPT-2 directory) strictly, puts the adapter on it,
      writes the logits of INPUT's "input_ids"; fails when a tensor of the adapter file is not
      used or a targeted layer has none.
"""
import json
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_gpt2  # noqa: E402
import st_io  # noqa: E402


class LoraConv1D(nn.Module):
    def __init__(self, base, a, b, scaling):
        super().__init__()
        self.base, self.a, self.b, self.scaling = base, a, b, scaling

    def forward(self, x):
        return self.base(x) + self.scaling * (x @ self.a.t()) @ self.b.t()


def with_adapter(model, adapter_dir):
    with open(os.path.join(adapter_dir, "adapter_config.json")) as f:
        config = json.load(f)
    assert config["peft_type"] == "LORA", config["peft_type"]
    scaling = config["lora_alpha"] / config["r"]
    tensors = st_io.load(os.path.join(adapter_dir, "adapter_model.safetensors"))
    used = set()
    targets = config["target_modules"]
    for name, module in list(model.named_modules()):
        if not any(name == t or name.endswith("." + t) for t in targets):
            continue
        key = "base_model.model." + name
        a, b = tensors[key + ".lora_A.weight"], tensors[key + ".lora_B.weight"]
        assert a.shape[0] == config["r"] and b.shape[1] == config["r"], (a.shape, b.shape)
        used |= {key + ".lora_A.weight", key + ".lora_B.weight"}
        parent_name, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent_name), child, LoraConv1D(module, a, b, scaling))
    assert used == set(tensors), sorted(set(tensors) - used)
    return model


def main():
    if sys.argv[1] != "logits":
        raise SystemExit(__doc__)
    base_dir, adapter_dir, inp, out = sys.argv[2:6]
    model = with_adapter(hf_gpt2.load(base_dir), adapter_dir)
    ids = st_io.load(inp)["input_ids"].long()
    with torch.no_grad():
        st_io.save(out, {"logits": model(ids).float().contiguous()})


if __name__ == "__main__":
    main()
