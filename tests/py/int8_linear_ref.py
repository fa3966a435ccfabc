"""PyTorch's dynamic int8 Linear (the reference for models/kernels/int8_linear.cc).

  int8_linear_ref.py IN.safetensors OUT.safetensors ENGINE
      IN holds "weight" (out, in), "bias" (out) and inputs "x0", "x1", ...; for each input OUT
      gets "module_xI": torch.ao.quantization.quantize_dynamic's Linear with
      per_channel_dynamic_qconfig (which calls quantized::linear_dynamic with
      reduce_range=True), and "op_xI": the same packed weight through quantized::linear_dynamic
      with reduce_range=False; "weight_int" and "weight_scale" are the packed int8 weight and
      its per-row scales.
"""
import os
import sys

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

try:
    from torch.ao.quantization import per_channel_dynamic_qconfig, quantize_dynamic
except ImportError:  # PyTorch < 1.10
    from torch.quantization import per_channel_dynamic_qconfig, quantize_dynamic


def main():
    src, dst, engine = sys.argv[1], sys.argv[2], sys.argv[3]
    torch.backends.quantized.engine = engine
    t = st_io.load(src)
    weight, bias = t["weight"], t["bias"]
    model = nn.Sequential(nn.Linear(weight.shape[1], weight.shape[0]))
    with torch.no_grad():
        model[0].weight.copy_(weight)
        model[0].bias.copy_(bias)
    model.eval()
    q = quantize_dynamic(model, {nn.Linear: per_channel_dynamic_qconfig}, dtype=torch.qint8)
    packed = q[0]._packed_params._packed_params
    out = {}
    for name in sorted(k for k in t if k.startswith("x")):
        x = t[name]
        out["module_" + name] = q(x)
        out["op_" + name] = torch.ops.quantized.linear_dynamic(x, packed, False)
    w, _ = torch.ops.quantized.linear_unpack(packed)
    out["weight_int"] = w.int_repr()
    out["weight_scale"] = w.q_per_channel_scales().float()
    st_io.save(dst, out)


if __name__ == "__main__":
    main()
