"""Trains the tiny MiniMax-M3 (moeserve-tiny-m3) on the generator's data and exports the checkpoint.

    python3 training/train.py --data .train-data/d --out $OUT/model --minutes 4 \
        --golden .train-data/golden/tiny-moe .train-data/golden/tiny-dense

--dry-run trains a few steps of a smaller model on the CPU (HF tokenizers optional) to test the
script end to end. See docs/tiny-model.md.
"""
import argparse
import json
import math
import os
import random
import time
from pathlib import Path

import torch
import torch.nn.functional as F

import data
import evaluate
import golden_check
import reference
import safetensors_io
from model import MiniMaxM3, from_hf, to_hf


def model_config(args, vocab_size, bos_id, eot_id):
    n = args.layers
    flags = [0] + [1] * (n - 1)
    return {
        "architectures": ["MiniMaxM3SparseForCausalLM"],
        "model_type": "minimax_m3",
        "hidden_size": args.hidden,
        "num_hidden_layers": n,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": args.hidden // 4,
        "vocab_size": vocab_size,
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
        "rotary_dim": args.hidden // 8,
        "partial_rotary_factor": 0.5,
        "rms_norm_eps": 1e-06,
        "use_gemma_norm": True,
        "use_qk_norm": True,
        "qk_norm_type": "per_head",
        "attention_output_gate": False,
        "hidden_act": "swigluoai",
        "swiglu_alpha": 1.702,
        "swiglu_limit": 7.0,
        "tie_word_embeddings": False,
        "dense_intermediate_size": args.hidden * 3,
        "intermediate_size": args.expert_width,
        "shared_intermediate_size": args.expert_width,
        "n_shared_experts": 1,
        "num_local_experts": args.experts,
        "num_experts_per_tok": 2,
        "scoring_func": "sigmoid",
        "use_routing_bias": True,
        "routed_scaling_factor": 2.0,
        "moe_layer_freq": flags,
        "num_mtp_modules": 0,
        "torch_dtype": "bfloat16",
        "bos_token_id": bos_id,
        "eos_token_id": eot_id,
        "sparse_attention_config": {
            "use_sparse_attention": True,
            "sparse_index_dim": args.hidden // 4,
            "sparse_num_index_heads": 2,
            "sparse_topk_blocks": 4,
            "sparse_block_size": 16,
            "sparse_init_block": 0,
            "sparse_local_block": 1,
            "sparse_score_type": "max",
            "sparse_attention_freq": flags,
            "sparse_disable_index_value": flags,
        },
    }


def lr_at(args, step, frac):
    """Warm-up, then a cosine to 10% of --lr. --sched-from/--sched-to map this call's time share
    onto a part of one longer schedule, so that two calls that resume (--init) make one cosine."""
    warm = min(1.0, (step + 1) / args.warmup)
    g = args.sched_from + (args.sched_to - args.sched_from) * min(frac, 1.0)
    return args.lr * warm * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * g)))


def with_targets(ids, mask):
    """(ids, flat indices of the loss rows of ids[:, :-1], their target tokens), computed on the
    host once, so that a training step has no device-to-host sync."""
    m = mask[:, 1:]
    index = torch.nonzero(m.flatten()).flatten()
    return ids, index, ids[:, 1:][m]


def loss_of(model, ids, index, targets, use_sparse, want_index_loss=True):
    logits = model(ids[:, :-1], use_sparse=use_sparse, want_index_loss=want_index_loss, logit_index=index)
    ce = F.cross_entropy(logits.float(), targets)
    idx = model.index_losses()
    return ce, (sum(idx) / len(idx) if idx else torch.zeros((), device=ids.device))


def update_router_bias(model, rate):
    """Aux-loss-free balancing: nudge each expert's selection bias towards equal load."""
    for _, moe in model.moe_layers():
        routes = moe.last_routes.flatten()  # a scatter, not bincount, which syncs with the host
        counts = torch.zeros(moe.w1.shape[0], device=routes.device).index_add_(
            0, routes, torch.ones(routes.shape, device=routes.device)
        )
        moe.e_score_correction_bias += rate * torch.sign(counts.mean() - counts)


