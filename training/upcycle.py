"""Sparse upcycling of a tiny M3 to more routed experts (issue 18, docs/tiny-model.md "Run 12"):

    python3 training/upcycle.py models/moeserve-tiny-m3 OUT [--copies 4] [--noise 1e-2]
        [--router-noise 1e-4] [--bias-step 1.0] [--seed 20261215] [--check-ids ids.json]

OUT gets config.json (num_local_experts x copies, nothing else changed), model.safetensors, the
tokenizer and generation files as they are, and reference-logits.json recomputed in float64 on
the upcycled weights over the source's reference ids (what src/datagen/tiny-model.test.ts checks).

Expert e of a MoE layer becomes experts k * E + e for k = 0 .. copies - 1: copy 0 keeps index e
and its weights unchanged, copies k >= 1 get the weights plus Gaussian noise of `--noise` times
the tensor's RMS (w1, w2, w3) and the router row plus noise of `--router-noise` times the row's
RMS. Their correction bias is the original's minus k * `--bias-step`.

Why the bias steps: the router picks the top-2 of sigmoid(x W^T) + bias and weighs the picked
experts by their *unbiased* scores, normalised to sum to routed_scaling_factor. With plain
copies (bias-step 0) the top-2 of 32 are two copies of the original top-1 expert, so every token
loses its second expert and the output becomes rsf * E_top1(x) instead of rsf * (p1 E1 + p2 E2):
the model changes (see --check). Lowering copy k's bias by k * step keeps the selection the
original one's as long as step exceeds the original top-1/top-2 margin (sigmoid scores lie in
(0, 1), so step 1 plus the spread of the biases is always enough); the weights of the picked
experts do not see the bias, so the upcycled model's output equals the original's. During
training the aux-free balancer (train.py update_router_bias, +/- bias-rate a step) raises the
biases of unused copies and lowers those of overloaded ones, so the copies enter one at a time,
the tokens with the widest top-1/top-2 margins first. With the router frozen (a simulation on the
check sequences' layer inputs), half the groups have copy 1, 2, 3 picked after about 70, 330 and
580 steps at bias-rate 3e-3 (run 12's), 100, 480 and 870 at 2e-3, and copy 3 never within 1,500
steps at the default 1e-3. The copies that wait keep the source weights (less weight decay)
while copy 0 trains, which also breaks the symmetry between a group's copies.

Noise: bf16 has 8 significant bits, so noise of 1e-3 times the RMS changes only ~23% of the
stored elements (0.08% RMS); 1e-2 changes ~83% (1.0% RMS). Copies k >= 1 are not picked at the
start, so the noise does not change the initial output whatever its size.

--check (on by default) runs the source and the upcycled model in float64 on the reference ids
and on the prompts of --check-ids (a JSON list of token id lists) and prints the logits gap.
"""
import argparse
import json
import shutil
from pathlib import Path

import torch

import safetensors_io
from model import MiniMaxM3, from_hf

PREFIX = "model.layers.{}.block_sparse_moe"


def upcycle(cfg, tensors, copies, noise, router_noise, bias_step, seed):
    """(new config, new tensors); see the module docstring."""
    g = torch.Generator().manual_seed(seed)
    E = cfg["num_local_experts"]
    out = dict(tensors)
    for i, moe in enumerate(cfg["moe_layer_freq"]):
        if moe != 1:
            continue
        p = PREFIX.format(i)
        for e in range(E):
            for w in ("w1", "w2", "w3"):
                t = tensors[f"{p}.experts.{e}.{w}.weight"]
                rms = t.float().pow(2).mean().sqrt()
                for k in range(1, copies):
                    n = torch.randn(t.shape, generator=g) * (noise * rms)
                    out[f"{p}.experts.{k * E + e}.{w}.weight"] = (t.float() + n).to(t.dtype)
        gate = tensors[f"{p}.gate.weight"]  # [E, hidden], float32
        bias = tensors[f"{p}.e_score_correction_bias"]
        rows, biases = [gate], [bias]
        for k in range(1, copies):
            rms = gate.float().pow(2).mean(-1, keepdim=True).sqrt()
            n = torch.randn(gate.shape, generator=g) * (router_noise * rms)
            rows.append((gate.float() + n).to(gate.dtype))
            biases.append(bias - k * bias_step)
        out[f"{p}.gate.weight"] = torch.cat(rows)
        out[f"{p}.e_score_correction_bias"] = torch.cat(biases)
    new_cfg = {**cfg, "num_local_experts": E * copies}
    return new_cfg, out


def load_model(cfg, tensors):
    return from_hf(MiniMaxM3(cfg).double(), tensors).eval()


@torch.no_grad()
def greedy_extend(model, ids, n, eos):
    """ids plus up to n greedy tokens of model (full recompute: the sequences are short)."""
    out = list(ids)
    for _ in range(n):
        nxt = int(model(torch.tensor([out]))[0, -1].argmax())
        out.append(nxt)
        if nxt == eos:
            break
    return out


