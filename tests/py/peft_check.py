"""Whether PEFT and transformers read what `zoo export` writes for a LoRA run (a GPU-machine check:
the Debian VM has neither package).

  peft_check.py BASE_DIR ADAPTER_DIR MERGED_DIR
      BASE_DIR: the Hugging Face GPT-2 the run started from (train.init_from);
      ADAPTER_DIR: `zoo export --adapter` (adapter_model.safetensors + adapter_config.json);
      MERGED_DIR: `zoo export --max-shard-size ...` of the same checkpoint (the adapters merged,
      in shards with model.safetensors.index.json).
      Loads the adapter with peft.PeftModel.from_pretrained onto the base, the merged export
      with transformers' from_pretrained, and the adapter again through lora_reference.py (the
      paper's formula), and compares the three sets of logits on random tokens. Exits 1 when
      any pair differs by more than 1e-4 or the merged export is not sharded.
"""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hf_gpt2  # noqa: E402
import lora_reference  # noqa: E402


def main(base_dir, adapter_dir, merged_dir):
    import peft
    import transformers
    from transformers import GPT2LMHeadModel

    index = os.path.join(merged_dir, "model.safetensors.index.json")
    with open(index) as f:
        shards = sorted(set(json.load(f)["weight_map"].values()))
    print(f"transformers {transformers.__version__}, peft {peft.__version__}; "
          f"merged export: {len(shards)} shards ({', '.join(shards[:3])}{', ...' if len(shards) > 3 else ''})")

    base = GPT2LMHeadModel.from_pretrained(base_dir).eval()
    adapted = peft.PeftModel.from_pretrained(base, adapter_dir).eval()
    trainable = sum(p.numel() for n, p in adapted.named_parameters() if "lora_" in n)
    merged = GPT2LMHeadModel.from_pretrained(merged_dir).eval()
    reference = lora_reference.with_adapter(hf_gpt2.load(base_dir), adapter_dir).eval()

    torch.manual_seed(0)
    ids = torch.randint(0, base.config.vocab_size, (3, min(32, base.config.n_positions)))
    with torch.no_grad():
        logits = {"peft": adapted(input_ids=ids).logits, "merged (transformers)": merged(input_ids=ids).logits,
                  "paper's formula": reference(ids)}
        plain = GPT2LMHeadModel.from_pretrained(base_dir).eval()(input_ids=ids).logits
    print(f"LoRA parameters PEFT loaded: {trainable}; the adapter moves the base's logits by up to "
          f"{(logits['peft'] - plain).abs().max().item():.3g}")
    worst = 0.0
    names = list(logits)
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            d = (logits[a] - logits[b]).abs().max().item()
            worst = max(worst, d)
            print(f"max |logit difference| {a} vs {b}: {d:.3g}")
    if len(shards) < 2:
        raise SystemExit("the merged export is not sharded")
    if worst > 1e-4:
        raise SystemExit("logits differ")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(*sys.argv[1:])
