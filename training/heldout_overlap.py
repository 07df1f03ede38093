"""How far the held-out arithmetic sets are from the training generator: each question is
abstracted (numbers -> n, names -> NAME, things and containers -> THING, days -> DAY, lower
case) and split into word K-grams; the score of a question is the share of its K-grams that
some training arithmetic prompt of 100k generated conversations also holds. 0 means no run of K
words (up to the abstractions) was ever trained on; 1 would mean the question is a collage of
trained word runs.

    python3 training/heldout_overlap.py [K] [--frames]
"""
import collections
import json
import re
import sys
from pathlib import Path

import gen_data
from lexicon import DAYS, HELDOUT_NAMES, HELDOUT_THINGS, NAMES_WIDE, THINGS_WIDE

NAMES = set(HELDOUT_NAMES) | set(NAMES_WIDE)
THINGS = {w for t, c in HELDOUT_THINGS + THINGS_WIDE for w in (t, c)}
DATA = Path(__file__).parent.parent / "data/tiny-m3"


def abstract(s):
    out = []
    for w in re.findall(r"[A-Za-z']+|[^\sA-Za-z']", re.sub(r"\d+", " n ", s)):
        if w in NAMES or w.removesuffix("'s") in NAMES:
            out.append("NAME")
        elif w in DAYS:
            out.append("DAY")
        elif w.lower() in THINGS:
            out.append("THING")
        else:
            out.append(w.lower())
    return out


def grams(tokens, k):
    return [tuple(tokens[i : i + k]) for i in range(len(tokens) - k + 1)]


def training_grams(k, num=100000):
    seen = set()
    for s in gen_data._chunk((20261201, num)):
        if s.get("kind") == "arithmetic":
            seen.update(grams(abstract(s["prompt"].split("]~b]user\n")[-1].split("[e~[")[0]), k))
    return seen


def report(name, questions, seen, k, frames):
    by_frame = collections.defaultdict(list)
    for q in questions:
        t = abstract(q)
        g = grams(t, k)
        by_frame[" ".join(t[:6])].append(sum(x in seen for x in g) / max(1, len(g)))
    scores = [v for vs in by_frame.values() for v in vs]
    if frames:
        for f, vs in sorted(by_frame.items(), key=lambda kv: -sum(kv[1]) / len(kv[1])):
            print(f"   {sum(vs) / len(vs):.2f} {len(vs):3d}  {f} ...")
    print(f"{name}: {len(scores)} questions, mean share of {k}-grams seen in training "
          f"{sum(scores) / len(scores):.2f}, fully covered {sum(v == 1.0 for v in scores)}")


if __name__ == "__main__":
    k = next((int(a) for a in sys.argv[1:] if a.isdigit()), 4)
    seen = training_grams(k)
    for f in ("eval-tiny.json", "eval-tiny-fresh.json", "eval-tiny-sealed.json", "eval-tiny-sealed2.json"):
        qs = [a["question"] for a in json.loads((DATA / f).read_text())["arithmetic"]]
        report(f, qs, seen, k, "--frames" in sys.argv)
