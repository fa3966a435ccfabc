#!/usr/bin/env python3
"""Independent safetensors reference (struct + json + torch only), for tests.

  safetensors_ref.py write OUT   writes the tensors of reference_tensors() and METADATA to OUT,
                                 laid out differently from zoo's writer (header keys and data in
                                 other orders, unaligned data) to exercise the C++ reader.
  safetensors_ref.py read IN     strictly validates IN and prints a JSON summary:
      {"header_size": N, "header_padding_ok": bool, "metadata": {...},
       "tensors": {name: {"dtype": "F32", "shape": [...], "values": [...flat...],
                          "aligned": bool}}}
    "values" are exact (floats of every width print as exact doubles), "aligned" says whether
    the tensor's data sits at a file offset that is a multiple of its element size.
    Exits 1 with a message on stderr if IN is not a valid safetensors file.
"""
import json
import struct
import sys

import torch

DTYPES = {
    "F64": (torch.float64, 8),
    "F32": (torch.float32, 4),
    "F16": (torch.float16, 2),
    "BF16": (torch.bfloat16, 2),
    "I64": (torch.int64, 8),
    "I32": (torch.int32, 4),
    "I16": (torch.int16, 2),
    "I8": (torch.int8, 1),
    "U8": (torch.uint8, 1),
    "BOOL": (torch.bool, 1),
}
NAME_OF = {dtype: name for name, (dtype, _) in DTYPES.items()}

METADATA = {"format": "pt", "note": "written by safetensors_ref.py \u00e9\u00e8"}


def reference_tensors():
    """The tensors `write` stores; tests/safetensors_test.cc expects exactly these values."""
    return {
        "f32": torch.tensor([[1.5, -2.25, 3.0], [0.0, 1e-3, -7.0]], dtype=torch.float32),
        "f16": torch.tensor([0.5, -1.0, 65504.0, 2.0 ** -14], dtype=torch.float16),
        "bf16": torch.tensor([1.0, -2.5, 256.0, 0.15625], dtype=torch.bfloat16),
        "f64": torch.tensor([[0.1], [-1e300]], dtype=torch.float64),
        "i64": torch.tensor([-(2 ** 62), 0, 2 ** 62 + 3, -1], dtype=torch.int64),
        "i32": torch.tensor([-(2 ** 31), 2 ** 31 - 1, 7], dtype=torch.int32),
        "i16": torch.tensor([-32768, 32767], dtype=torch.int16),
        "i8": torch.tensor([-128, 127, 0], dtype=torch.int8),
        "u8": torch.tensor([[0, 1], [255, 128]], dtype=torch.uint8),
        "bool": torch.tensor([True, False, True]),
        "scalar": torch.tensor(3.25, dtype=torch.float64),
        "empty": torch.zeros((0, 3), dtype=torch.float32),
    }


def tensor_bytes(t):
    t = t.contiguous()
    if t.numel() == 0:
        return b""
    if t.dtype == torch.bfloat16:  # numpy has no bfloat16; same bits as int16
        t = t.view(torch.int16)
    return t.numpy().tobytes()


def write(path):
    tensors = reference_tensors()
    # Data in reverse name order (so narrow dtypes come before wide ones: unaligned), header
    # keys in definition order, metadata last: none of it is what zoo's writer does.
    data = b""
    offsets = {}
    for name in sorted(tensors, reverse=True):
        b = tensor_bytes(tensors[name])
        offsets[name] = [len(data), len(data) + len(b)]
        data += b
    header = {}
    for name, t in tensors.items():
        header[name] = {"dtype": NAME_OF[t.dtype], "shape": list(t.shape),
                        "data_offsets": offsets[name]}
    header["__metadata__"] = METADATA
    text = json.dumps(header, ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


def fail(path, message):
    sys.stderr.write("%s: %s\n" % (path, message))
    sys.exit(1)


def read(path):
    with open(path, "rb") as f:
        buf = f.read()
    if len(buf) < 8:
        fail(path, "shorter than 8 bytes")
    (n,) = struct.unpack("<Q", buf[:8])
    if 8 + n > len(buf):
        fail(path, "header size past the end of the file")
    raw = buf[8:8 + n]
    stripped = raw.rstrip(b" ")
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        fail(path, "header is not JSON: %s" % e)
    if not isinstance(header, dict):
        fail(path, "header is not an object")
    metadata = header.pop("__metadata__", {})
    if not all(isinstance(v, str) for v in metadata.values()):
        fail(path, "non-string metadata value")
    data = buf[8 + n:]

    entries = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    pos = 0
    summary = {}
    for name, info in entries:
        dtype, size = DTYPES[info["dtype"]]
        shape = info["shape"]
        begin, end = info["data_offsets"]
        if begin != pos:
            fail(path, "tensor %s starts at %d, expected %d" % (name, begin, pos))
        numel = 1
        for d in shape:
            if not isinstance(d, int) or d < 0:
                fail(path, "bad shape for %s" % name)
            numel *= d
        if end - begin != numel * size or end > len(data):
            fail(path, "bad data_offsets for %s" % name)
        pos = end
        chunk = data[begin:end]
        if numel == 0:
            t = torch.empty(shape, dtype=dtype)
        else:
            t = torch.frombuffer(bytearray(chunk), dtype=dtype).reshape(shape)
        if dtype.is_floating_point:
            values = [float(v) for v in t.flatten().tolist()]
        else:
            values = t.flatten().tolist()
        summary[name] = {"dtype": info["dtype"], "shape": shape, "values": values,
                         "aligned": (8 + n + begin) % size == 0}
    if pos != len(data):
        fail(path, "data section has %d bytes, tensors cover %d" % (len(data), pos))
    print(json.dumps({
        "header_size": n,
        "header_padding_ok": (8 + n) % 8 == 0 and stripped.endswith(b"}")
                             and raw[len(stripped):] == b" " * (n - len(stripped)),
        "metadata": metadata,
        "tensors": summary,
    }, sort_keys=True))


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "read"):
        sys.exit("usage: safetensors_ref.py write OUT | read IN")
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        read(sys.argv[2])


if __name__ == "__main__":
    main()
