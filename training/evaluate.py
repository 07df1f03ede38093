"""Greedy decoding of the held-out prompts with the PyTorch model, and the quality figures:
stop rate, arithmetic accuracy, tool-call parse and schema validity, tool answers."""
import json
import re

import torch

NS = "]<]minimax[>["
CALL_RE = re.compile(re.escape(NS) + r"<tool_call>(.*?)" + re.escape(NS) + r"</tool_call>", re.S)
INVOKE_RE = re.compile(r'<invoke name="([^"]+)">(.*?)</invoke>', re.S)
PARAM_RE = re.compile(r"<([A-Za-z_][\w.-]*)>(.*?)</\1>", re.S)


@torch.no_grad()
def greedy(model, prompts, eot_id, max_new, batch=128, pad_id=0):
    """Token lists in, (generated ids, stopped) out; full recompute each step (no KV cache)."""
    outs = []
    for b0 in range(0, len(prompts), batch):
        seqs = [list(p) for p in prompts[b0 : b0 + batch]]
        start = [len(s) for s in seqs]
        done = [False] * len(seqs)
        for _ in range(max_new):
            L = max(len(s) for s in seqs)
            ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
            for r, s in enumerate(seqs):
                ids[r, : len(s)] = torch.tensor(s)
            dev = next(model.parameters()).device
            logits = model(ids.to(dev))
            for r, s in enumerate(seqs):
                if not done[r]:
                    nxt = int(logits[r, len(s) - 1].argmax())
                    s.append(nxt)
                    done[r] = nxt == eot_id
            if all(done):
                break
        outs += [(s[st:], d) for s, st, d in zip(seqs, start, done)]
    return outs


def split_reply(text):
    """(reasoning, content) of a reply that starts with <mm:think>."""
    body = text.replace("[e~[", "")
    if "</mm:think>" in body:
        r, c = body.split("</mm:think>", 1)
        return r.replace("<mm:think>", ""), c
    return body.replace("<mm:think>", ""), ""


def parse_calls(content):
    """[(name, {key: text})] from the M3 tool-call block, or None when there is none/malformed."""
    m = CALL_RE.search(content)
    if not m:
        return None
    inner = m.group(1).replace(NS, "")
    calls = [(n, dict(PARAM_RE.findall(body))) for n, body in INVOKE_RE.findall(inner)]
    return calls or None


def typed_args(args, schema):
    """Arguments cast by the JSON schema, or None when one does not fit it."""
    props, out = schema["properties"], {}
    if any(k not in props for k in args) or any(r not in args for r in schema.get("required", [])):
        return None
    for k, v in args.items():
        p = props[k]
        try:
            out[k] = int(v) if p["type"] == "integer" else float(v) if p["type"] == "number" else v
        except ValueError:
            return None
        if "enum" in p and out[k] not in p["enum"]:
            return None
    return out


def score(items, replies):
    """Aggregates per-kind figures; items are heldout-prompts records, replies decoded texts."""
    stats = {}
    for it, (text, stopped) in zip(items, replies):
        s = stats.setdefault(it["stage"], {"n": 0, "stopped": 0, "correct": 0, "parsed": 0, "valid": 0})
        s["n"] += 1
        s["stopped"] += int(stopped)
        _, content = split_reply(text)
        if it["stage"] == "arithmetic":
            m = re.search(r"####\s*(-?\d+)", content)
            s["correct"] += int(bool(m) and int(m.group(1)) == it["answer_number"])
        elif it["stage"] == "tool-call":
            if "expected_block" in it:
                calls = parse_calls(content)
                s["parsed"] += int(bool(calls))
                s["valid"] += int(bool(calls) and calls[0][0] in {t["function"]["name"] for t in it["tools"]})
                s["correct"] += int(it["expected_block"] in content)
                continue
            calls = parse_calls(content)
            tools = {t["function"]["name"]: t["function"]["parameters"] for t in it["tools"]}
            if calls:
                s["parsed"] += 1
                name, args = calls[0]
                typed = typed_args(args, tools[name]) if name in tools else None
                s["valid"] += int(typed is not None)
                s["correct"] += int(name == it["answer"]["name"] and typed == it["answer"]["arguments"])
        elif it.get("final_answer") == "":
            # chat sanity: a non-empty plain reply with no markup in the content
            s["correct"] += int(content.strip() != "" and "<" not in content and "]~" not in content)
        else:
            s["correct"] += int(content.strip() == it["final_answer"].strip())
    for s in stats.values():
        for k in ("stopped", "correct", "parsed", "valid"):
            s[k + "_pct"] = round(100.0 * s[k] / max(1, s["n"]), 2)
    return stats


def run_eval(model, tok, items, eot_id, max_new=160, limit=None):
    items = items[:limit] if limit else items
    prompts = [e.ids for e in tok.encode_batch([it["prompt"] for it in items])]
    outs = greedy(model, prompts, eot_id, max_new)
    replies = [(tok.decode(ids, skip_special_tokens=False), stopped) for ids, stopped in outs]
    return score(items, replies), [
        dict(stage=it["stage"], prompt=it["prompt"][-300:], reply=r[0]) for it, r in zip(items, replies)
    ]


def read_items(path):
    with open(path) as f:
        return [json.loads(line) for line in f]