@torch.no_grad()
def compare(cfg_a, ta, cfg_b, tb, seqs, new_tokens=24):
    """Per sequence (ids, prompt length: a prompt gets the source model's greedy reply of up to
    new_tokens appended; None: no reply statistics, e.g. the reference sequence): max |logit gap| over all positions, whether the routes (copy k of e
    read as e, and only copies 0 picked) equal the source's at every position, how many token
    picks are two copies of one original expert, and on the reply tokens the argmax agreement
    and the mean NLL of the reply under each model."""
    a, b = load_model(cfg_a, ta), load_model(cfg_b, tb)
    E = cfg_a["num_local_experts"]
    ce = torch.nn.functional.cross_entropy
    rows = []
    for ids, plen in seqs:
        if plen is not None and plen == len(ids):
            ids = greedy_extend(a, ids, new_tokens, cfg_a["eos_token_id"])
        x = torch.tensor([ids])
        la, lb = a(x)[0], b(x)[0]
        same_routes = all(
            torch.equal(ma.last_routes[0].sort(-1).values, mb.last_routes[0].sort(-1).values)
            for (_, ma), (_, mb) in zip(a.moe_layers(), b.moe_layers())
        )
        twins = sum(
            int(((mb.last_routes[0] % E)[:, 0] == (mb.last_routes[0] % E)[:, 1]).sum())
            for _, mb in b.moe_layers()
        )
        row = {
            "prompt": plen,
            "len": len(ids),
            "max_abs_gap": (la - lb).abs().max().item(),
            "max_abs_logit": la.abs().max().item(),
            "routes_original": same_routes,
            "twin_picks": twins,
        }
        if plen is not None:
            r = slice(plen - 1, len(ids) - 1)  # rows that predict the reply tokens
            tgt = x[0, plen:]
            row.update(
                reply_argmax_agree=(la[r].argmax(-1) == lb[r].argmax(-1)).float().mean().item(),
                reply_nll_src=ce(la[r], tgt).item(),
                reply_nll_upcycled=ce(lb[r], tgt).item(),
            )
        rows.append(row)
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--copies", type=int, default=4)
    ap.add_argument("--noise", type=float, default=1e-2, help="expert weight noise, times the tensor RMS")
    ap.add_argument("--router-noise", type=float, default=1e-4, help="router row noise, times the row RMS")
    ap.add_argument("--bias-step", type=float, default=1.0, help="copy k's correction bias: original - k * step")
    ap.add_argument("--seed", type=int, default=20261215)
    ap.add_argument("--check-ids", help="JSON list of token id lists to compare on, besides the reference ids")
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--no-reference", action="store_true", help="do not write reference-logits.json")
    args = ap.parse_args()
    src, out = Path(args.src), Path(args.out)
    cfg = json.loads((src / "config.json").read_text())
    tensors = safetensors_io.load(src / "model.safetensors")
    new_cfg, new_t = upcycle(cfg, tensors, args.copies, args.noise, args.router_noise, args.bias_step, args.seed)
    out.mkdir(parents=True, exist_ok=True)
    safetensors_io.save(new_t, out / "model.safetensors", {"format": "pt"})
    (out / "config.json").write_text(json.dumps(new_cfg, indent=2) + "\n")
    for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
        if (src / f).exists():
            shutil.copy(src / f, out / f)
    n_src = sum(t.numel() for t in tensors.values())
    n_new = sum(t.numel() for t in new_t.values())
    print(
        json.dumps(
            {
                "experts": new_cfg["num_local_experts"],
                "params_src": n_src,
                "params_upcycled": n_new,
                "bytes": (out / "model.safetensors").stat().st_size,
                "noise": args.noise,
                "router_noise": args.router_noise,
                "bias_step": args.bias_step,
            }
        ),
        flush=True,
    )
    ref_path = src / "reference-logits.json"
    ref = json.loads(ref_path.read_text()) if ref_path.exists() else None
    if ref and not args.no_reference:
        import reference

        m64 = load_model(new_cfg, safetensors_io.load(out / "model.safetensors"))
        new_ref, diag = reference.reference(m64, ref["ids"], ref["logit_positions"])
        new_ref["tokenizer_check"] = ref.get("tokenizer_check", [])
        new_ref["notes"] = (
            f"moeserve-tiny-m3 upcycled to {new_cfg['num_local_experts']} experts (training/upcycle.py); "
            "float64 forward from the stored bf16 weights; logits rows at logit_positions only "
            "(6 significant digits); routed_experts at every position, sorted. Diagnostics: " + json.dumps(diag)
        )
        (out / "reference-logits.json").write_text(json.dumps(new_ref, separators=(",", ":")) + "\n")
        print(json.dumps({"reference": diag}), flush=True)
    if args.no_check:
        return
    # the reference sequence as it is (its prompt length is not stored); --check-ids prompts
    # get the source model's greedy reply here
    seqs = [(ref["ids"], None)] if ref else []
    if args.check_ids:
        seqs += [(ids, len(ids)) for ids in json.loads(Path(args.check_ids).read_text())]
    rows = compare(cfg, tensors, new_cfg, safetensors_io.load(out / "model.safetensors"), seqs)
    for r in rows:
        print(json.dumps({k: (round(v, 8) if isinstance(v, float) else v) for k, v in r.items()}), flush=True)
    print(
        json.dumps(
            {
                "check_sequences": len(rows),
                "max_abs_gap": max(r["max_abs_gap"] for r in rows),
                "all_routes_original": all(r["routes_original"] for r in rows),
                "twin_picks": sum(r["twin_picks"] for r in rows),
                "reply_argmax_agree_min": min((r["reply_argmax_agree"] for r in rows if r["prompt"]), default=None),
            }
        ),
        flush=True,
    )


if __name__ == "__main__":
    main()
