"""MiniMax-M3 text model in PyTorch, as shared/design/minimax-m3.md §2 and the conventions of
shared/golden/README.md describe it: Gemma RMSNorm (1 + w) everywhere, per-head q/k norms, partial
NeoX RoPE, GQA, MSA sparse attention (index branch, causal block-max scores, local block forced plus
the top (k - 1) other blocks), SwiGLU-OAI MLPs, sigmoid-routed MoE with a correction bias used for
selection only and an unweighted shared expert, final norm and an untied LM head.

Training extras (not part of the architecture): the index branch reads a detached input and can
return a KL loss towards the dense attention's block mass, since its top-k choice has no gradient.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GemmaRMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(dim))
        self.eps = eps

    def forward(self, x):
        xf = x.float() if x.dtype != torch.float64 else x
        y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return (y * (1.0 + self.weight.to(y.dtype))).to(x.dtype)


def rope_tables(cfg, seq_len, device, dtype):
    half = cfg["rotary_dim"] // 2
    inv = 1.0 / cfg["rope_theta"] ** (torch.arange(half, dtype=torch.float64, device=device) / half)
    ang = torch.arange(seq_len, dtype=torch.float64, device=device)[:, None] * inv[None, :]
    return ang.cos().to(dtype), ang.sin().to(dtype)


def apply_rope(x, cos, sin):
    """x: [B, T, heads, D]; rotates dims (i, i + rot/2) for i < rot/2, leaves the rest."""
    half = cos.shape[-1]
    xf = x if x.dtype == torch.float64 else x.float()
    c, s = cos[None, :, None, :].to(xf.dtype), sin[None, :, None, :].to(xf.dtype)
    x1, x2, rest = xf[..., :half], xf[..., half : 2 * half], xf[..., 2 * half :]
    return torch.cat([x1 * c - x2 * s, x2 * c + x1 * s, rest], dim=-1).to(x.dtype)


def swiglu_oai(gate, up, alpha, limit):
    g = gate.clamp(max=limit)
    u = up.clamp(-limit, limit)
    return g * torch.sigmoid(alpha * g) * (u + 1.0)


def attend(q, k, v, mask):
    """q: [B, H, T, D], k/v: [B, H, T, D], mask: bool [B, H, T, T] (True = attend) or None (causal)."""
    if hasattr(F, "scaled_dot_product_attention") and q.dtype != torch.float64:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=mask is None)
    if mask is None:
        mask = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool, device=q.device).tril()
    scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
    return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ v


class Attention(nn.Module):
    def __init__(self, cfg, sparse):
        super().__init__()
        hid, self.h, self.hkv, self.d = (
            cfg["hidden_size"],
            cfg["num_attention_heads"],
            cfg["num_key_value_heads"],
            cfg["head_dim"],
        )
        eps = cfg["rms_norm_eps"]
        self.q_proj = nn.Linear(hid, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(hid, self.hkv * self.d, bias=False)
        self.v_proj = nn.Linear(hid, self.hkv * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, hid, bias=False)
        self.q_norm, self.k_norm = GemmaRMSNorm(self.d, eps), GemmaRMSNorm(self.d, eps)
        self.sparse = sparse
        if sparse:
            sc = cfg["sparse_attention_config"]
            self.hi, self.di = sc["sparse_num_index_heads"], sc["sparse_index_dim"]
            assert self.hi == self.hkv, "index heads map one-to-one to KV heads"
            self.block, self.topk, self.init_blocks = (
                sc["sparse_block_size"],
                sc["sparse_topk_blocks"],
                sc.get("sparse_init_block", 0),
            )
            self.index_q_proj = nn.Linear(hid, self.hi * self.di, bias=False)
            self.index_k_proj = nn.Linear(hid, self.di, bias=False)
            self.index_q_norm, self.index_k_norm = GemmaRMSNorm(self.di, eps), GemmaRMSNorm(self.di, eps)
        self.index_loss = None

    def block_scores(self, x, cos, sin):
        """Causal block-max index scores [B, Hi, T, nb] (-inf for blocks after t) and nb."""
        B, T, _ = x.shape
        iq = apply_rope(self.index_q_norm(self.index_q_proj(x).view(B, T, self.hi, self.di)), cos, sin)
        ik = apply_rope(self.index_k_norm(self.index_k_proj(x).view(B, T, 1, self.di)), cos, sin)
        s = torch.einsum("bthd,bjd->bhtj", iq, ik[:, :, 0])
        causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
        s = s.masked_fill(~causal, float("-inf"))
        nb = (T + self.block - 1) // self.block
        s = F.pad(s, (0, nb * self.block - T), value=float("-inf"))
        return s.view(B, self.hi, T, nb, self.block).amax(-1), nb

    def select_blocks(self, scores, nb):
        """Chosen blocks [B, Hi, T, nb]: the local block, init blocks, then the best others."""
        T, dev = scores.shape[2], scores.device
        t_blk = torch.arange(T, device=dev) // self.block
        blk = torch.arange(nb, device=dev)
        valid = blk[None, :] <= t_blk[:, None]
        forced = (blk[None, :] == t_blk[:, None]) | (blk[None, :] < self.init_blocks)
        ranked = scores.masked_fill(forced, float("inf")).masked_fill(~valid, float("-inf"))
        idx = ranked.topk(min(self.topk, nb), dim=-1).indices
        chosen = torch.zeros_like(ranked, dtype=torch.bool).scatter(-1, idx, True)
        return chosen & valid

    def index_kl(self, scores, q, k, nb):
        """KL(dense attention block mass || softmax of index block scores), dense side detached."""
        B, _, T, _ = q.shape
        with torch.no_grad():
            g = self.h // self.hkv
            kk = k.repeat_interleave(g, dim=1)
            causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
            p = (
                ((q.float() @ kk.float().transpose(-1, -2)) / math.sqrt(self.d))
                .masked_fill(~causal, float("-inf"))
                .softmax(-1)
            )
            p = F.pad(p, (0, nb * self.block - T)).view(B, self.hkv, g, T, nb, self.block).sum((2, 5)) / g
        logq = (scores.float() / math.sqrt(self.di)).log_softmax(-1)
        kl = p * (p.clamp_min(1e-9).log() - logq.masked_fill(p == 0, 0.0))
        return kl.sum(-1).mean()

    def forward(self, x, cos, sin, use_sparse=True, want_index_loss=False):
        B, T, _ = x.shape
        q = apply_rope(self.q_norm(self.q_proj(x).view(B, T, self.h, self.d)), cos, sin).transpose(1, 2)
        k = apply_rope(self.k_norm(self.k_proj(x).view(B, T, self.hkv, self.d)), cos, sin).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.hkv, self.d).transpose(1, 2)
        g = self.h // self.hkv
        mask = None
        self.index_loss = None
        if self.sparse:
            scores, nb = self.block_scores(x.detach(), cos, sin)
            self.last_block_scores = None if self.training else scores
            if use_sparse and nb > self.topk:
                chosen = self.select_blocks(scores.detach(), nb)
                causal = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
                keep = chosen.repeat_interleave(self.block, dim=-1)[..., :T] & causal
                mask = keep.repeat_interleave(g, dim=1)
            if want_index_loss:
                self.index_loss = self.index_kl(scores, q.detach(), k.detach(), nb)
        out = attend(q, k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1), mask)
        return self.o_proj(out.transpose(1, 2).reshape(B, T, self.h * self.d))


class MLP(nn.Module):
    def __init__(self, hid, inter, cfg):
        super().__init__()
        self.gate_proj = nn.Linear(hid, inter, bias=False)
        self.up_proj = nn.Linear(hid, inter, bias=False)
        self.down_proj = nn.Linear(inter, hid, bias=False)
        self.alpha, self.limit = cfg["swiglu_alpha"], cfg["swiglu_limit"]

    def forward(self, x):
        return self.down_proj(swiglu_oai(self.gate_proj(x), self.up_proj(x), self.alpha, self.limit))


class MoE(nn.Module):
    """Sigmoid router in the float32 (or float64) of its weight; experts run densely and are
    combined with zero weight where not selected, which equals running only the chosen ones."""

    def __init__(self, cfg):
        super().__init__()
        hid, e, inter = cfg["hidden_size"], cfg["num_local_experts"], cfg["intermediate_size"]
        self.topk, self.rsf = cfg["num_experts_per_tok"], cfg["routed_scaling_factor"]
        self.alpha, self.limit = cfg["swiglu_alpha"], cfg["swiglu_limit"]
        self.gate = nn.Linear(hid, e, bias=False)
        self.register_buffer("e_score_correction_bias", torch.zeros(e))
        self.w1 = nn.Parameter(torch.empty(e, inter, hid))
        self.w3 = nn.Parameter(torch.empty(e, inter, hid))
        self.w2 = nn.Parameter(torch.empty(e, hid, inter))
        shared = cfg["shared_intermediate_size"] * cfg.get("n_shared_experts", 1)
        self.shared_experts = MLP(hid, shared, cfg)
        self.last_routes = None

    def forward(self, x):
        rdt = self.gate.weight.dtype
        with torch.autocast(device_type=x.device.type, enabled=False):
            s = torch.sigmoid(x.to(rdt) @ self.gate.weight.t())
            sel = (s + self.e_score_correction_bias.to(rdt)).topk(self.topk, dim=-1).indices
            w = s.gather(-1, sel)
            w = w / w.sum(-1, keepdim=True) * self.rsf
        self.last_routes = sel
        self.last_biased = None if self.training else s + self.e_score_correction_bias.to(rdt)
        combine = torch.zeros_like(s).scatter(-1, sel, w)
        h = swiglu_oai(
            torch.einsum("...d,eid->...ei", x, self.w1),
            torch.einsum("...d,eid->...ei", x, self.w3),
            self.alpha,
            self.limit,
        )
        y = torch.einsum("...ei,edi->...ed", h, self.w2)
        routed = (y * combine[..., None].to(y.dtype)).sum(-2)
        return (routed + self.shared_experts(x)).to(x.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, cfg, i):
        super().__init__()
        sc = cfg.get("sparse_attention_config") or {}
        sparse = bool(sc.get("use_sparse_attention")) and sc["sparse_attention_freq"][i] == 1
        self.is_moe = cfg["moe_layer_freq"][i] == 1
        eps = cfg["rms_norm_eps"]
        self.input_layernorm = GemmaRMSNorm(cfg["hidden_size"], eps)
        self.post_attention_layernorm = GemmaRMSNorm(cfg["hidden_size"], eps)
        self.self_attn = Attention(cfg, sparse)
        if self.is_moe:
            self.block_sparse_moe = MoE(cfg)
        else:
            self.mlp = MLP(cfg["hidden_size"], cfg["dense_intermediate_size"], cfg)

    def forward(self, h, cos, sin, use_sparse, want_index_loss):
        h = h + self.self_attn(self.input_layernorm(h), cos, sin, use_sparse, want_index_loss)
        ffn = self.block_sparse_moe if self.is_moe else self.mlp
        return h + ffn(self.post_attention_layernorm(h))


class Inner(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.embed_tokens = nn.Embedding(cfg["vocab_size"], cfg["hidden_size"])
        self.layers = nn.ModuleList(DecoderLayer(cfg, i) for i in range(cfg["num_hidden_layers"]))
        self.norm = GemmaRMSNorm(cfg["hidden_size"], cfg["rms_norm_eps"])


class MiniMaxM3(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.model = Inner(cfg)
        self.lm_head = nn.Linear(cfg["hidden_size"], cfg["vocab_size"], bias=False)

    def init_weights(self, std=0.02):
        for name, p in self.named_parameters():
            if name.endswith("norm.weight"):
                nn.init.zeros_(p)
            else:
                nn.init.normal_(p, std=std)
        for layer in self.model.layers:
            scale = std / math.sqrt(2 * len(self.model.layers))
            nn.init.normal_(layer.self_attn.o_proj.weight, std=scale)
            down = layer.block_sparse_moe.w2 if layer.is_moe else layer.mlp.down_proj.weight
            nn.init.normal_(down, std=scale)

    def forward(self, ids, use_sparse=True, want_index_loss=False, logit_mask=None, logit_index=None):
        """Logits [B, T, V]; with logit_mask [B, T] only those rows, flattened [N, V]; logit_index
        [N] (flat row indices, B * T numbering) does the same without a host sync."""
        h = self.model.embed_tokens(ids)
        cos, sin = rope_tables(
            self.cfg, ids.shape[1], ids.device, torch.float32 if h.dtype != torch.float64 else torch.float64
        )
        for layer in self.model.layers:
            h = layer(h, cos, sin, use_sparse, want_index_loss)
        h = self.model.norm(h)
        if logit_index is not None:
            return self.lm_head(h.flatten(0, 1).index_select(0, logit_index))
        return self.lm_head(h if logit_mask is None else h[logit_mask])

    def moe_layers(self):
        return [(i, l.block_sparse_moe) for i, l in enumerate(self.model.layers) if l.is_moe]

    def index_losses(self):
        return [l.self_attn.index_loss for l in self.model.layers if l.self_attn.index_loss is not None]


def to_hf(model, dtype=torch.bfloat16):
    """Layout-A checkpoint tensors: bf16, with the router gate and correction bias in float32."""
    out = {}
    for name, t in model.state_dict().items():
        parts = name.split(".")
        if parts[-1] in ("w1", "w2", "w3"):
            prefix = ".".join(parts[:-1])
            for e in range(t.shape[0]):
                out[f"{prefix}.experts.{e}.{parts[-1]}.weight"] = t[e].to(dtype)
        elif "block_sparse_moe.gate." in name or name.endswith("e_score_correction_bias"):
            out[name] = t.float()
        else:
            out[name] = t.to(dtype)
    return out


def from_hf(model, tensors):
    """Loads layout-A tensors into the model (stacking the per-expert weights)."""
    state = {}
    for name, ref in model.state_dict().items():
        parts = name.split(".")
        if parts[-1] in ("w1", "w2", "w3"):
            prefix = ".".join(parts[:-1])
            state[name] = torch.stack(
                [tensors[f"{prefix}.experts.{e}.{parts[-1]}.weight"] for e in range(ref.shape[0])]
            )
        else:
            state[name] = tensors[name]
        state[name] = state[name].to(ref.dtype)
    model.load_state_dict(state)
    return model
