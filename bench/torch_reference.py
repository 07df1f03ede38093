"""Plain PyTorch reference for the real-dimension MiniMax-M3 benchmark (bench/gpu-bench.ts).

Same shapes as moeserve's benchmark model: hidden 6144, 64/4 heads x 128, vocab 200064,
3 dense layers (MLP 12288) + N MoE layers (128 experts top-4 + the shared expert as expert
128, width 3072), MSA index projections, bf16 weights, random values. It times a decode step
at each batch size (context C per sequence; at C <= 2048 MSA selects every block, so dense
attention is the same computation) in eager mode and with torch.compile(mode="reduce-overhead")
(CUDA graphs), and a prefill of each T in --prefill (comma-separated) in eager mode.

    python3 bench/torch_reference.py --moe-layers 5 --context 1024 --batches 1,8,32,64,128 --out $OUT

MoE in eager mode is the usual loop over the experts a batch routes to; compiled mode needs
static shapes, so it gathers the routed experts' weights when few rows are routed and runs all
experts densely (weights read once) otherwise.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.nn.functional as F

D, H, HKV, DH, V = 6144, 64, 4, 128, 200064
E, K, I, IDENSE, ROT, THETA, DI = 128, 4, 3072, 12288, 64, 5e6, 128


def rms(x, w, eps=1e-6):
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + eps) * (1 + w)).to(x.dtype)


def rope(x, pos):  # x [T, h, dh]
    half = ROT // 2
    inv = THETA ** (-torch.arange(half, device=x.device, dtype=torch.float64) * 2 / ROT)
    ang = pos[:, None].double() * inv
    cos, sin = ang.cos().float()[:, None], ang.sin().float()[:, None]
    x1, x2 = x[..., :half].float(), x[..., half:ROT].float()
    out = torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin, x[..., ROT:].float()], -1)
    return out.to(x.dtype)


def swiglu(gu, alpha=1.702, limit=7.0):
    g, u = gu.chunk(2, -1)
    g = g.clamp(max=limit)
    u = u.clamp(-limit, limit)
    return g * torch.sigmoid(alpha * g) * (u + 1)


def p(*shape, std, dtype=torch.bfloat16):
    return torch.nn.Parameter((torch.rand(*shape, device="cuda", dtype=dtype) * 2 - 1) * std * math.sqrt(3), requires_grad=False)


class Layer(torch.nn.Module):
    def __init__(self, moe, sparse, batch, ctx_len):
        super().__init__()
        self.moe, self.sparse = moe, sparse
        self.in_norm, self.post_norm = p(D, std=0.05, dtype=torch.float32), p(D, std=0.05, dtype=torch.float32)
        self.qkv = p(H * DH + 2 * HKV * DH, D, std=D ** -0.5)
        self.o = p(D, H * DH, std=(H * DH) ** -0.5)
        self.q_norm, self.k_norm = p(DH, std=0.05, dtype=torch.float32), p(DH, std=0.05, dtype=torch.float32)
        if sparse:
            self.idx = p(HKV * DI + DI, D, std=D ** -0.5)
        if moe:
            self.gate = p(E, D, std=D ** -0.5, dtype=torch.float32)
            self.bias = p(E, std=0.01, dtype=torch.float32)
            self.w13 = p(E + 1, 2 * I, D, std=D ** -0.5)
            self.w2 = p(E + 1, D, I, std=I ** -0.5)
        else:
            self.w13 = p(2 * IDENSE, D, std=D ** -0.5)
            self.w2 = p(D, IDENSE, std=IDENSE ** -0.5)
        self.register_buffer("kc", torch.zeros(batch, HKV, ctx_len, DH, device="cuda", dtype=torch.bfloat16))
        self.register_buffer("vc", torch.zeros(batch, HKV, ctx_len, DH, device="cuda", dtype=torch.bfloat16))

    def attn(self, a, pos, start, n_seq):
        T = a.shape[0]
        qkv = a @ self.qkv.t()
        q, k, v = qkv.split([H * DH, HKV * DH, HKV * DH], -1)
        q = rope(rms(q.view(T, H, DH), self.q_norm), pos)
        k = rope(rms(k.view(T, HKV, DH), self.k_norm), pos)
        if self.sparse:  # index branch (selection is every block at these lengths)
            iq, ik = (a @ self.idx.t()).split([HKV * DI, DI], -1)
        S = T // n_seq  # tokens per sequence this step
        kt = k.view(n_seq, S, HKV, DH).transpose(1, 2)
        vt = v.view(n_seq, S, HKV, DH).transpose(1, 2)
        self.kc[:n_seq, :, start : start + S] = kt  # the new keys land at their positions
        self.vc[:n_seq, :, start : start + S] = vt
        L = start + S
        qt = q.view(n_seq, S, H, DH).transpose(1, 2)
        o = F.scaled_dot_product_attention(qt, self.kc[:n_seq, :, :L], self.vc[:n_seq, :, :L], is_causal=S > 1, enable_gqa=True)
        return o.transpose(1, 2).reshape(T, H * DH) @ self.o.t()

    def ffn(self, m, mode):
        if not self.moe:
            return swiglu(m @ self.w13.t()) @ self.w2.t()
        s = torch.sigmoid(m.float() @ self.gate.t())
        _, idx = (s + self.bias).topk(K, -1)
        w = s.gather(1, idx)
        w = w / w.sum(-1, keepdim=True) * 2.0
        T = m.shape[0]
        idx = torch.cat([idx, torch.full((T, 1), E, device=m.device, dtype=idx.dtype)], 1)
        w = torch.cat([w, torch.ones(T, 1, device=m.device)], 1).to(m.dtype)
        if mode == "loop":  # eager: loop over the routed experts
            out = torch.zeros_like(m)
            flat = idx.flatten()
            order = flat.argsort()
            counts = torch.bincount(flat, minlength=E + 1).tolist()
            rows = order // (K + 1)
            start = 0
            for e, c in enumerate(counts):
                if c == 0:
                    continue
                r = rows[start : start + c]
                y = swiglu(m[r] @ self.w13[e].t()) @ self.w2[e].t()
                out.index_add_(0, r, y * w.flatten()[order[start : start + c]][:, None])
                start += c
            return out
        if mode == "gather":
            h = torch.einsum("td,tkid->tki", m, self.w13[idx])
            y = torch.einsum("tki,tkdi->tkd", swiglu(h), self.w2[idx])
            return (y * w[..., None]).sum(1)
        coef = torch.zeros(T, E + 1, device=m.device, dtype=m.dtype).scatter_add_(1, idx, w)
        h = torch.einsum("td,eid->tei", m, self.w13)
        y = torch.einsum("tei,edi->ted", swiglu(h), self.w2)
        return (y * coef[..., None]).sum(1)


class Model(torch.nn.Module):
    def __init__(self, n_moe, batch, ctx_len):
        super().__init__()
        self.embed = p(V, D, std=1.0)
        self.norm = p(D, std=0.05, dtype=torch.float32)
        self.head = p(V, D, std=D ** -0.5)
        self.layers = torch.nn.ModuleList([Layer(i >= 3, i >= 3, batch, ctx_len) for i in range(3 + n_moe)])

    def forward(self, ids, pos, start, n_seq, mode):
        h = self.embed[ids]
        r = torch.zeros_like(h)
        for layer in self.layers:
            r = r + h
            a = rms(r, layer.in_norm)
            h = layer.attn(a, pos, start, n_seq)
            r = r + h
            h = layer.ffn(rms(r, layer.post_norm), mode)
        r = r + h
        last = rms(r, self.norm).view(n_seq, -1, D)[:, -1]
        return (last @ self.head.t()).float()


def timed(fn, reps):
    fn()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for _ in range(reps):
        a.record()
        fn()
        b.record()
        b.synchronize()
        ms.append(a.elapsed_time(b))
    return sorted(ms)[len(ms) // 2]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--moe-layers", type=int, default=5)
    ap.add_argument("--context", type=int, default=1024)
    ap.add_argument("--batches", default="1,8,32,64,128")
    ap.add_argument("--prefill", default="2048", help="prefill lengths, comma-separated")
    ap.add_argument("--compile", default="1")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    prefills = [int(t) for t in args.prefill.split(",")]
    torch.manual_seed(0)
    ctx_len = max(args.context + 1, max(prefills))
    model = Model(args.moe_layers, max(batches), ctx_len)
    res = {"torch": torch.__version__, "eager": {}, "compiled": {}, "context": args.context}
    path = os.path.join(args.out, "torch-reference.json")

    def save():
        with open(path, "w") as f:
            json.dump(res, f, indent=2)

    with torch.no_grad():
        res["prefill"] = []
        for T in prefills:
            ids = torch.randint(0, V, (T,), device="cuda")
            pos = torch.arange(T, device="cuda")
            ms = timed(lambda: model(ids, pos, 0, 1, "loop"), 3)
            res["prefill"].append({"tokens": T, "ms": ms})
            print(f"torch eager prefill {T}: {ms:.1f} ms", flush=True)
        for B in batches:
            ids = torch.randint(0, V, (B,), device="cuda")
            pos = torch.full((B,), args.context, device="cuda")
            res["eager"][B] = timed(lambda: model(ids, pos, args.context, B, "loop"), 5)
            print(f"torch eager decode B={B}: {res['eager'][B]:.2f} ms", flush=True)
            save()
        if args.compile == "1":
            for B in batches:
                mode = "gather" if B * (K + 1) <= 16 else "dense"
                step = torch.compile(lambda i, q, B=B, mode=mode: model(i, q, args.context, B, mode), mode="reduce-overhead", fullgraph=False)
                ids = torch.randint(0, V, (B,), device="cuda")
                pos = torch.full((B,), args.context, device="cuda")
                t0 = time.time()
                for _ in range(3):
                    step(ids, pos)
                compile_s = time.time() - t0
                res["compiled"][B] = {"ms": timed(lambda: step(ids, pos), 10), "moe": mode, "compile_s": compile_s}
                print(f"torch.compile decode B={B} ({mode}): {res['compiled'][B]['ms']:.2f} ms (compile {compile_s:.0f} s)", flush=True)
                save()
    save()


if __name__ == "__main__":
    main()
