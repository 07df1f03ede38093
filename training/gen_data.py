"""Writes the tiny model's training data in the served M3 format (rendered by m3_render.py):

    python3 training/gen_data.py --out .train-data/g --num 300000 [--workers 16]

out/train.jsonl.gz       {prompt, completion, kind} per assistant turn (loss on the completion)
out/heldout-prompts.jsonl  held-out prompts for train.py's PyTorch eval (heldout_phrasings.py etc.)
out/chat_template.jinja  the template the prompts follow (from the bundled tokenizer_config.json)
--eval-out FILE          the held-out set of `npm run eval:tiny` (data/tiny-m3/eval-tiny.json)
"""
import argparse
import gzip
import json
import random
from multiprocessing import Pool
from pathlib import Path

import arith_train
import chat_data
import heldout_phrasings
import m3_render as R
import op_words
import spans
import vary
import tool_catalog as T
import tool_catalog_v1 as V1
from worked import worked

# Training lists both catalogs (v1: the TypeScript generator's tools, which the server tests and
# `eval tool-loop` scenarios call); the held-out sets keep to tool_catalog.CATALOG.
TRAIN_CATALOG = {**T.CATALOG, **V1.CATALOG}

SYSTEMS = ["You are a concise assistant.", "Answer briefly.", "You are a friendly helper.",
           "Be precise and short.", "You help with everyday tasks."]
TRAIN_WRAP = ["{r}", "{r}", "{r}", "Please: {r}", "Can you help? {r}", "{r} Thanks.", "I need this: {r}"]
HELDOUT_WRAP = ["Hey, quick one: {r}", "{r} Thanks in advance!", "Please do this for me - {r}", "{r}"]


def _msgs(rng, user, history=True, wide=False):
    m = []
    if rng.random() < 0.2:
        m.append({"role": "system", "content": rng.choice(SYSTEMS)})
    if history and rng.random() < 0.1:
        u, why, c = chat_data.chat(rng, wide)
        m += [{"role": "user", "content": u}, {"role": "assistant", "content": c}]
    m.append({"role": "user", "content": user})
    return m


RUN10 = False  # gen_data.py --run10: vary.py's wordings and spans.py's lines (docs/tiny-model.md, "Run 10")


def arithmetic_sample(rng):
    q, steps, numbers = arith_train.problem(rng)
    sp = None
    if RUN10:
        while True:
            v = vary.vary(rng, q)
            if not any(m in v for m in heldout_phrasings.FRAME_MARKERS):
                break
        q = v
        numbers = arith_train.numbers_in(q, steps)
        sp = spans.span_lines(q, numbers)
    reasoning, r = worked(steps, numbers, rng, op_words.keys_for(q, steps) if arith_train.RUN9 else None, sp)
    content = f"The answer is {r}.\n#### {r}"
    return [dict(kind="arithmetic", prompt=R.render_prompt(_msgs(rng, q, wide=True)), completion=R.render_completion(reasoning, content))]


def fname(catalog, key):
    return catalog[key][1]["function"]["name"]


def _tools_for(rng, names, catalog=T.CATALOG, extra=2):
    taken = {fname(catalog, n) for n in names}
    others = [n for n in catalog if n not in names and fname(catalog, n) not in taken]
    chosen = list(names) + rng.sample(others, rng.randint(0, extra))
    rng.shuffle(chosen)
    return [catalog[n][1] for n in chosen]


def _distinct_tools(rng, catalog, n_calls):
    while True:
        keys = rng.sample(list(catalog), n_calls)
        if len({fname(catalog, k) for k in keys}) == n_calls:
            return keys


def tool_loop(rng, cities, wraps, n_calls, catalog=T.CATALOG, extra=2):
    """[(messages, tools, reasoning, content, calls)] for one conversation of n_calls tools."""
    keys = _distinct_tools(rng, catalog, n_calls)
    parts = [catalog[k][0](rng, V1.CITIES if k.startswith("v1/") else cities) for k in keys]
    names = [fname(catalog, k) for k in keys]
    reqs = [rng.choice(p[1]) for p in parts]
    user = rng.choice(wraps).format(r=" Also, ".join(reqs) if n_calls > 1 else reqs[0])
    tools = _tools_for(rng, keys, catalog, extra)
    msgs = _msgs(rng, user, wide=catalog is not T.CATALOG)
    turns = []
    for n, (args, _, res, _) in zip(names, parts):
        why = f"The user asked for this. I will call {n}." if not turns else f"Next I will call {n}."
        turns.append((list(msgs), tools, why, "", [(n, args)]))
        msgs += [{"role": "assistant", "content": None, "tool_calls": [(n, args)]},
                 {"role": "tool", "content": R.compact(res)}]
    final = " ".join(p[3] for p in parts)
    turns.append((list(msgs), tools, "The tool results answer the request.", final, None))
    return turns, names, parts


