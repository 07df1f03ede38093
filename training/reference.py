"""Reference logits of the trained checkpoint, in float64 from its stored bf16 weights, in the
format of shared/golden expect.json (plus `logit_positions`: rows are kept for these positions only,
so the file stays small with a vocabulary of thousands)."""
import torch


def _route_gap(model):
    """Smallest gap between the k-th and (k+1)-th biased router score, over layers and tokens."""
    gaps = []
    for _, moe in model.moe_layers():
        top = moe.last_biased[0].topk(moe.topk + 1, dim=-1).values
        gaps.append((top[:, -2] - top[:, -1]).min().item())
    return min(gaps)


def _block_gap(model):
    """Smallest gap between the last chosen and the first dropped non-local block (inf if none)."""
    best = float("inf")
    for layer in model.model.layers:
        att = layer.self_attn
        if not att.sparse:
            continue
        s = att.last_block_scores[0]  # [Hi, T, nb]
        for t in range(s.shape[1]):
            others = s[:, t, : t // att.block]  # valid blocks before the local one
            if others.shape[-1] <= att.topk - 1:
                continue
            top = others.topk(att.topk, dim=-1).values
            best = min(best, (top[:, -2] - top[:, -1]).min().item())
    return best


@torch.no_grad()
def reference(model64, ids, positions):
    """expect.json-style dict for one sequence, with logits rows at `positions`."""
    logits = model64(torch.tensor([ids], device=next(model64.parameters()).device))[0]
    routes = {str(i): moe.last_routes[0].sort(-1).values.tolist() for i, moe in model64.moe_layers()}
    rows = [[float(f"{v:.6g}") for v in logits[p].tolist()] for p in positions]
    diag = {
        "max_abs_logit": logits.abs().max().item(),
        "min_route_gap": _route_gap(model64),
        "min_block_gap": _block_gap(model64),
        "argmax_margin_min": min(
            (lambda t: (t[0] - t[1]).item())(logits[p].topk(2).values) for p in positions
        ),
    }
    return {"ids": ids, "logit_positions": positions, "logits": rows, "routed_experts": routes}, diag
