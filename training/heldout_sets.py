"""What the extra held-out arithmetic sets share (fresh_heldout.py, sealed_heldout.py,
sealed2_heldout.py): problems drawn from a set's frames in the ranges of the first set
(heldout_phrasings._ab), and the count of a set's marker phrases in generated training
conversations (`--check N`)."""
import json
import random
from pathlib import Path

from heldout_phrasings import _ab
from lexicon import HELDOUT_NAMES, HELDOUT_THINGS

DATA = Path(__file__).parent.parent / "data/tiny-m3"


def problems(frames, seed, count):
    """count problems cycling + - * and, per operation, its frames; held-out names and things."""
    rng = random.Random(seed)
    out = []
    for i in range(count):
        op = "+-*"[i % 3]
        frame = frames[op][(i // 3) % len(frames[op])]
        a, b = _ab(rng, op)
        n, m = rng.sample(HELDOUT_NAMES, 2)
        t = rng.choice(HELDOUT_THINGS)[0]
        answer = a + b if op == "+" else a - b if op == "-" else a * b
        out.append({"question": frame(n, m, t, a, b), "answer": answer, "op": op})
    return out


def marker_hits(markers, num, seed=20261201):
    """How many of `num` training conversations' user turns hold each marker."""
    import gen_data

    hits = {k: 0 for k in markers}
    for s in gen_data._chunk((seed, num)):
        user = " ".join(p.split("[e~[")[0] for p in s["prompt"].split("]~b]user\n")[1:])
        for k in markers:
            hits[k] += k in user
    return hits


def write(path, seed, generator, arithmetic):
    s = {"seed": seed, "generator": generator, "arithmetic": arithmetic, "toolScenarios": [], "chat": []}
    Path(path).write_text(json.dumps(s, indent=1) + "\n")


def main(argv, frames, markers, seed, out_name, generator):
    import argparse

    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=str(DATA / out_name))
    ap.add_argument("--check", type=int, default=0, help="count the markers in N training conversations")
    ap.add_argument("--check-seed", type=int, default=20261201)
    a = ap.parse_args(argv)
    if a.check:
        print(json.dumps(marker_hits(markers, a.check, a.check_seed)))
    else:
        write(a.out, seed, generator, problems(frames, seed, 105))