def tool_samples(rng):
    turns, _, _ = tool_loop(rng, T.CITIES, TRAIN_WRAP, 1 if rng.random() < 0.7 else 2, TRAIN_CATALOG, 1)
    return [dict(kind="tool", prompt=R.render_prompt(m, t), completion=R.render_completion(w, c, calls))
            for m, t, w, c, calls in turns]


def forced_call_sample(rng):
    """A call under tool_choice "required" or a named function: the server appends
    `</mm:think>NS<tool_call>\n` (and `NS<invoke name="f">` for a name) to the prompt and the
    model goes on from there (src/server/parsers/tool-choice.ts). 30% of the requests are not
    about the tool at all (a greeting, a sum), as when a client forces a call anyway."""
    turns, names, _ = tool_loop(rng, T.CITIES, TRAIN_WRAP, 1, TRAIN_CATALOG, 1)
    msgs, tools, _, _, calls = turns[0]
    if rng.random() < 0.3:
        msgs = msgs[:-1] + [{"role": "user", "content": chat_data.chat(rng, True)[0] if rng.random() < 0.6
                             else arith_train.problem(rng)[0]}]
    named = rng.random() < 0.5
    if named:
        tools = [t for t in tools if t["function"]["name"] == names[0]]
    block = R.tool_calls(calls)
    head = f"{R.NS}<tool_call>\n" + (f'{R.NS}<invoke name="{names[0]}">' if named else "")
    assert block.startswith(head)
    prompt = R.render_prompt(msgs, tools) + R.THINK_CLOSE + head
    return [dict(kind="tool", prompt=prompt, completion=block[len(head):] + R.EOT)]


def chat_sample(rng):
    u, why, c = chat_data.chat(rng, True)
    tools = _tools_for(rng, [], TRAIN_CATALOG)[:rng.randint(1, 3)] if rng.random() < 0.25 else None
    return [dict(kind="chat", prompt=R.render_prompt(_msgs(rng, u, wide=True), tools), completion=R.render_completion(why, c))]


def json_sample(rng):
    u, why, c = chat_data.json_chat(rng)
    return [dict(kind="chat", prompt=R.render_prompt(_msgs(rng, u, history=False, wide=True)), completion=R.render_completion(why, c))]


def conversation(rng):
    x = rng.random()
    if x < 0.62:
        return arithmetic_sample(rng)
    if x < 0.80:
        return tool_samples(rng)
    if x < 0.84:
        return forced_call_sample(rng)
    return chat_sample(rng) if x < 0.965 else json_sample(rng)


def _chunk(args):
    seed, n = args
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        out += conversation(rng)
    return out


def heldout_items(seed):
    """Records for train.py's PyTorch eval (same kinds as the eval:tiny set)."""
    rng = random.Random(seed)
    items = []
    for q, ans, _ in heldout_phrasings.problems(seed, 200):
        items.append(dict(stage="arithmetic", prompt=R.render_prompt([{"role": "user", "content": q}]), answer_number=ans))
    for _ in range(100):
        turns, names, parts = tool_loop(rng, T.HELDOUT_CITIES, HELDOUT_WRAP, 1)
        m, t, _, _, calls = turns[0]
        items.append(dict(stage="tool-call", prompt=R.render_prompt(m, t), tools=t,
                          answer={"name": calls[0][0], "arguments": calls[0][1]},
                          expected_block=R.tool_calls(calls)))
    for u in chat_data.HELDOUT_CHAT:
        items.append(dict(stage="chat", prompt=R.render_prompt([{"role": "user", "content": u}]), final_answer=""))
    return items


