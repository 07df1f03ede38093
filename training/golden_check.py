"""Checks model.py against a shared/golden case with the golden pass rule (README "Pass rule")."""
import json
import sys
from pathlib import Path

import torch

import safetensors_io
from model import MiniMaxM3, from_hf


def forward_case(case_dir, dtype=torch.float64):
    case = Path(case_dir)
    cfg = json.loads((case / "config.json").read_text())
    model = from_hf(MiniMaxM3(cfg).to(dtype), safetensors_io.load(case / "model.safetensors")).eval()
    expect = json.loads((case / "expect.json").read_text())
    with torch.no_grad():
        logits = model(torch.tensor([expect["ids"]]))[0]
    routes = {str(i): moe.last_routes[0].sort(-1).values.tolist() for i, moe in model.moe_layers()}
    return logits, routes, expect


def check(case_dir, dtype=torch.float64):
    """Returns (passed, max_abs_err, tolerance)."""
    logits, routes, expect = forward_case(case_dir, dtype)
    want = torch.tensor(expect["logits"], dtype=torch.float64)
    err = (logits.double() - want).abs().max().item()
    tol = 2e-3 * max(1.0, want.abs().max().item())
    argmax_ok = bool((logits.argmax(-1) == want.argmax(-1)).all())
    routes_ok = routes == {k: [sorted(r) for r in v] for k, v in expect.get("routed_experts", {}).items()}
    return err <= tol and argmax_ok and routes_ok, err, tol


if __name__ == "__main__":
    ok_all = True
    for d in sys.argv[1:]:
        for dt in (torch.float64, torch.float32):
            ok, err, tol = check(d, dt)
            ok_all &= ok
            verdict = "PASS" if ok else "FAIL"
            print(f"golden {Path(d).name} {str(dt)[6:]}: {verdict} max_err={err:.3g} tol={tol:.3g}")
    sys.exit(0 if ok_all else 1)