@torch.no_grad()
def val_loss(model, batches, amp):
    model.eval()
    tot = 0.0
    for b in batches:
        with torch.autocast(b[0].device.type, dtype=torch.bfloat16, enabled=amp):
            tot += loss_of(model, *b, True)[0].item()
    model.train()
    return tot / max(1, len(batches))


def train(args, model, train_b, val_b, dev, log, checkpoint=None):
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    rest = [p for n, p in model.named_parameters() if p.dim() < 2]
    extra = {"fused": True} if dev.type == "cuda" else {}
    groups = [{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95), **extra)
    amp = dev.type == "cuda"
    t0, step, seen = time.time(), 0, 0
    budget = args.minutes * 60
    if args.deadline:  # an absolute end (epoch seconds) for the whole run: keep time to export
        budget = min(budget, args.deadline - args.reserve_s - t0)
    log["train_budget_s"] = round(budget, 1)
    last_save = t0
    while True:
        for ids, index, targets in train_b:
            frac = (time.time() - t0) / budget
            if frac >= 1.0 or (args.max_steps and step >= args.max_steps):
                return step, seen, time.time() - t0
            if checkpoint and args.save_every_s and time.time() - last_save > args.save_every_s:
                checkpoint(step)
                last_save = time.time()
            for g in opt.param_groups:
                g["lr"] = lr_at(args, step, frac)
            with torch.autocast(dev.type, dtype=torch.bfloat16, enabled=amp):
                want_idx = step % args.index_every == 0
                ce, idx = loss_of(model, ids, index, targets, frac >= args.dense_frac, want_idx)
            (ce + idx).backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            with torch.no_grad():
                update_router_bias(model, args.bias_rate)
            seen += ids.numel()
            if step % args.log_every == 0:
                rec = {
                    "step": step,
                    "time_s": round(time.time() - t0, 1),
                    "tokens": seen,
                    "loss": round(ce.item(), 4),
                    "index_kl": round(idx.item(), 4),
                    "lr": opt.param_groups[0]["lr"],
                }
                if step % (args.log_every * 10) == 0:
                    rec["val_loss"] = round(val_loss(model, val_b, amp), 4)
                log["curve"].append(rec)
                print(json.dumps(rec), flush=True)
            step += 1


