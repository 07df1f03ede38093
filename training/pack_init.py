"""Packs a checkpoint as per-row int8 (about half the bf16 size) to carry it to the GPU machine
as a starting point, and unpacks it back to a bf16/f32 safetensors file there:

    python3 training/pack_init.py pack model.safetensors init.pt
    python3 training/pack_init.py unpack init.pt model.safetensors

Only for --init: the unpacked weights differ from the packed ones by the int8 rounding (at most
half a step of each row's absmax / 127), which fine-tuning absorbs. Float32 tensors (the router
gate and its correction bias) and 1-D tensors are kept exactly."""
import sys

import torch

import safetensors_io


def pack(src, dst):
    packed = {}
    for name, t in safetensors_io.load(src).items():
        if t.dtype == torch.float32 or t.dim() < 2:
            packed[name] = ("raw", t)
            continue
        x = t.float()
        scale = x.abs().amax(-1, keepdim=True).clamp_min(1e-12) / 127.0
        packed[name] = ("int8", (x / scale).round().to(torch.int8), scale.to(torch.float16), str(t.dtype))
    torch.save(packed, dst)


def unpack(src, dst):
    out = {}
    for name, rec in torch.load(src, weights_only=True).items():
        if rec[0] == "raw":
            out[name] = rec[1]
        else:
            _, q, scale, dtype = rec
            out[name] = (q.float() * scale.float()).to(getattr(torch, dtype.split(".")[-1]))
    safetensors_io.save(out, dst, {"format": "pt"})


if __name__ == "__main__":
    {"pack": pack, "unpack": unpack}[sys.argv[1]](sys.argv[2], sys.argv[3])