def eval_set(seed):
    """The held-out set of `npm run eval:tiny`: questions, tool scenarios, chat prompts."""
    rng = random.Random(seed + 1)
    arith = [{"question": q, "answer": a, "op": op} for q, a, op in heldout_phrasings.problems(seed, 200)]
    scenarios = []
    for i in range(60):
        turns, names, parts = tool_loop(rng, T.HELDOUT_CITIES, HELDOUT_WRAP, 1 if i % 3 else 2)
        user = [m for m in turns[0][0] if m["role"] == "user"][-1]["content"]
        tools = [{"name": t["function"]["name"], "description": t["function"]["description"],
                  "parameters": t["function"]["parameters"],
                  "results": [next((p[2] for n, p in zip(names, parts) if n == t["function"]["name"]), {"ok": True})]}
                 for t in turns[0][1]]
        scenarios.append({"name": f"heldout-{i:02d}", "task": user, "tools": tools, "expectedCalls": names,
                          "expectedArguments": [p[0] for p in parts], "maxTurns": 4})
    return {"seed": seed, "generator": "training/gen_data.py --eval-out", "arithmetic": arith,
            "toolScenarios": scenarios, "chat": chat_data.HELDOUT_CHAT}


def _openai(messages):
    """Messages as a client sends them: tool calls with JSON-string arguments."""
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_calls"):
            m["tool_calls"] = [{"id": f"call-{i}", "type": "function",
                                "function": {"name": n, "arguments": json.dumps(a)}} for i, (n, a) in enumerate(m["tool_calls"])]
        out.append(m)
    return out


def render_cases(seed):
    """Conversations with their Python rendering, for the TS check of m3_render.py."""
    rng = random.Random(seed)
    cases = []
    for i in range(10):
        turns, _, _ = tool_loop(rng, T.CITIES, TRAIN_WRAP, 1 + i % 2)
        for m, t, w, c, calls in turns:
            cases.append({"messages": _openai(m), "tools": t, "prompt": R.render_prompt(m, t),
                          "calls": [{"name": n, "arguments": a} for n, a in calls or []],
                          "callText": R.tool_calls(calls) if calls else ""})
    return cases


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--num", type=int, default=300000, help="conversations")
    ap.add_argument("--seed", type=int, default=20261201)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--template", default=str(Path(__file__).parent.parent / "models/moeserve-tiny-m3/tokenizer_config.json"))
    ap.add_argument("--eval-out")
    ap.add_argument("--run9", action="store_true", help="run 9's data: the key line and arith_sem.py (not bundled)")
    ap.add_argument("--run10", action="store_true", help="run 10's data: vary.py's wordings and spans.py's lines")
    ap.add_argument("--render-cases", help="write the rendering fixture for src/datagen/python-render.test.ts")
    a = ap.parse_args()
    arith_train.RUN9 = a.run9  # before the pool forks
    global RUN10
    RUN10 = a.run10
    if a.render_cases:
        Path(a.render_cases).write_text(json.dumps(render_cases(a.seed), indent=1, ensure_ascii=False) + "\n")
    if a.eval_out:
        Path(a.eval_out).write_text(json.dumps(eval_set(a.seed + 7), indent=1) + "\n")
    if not a.out:
        return
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    jobs = [(a.seed * 1000 + i, a.num // 64) for i in range(64)]
    with Pool(a.workers) as p:
        chunks = p.map(_chunk, jobs)
    heldout_q = {q for q, _, _ in heldout_phrasings.problems(a.seed + 7, 200)}
    n = 0
    with gzip.open(out / "train.jsonl.gz", "wt", encoding="utf-8", compresslevel=1) as f:
        for ch in chunks:
            for s in ch:
                n += 1
                f.write(json.dumps(s, ensure_ascii=False) + "\n")
    user_turns = [s["prompt"].split("]~b]user\n")[-1] for ch in chunks for s in ch]
    leaks = sum(1 for u in user_turns if any(q in u for q in heldout_q))
    frames = sum(1 for u in user_turns if any(m in u for m in heldout_phrasings.FRAME_MARKERS))
    import fresh_heldout, sealed2_heldout, sealed_heldout  # counted only: the generator does not avoid them
    other = sum(1 for u in user_turns if any(m in u for m in fresh_heldout.FRESH_MARKERS + sealed_heldout.SEALED_MARKERS
                                               + sealed2_heldout.SEALED2_MARKERS))
    with open(out / "heldout-prompts.jsonl", "w") as f:
        for it in heldout_items(a.seed + 7):
            f.write(json.dumps(it, ensure_ascii=False) + "\n")
    (out / "chat_template.jinja").write_text(json.loads(Path(a.template).read_text())["chat_template"])
    print(json.dumps({"samples": n, "heldout_questions_in_training": leaks, "heldout_frames_in_training": frames,
                      "fresh_sealed_markers_in_training": other}))


if __name__ == "__main__":
    main()