def export(args, model, tok, cfg, out, template):
    out.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().cpu() for k, v in to_hf(model).items()}  # the model stays where it is
    safetensors_io.save(tensors, out / "model.safetensors", {"format": "pt"})
    (out / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    if hasattr(tok, "save"):
        tok.save(str(out / "tokenizer.json"))
    added = {
        str(i): {"content": s, "special": s not in data.KEEP_IN_TEXT} for i, s in enumerate(data.SPECIALS)
    }
    tcfg = {
        "tokenizer_class": "PreTrainedTokenizerFast",
        "bos_token": data.SPECIALS[0],
        "eos_token": data.EOT,
        "pad_token": data.EOT,
        "add_bos_token": False,
        "add_eos_token": False,
        "model_max_length": cfg["max_position_embeddings"],
        "added_tokens_decoder": added,
        "chat_template": template,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(tcfg, indent=2) + "\n")
    gen = {
        "bos_token_id": cfg["bos_token_id"],
        "eos_token_id": [cfg["eos_token_id"]],
        "pad_token_id": cfg["eos_token_id"],
        "do_sample": False,
    }
    (out / "generation_config.json").write_text(json.dumps(gen, indent=2) + "\n")
    return tensors


def pick_reference(args, model32, model64, tok, items, eot_id, log, out):
    """Reference logits for the held-out sequence (prompt + greedy reply) with the widest gaps."""
    best = None
    for it in items:
        prompt = tok.encode_batch([it["prompt"]])[0].ids
        reply, _ = evaluate.greedy(model32, [prompt], eot_id, min(64, args.eval_max_new), batch=1)[0]
        ids = (prompt + reply)[:400]
        T = len(ids)
        pos = sorted({0, 1, T // 4, T // 2, min(63, T - 1), min(64, T - 1), (3 * T) // 4, T - 1})
        ref, diag = reference.reference(model64, ids, pos)
        score = min(diag["min_route_gap"], diag["min_block_gap"])
        if best is None or score > best[2]:
            best = (ref, diag, score)
    ref, diag, _ = best
    texts = [it["prompt"] for it in items[:1]] + [
        "Ça coûte 1234,5 € — 東京!\n\n  x  <mm:think>7 * 8 = 56.</mm:think>#### 56[e~["
    ]
    ref["tokenizer_check"] = [{"text": t, "ids": tok.encode_batch([t])[0].ids} for t in texts]
    ref["notes"] = (
        "moeserve-tiny-m3: float64 forward from the stored bf16 weights; logits rows at "
        "logit_positions only (6 significant digits); routed_experts at every position, sorted. "
        "Diagnostics: " + json.dumps(diag)
    )
    (out / "reference-logits.json").write_text(json.dumps(ref, separators=(",", ":")) + "\n")
    log["reference"] = diag


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--golden", nargs="*", default=[])
    ap.add_argument("--minutes", type=float, default=4.0)
    ap.add_argument("--max-steps", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=3072)
    ap.add_argument("--hidden", type=int, default=256)
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--expert-width", type=int, default=64)
    ap.add_argument("--experts", type=int, default=8, help="routed experts per MoE layer (run 12: 32, upcycled)")
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--warmup", type=int, default=100)
    ap.add_argument(
        "--dense-frac", type=float, default=0.1, help="time share trained with dense attention first"
    )
    ap.add_argument("--bias-rate", type=float, default=1e-3)
    ap.add_argument("--tokens-per-batch", type=int, default=65536)
    ap.add_argument("--max-len", type=int, default=640)
    ap.add_argument("--max-samples", type=int, default=0)
    ap.add_argument("--tokenizer-samples", type=int, default=40000)
    ap.add_argument("--eval-limit", type=int, default=0)
    ap.add_argument("--eval-max-new", type=int, default=160)
    ap.add_argument("--log-every", type=int, default=20)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--tokenizer", help="an existing tokenizer.json to reuse instead of training one")
    ap.add_argument("--init", help="a model.safetensors (same config) to start from")
    ap.add_argument("--save-every-s", type=float, default=0, help="export the weights and log every N seconds")
    ap.add_argument("--deadline", type=float, default=0, help="epoch seconds by which the whole run must end")
    ap.add_argument("--reserve-s", type=float, default=60, help="time kept before --deadline for export and checks")
    ap.add_argument("--index-every", type=int, default=1, help="compute the index KL loss every N steps")
    ap.add_argument("--sched-from", type=float, default=0.0, help="where this call starts on the lr cosine (0..1)")
    ap.add_argument("--sched-to", type=float, default=1.0, help="where this call ends on the lr cosine (0..1)")
    ap.add_argument(
        "--no-post", action="store_true", help="stop after the export: no reference logits, no PyTorch eval"
    )
    args = ap.parse_args()
    run(args)


def run(args):
    t_start = time.time()
    torch.manual_seed(args.seed)
    random.seed(args.seed)
    dev = torch.device("cuda" if torch.cuda.is_available() and not args.dry_run else "cpu")
    out, datadir = Path(args.out), Path(args.data)
    log = {"args": vars(args), "device": str(dev), "curve": [], "golden": {}}
    for g in args.golden:
        ok, err, tol = golden_check.check(g, torch.float32)
        log["golden"][Path(g).name] = {"pass": ok, "max_err": err, "tol": tol}
        print(
            f"golden {Path(g).name}: {'PASS' if ok else 'FAIL'} max_err={err:.3g} tol={tol:.3g}", flush=True
        )
    samples = data.read_samples(datadir / "train.jsonl.gz")
    if args.max_samples:
        samples = samples[: args.max_samples]
    t0 = time.time()
    if args.tokenizer:
        tok = data.load_tokenizer(args.tokenizer, args.dry_run)
    else:
      try:
        texts = [s["prompt"] + s["completion"] for s in samples[: args.tokenizer_samples]]
        tok = data.train_tokenizer(texts, args.vocab)
      except ImportError:
        assert args.dry_run, "HF tokenizers is needed outside --dry-run"
        tok = data.ByteTokenizer()
    bos_id, eot_id = tok.token_to_id(data.SPECIALS[0]), tok.token_to_id(data.EOT)
    encoded = data.encode(tok, samples, args.max_len)
    log["tokenizer_s"], log["num_samples"] = round(time.time() - t0, 1), len(encoded)
    n_val = max(8, len(encoded) // 100)
    val_b = data.make_batches(encoded[:n_val], args.tokens_per_batch, eot_id, args.seed)[:8]
    train_b = data.make_batches(encoded[n_val:], args.tokens_per_batch, eot_id, args.seed)
    log["train_tokens_per_epoch"] = sum(b[0].numel() for b in train_b)
    log["loss_tokens_per_epoch"] = sum(int(b[1].sum()) for b in train_b)
    print(
        json.dumps(
            {
                k: log[k]
                for k in ("tokenizer_s", "num_samples", "train_tokens_per_epoch", "loss_tokens_per_epoch")
            }
        ),
        flush=True,
    )
    val_b = [tuple(t.to(dev) for t in with_targets(i, m)) for i, m in val_b]
    train_b = [tuple(t.to(dev) for t in with_targets(i, m)) for i, m in train_b]
    init = safetensors_io.load(args.init) if args.init else None
    vocab = init["model.embed_tokens.weight"].shape[0] if init else tok.get_vocab_size()
    assert vocab >= tok.get_vocab_size(), "--init has a smaller vocabulary than the tokenizer"
    cfg = model_config(args, vocab, bos_id, eot_id)
    model = MiniMaxM3(cfg)
    model.init_weights()
    if args.init:
        from_hf(model, init)
        log["init"] = args.init
    model.to(dev)
    log["params"] = sum(p.numel() for p in model.parameters())
    template = (datadir / "chat_template.jinja").read_text()
    out.mkdir(parents=True, exist_ok=True)

    def checkpoint(step):
        export(args, model, tok, cfg, out, template)
        (out.parent / "train-log.json").write_text(json.dumps({**log, "checkpoint_step": step}, indent=1) + "\n")
        print(json.dumps({"checkpoint_step": step, "time_s": round(time.time() - t_start, 1)}), flush=True)

    steps, seen, secs = train(args, model, train_b, val_b, dev, log, checkpoint)
    log.update(
        steps=steps,
        tokens_seen=seen,
        train_s=round(secs, 1),
        final_val_loss=round(val_loss(model, val_b, dev.type == "cuda"), 4),
    )
    print(
        json.dumps({k: log[k] for k in ("steps", "tokens_seen", "train_s", "final_val_loss", "params")}),
        flush=True,
    )
    tensors = export(args, model, tok, cfg, out, template)
    (out.parent / "train-log.json").write_text(json.dumps(log, indent=1) + "\n")
    if args.no_post:  # a first call of several: the next one resumes from these weights
        return
    # Everything below runs on the stored bf16 weights, as moeserve will: the reference logits
    # first (CI needs them beside the weights), the PyTorch eval last, as time allows.
    items = evaluate.read_items(datadir / "heldout-prompts.jsonl")
    model32 = from_hf(MiniMaxM3(cfg), tensors).to(dev).eval()
    model64 = from_hf(MiniMaxM3(cfg).double(), tensors).to(dev).eval()
    pick_reference(
        args,
        model32,
        model64,
        tok,
        [it for it in items if it["stage"] in ("tool-answer", "tool-call")][:3],
        eot_id,
        log,
        out,
    )
    log["reference_done_s"] = round(time.time() - t_start, 1)
    (out.parent / "train-log.json").write_text(json.dumps(log, indent=1) + "\n")
    print(json.dumps({"reference_done_s": log["reference_done_s"], "reference": log["reference"]}), flush=True)
    stats, replies = evaluate.run_eval(
        model32, tok, items, eot_id, args.eval_max_new, limit=args.eval_limit or None
    )
    log["eval"] = stats
    print(json.dumps(stats), flush=True)
    with open(out.parent / "eval-replies.jsonl", "w") as f:
        for r in replies[:400]:
            f.write(json.dumps(r) + "\n")
    log["total_s"] = round(time.time() - t_start, 1)
    (out.parent / "train-log.json").write_text(json.dumps(log, indent=1) + "\n")
    print(json.dumps({"total_s": log["total_s"]}), flush=True)


if __name__ == "__main__":
    main()
