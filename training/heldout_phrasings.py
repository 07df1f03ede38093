"""Held-out arithmetic word problems for `npm run eval:tiny`: sentence frames that
arith_train.py never produces (conditionals, past tense, second person, "sum of"/"product of"
imperatives, owner-first questions), with names and things the training data never uses.
Numbers up to 90 and the operations + - *; the answer is the exact integer."""
from lexicon import DAYS, HELDOUT_NAMES, HELDOUT_THINGS


def _pick(rng):
    n, m = rng.sample(HELDOUT_NAMES, 2)
    t, c = rng.choice(HELDOUT_THINGS)
    return n, m, t, c


def _ab(rng, op):
    a, b = rng.randint(2, 90), rng.randint(2, 90)
    if op == "-":
        a, b = max(a, b) + (a == b), min(a, b)
    if op == "*" and rng.random() < 0.5:
        a = rng.randint(2, 12)
    return a, b


FRAMES = {
    "+": [
        lambda n, m, t, c, a, b: f"If {n} starts with {a} {t} and then receives {b} more, how many {t} does {n} end up with?",
        lambda n, m, t, c, a, b: f"{a} {t} were in a box. {n} added {b} more. How many {t} are in the box now?",
        lambda n, m, t, c, a, b: f"Find the sum of {a} and {b}.",
        lambda n, m, t, c, a, b: f"{n} saved {a} dollars last week and {b} dollars this week. What is the total saved?",
        lambda n, m, t, c, a, b: f"Together, {n} with {a} {t} and {m} with {b} {t} have how many {t}?",
        lambda n, m, t, c, a, b: f"You have {a} {t}. A friend hands you {b} more. How many {t} do you have?",
        lambda n, m, t, c, a, b: f"{n} walked {a} km on {DAYS[0]} and {b} km on {DAYS[2]}. How many km did {n} walk over the two days?",
    ],
    "-": [
        lambda n, m, t, c, a, b: f"{n} had {a} {t} but gave {b} to {m}. How many {t} does {n} still have?",
        lambda n, m, t, c, a, b: f"Subtract {b} from {a}.",
        lambda n, m, t, c, a, b: f"You have {a} {t}. You lose {b}. How many {t} remain?",
        lambda n, m, t, c, a, b: f"{m} owns {b} {t}; {n} owns {a} {t}. How many more {t} does {n} own?",
        lambda n, m, t, c, a, b: f"A jar held {a} {t}. After {n} took out {b}, how many {t} were still in the jar?",
        lambda n, m, t, c, a, b: f"{n} paid {b} dollars from a wallet with {a} dollars in it. How many dollars stay in the wallet?",
        lambda n, m, t, c, a, b: f"What do you get if you take {b} away from {a}?",
    ],
    "*": [
        lambda n, m, t, c, a, b: f"A box holds {b} {t}. How many {t} are in {a} boxes?",
        lambda n, m, t, c, a, b: f"Work out {a} times {b}.",
        lambda n, m, t, c, a, b: f"{n} is filling {a} {c} with {b} {t} in every one. How many {t} are needed?",
        lambda n, m, t, c, a, b: f"Each of the {a} students brings {b} {t}. How many {t} are brought in total?",
        lambda n, m, t, c, a, b: f"Find the product of {a} and {b}.",
        lambda n, m, t, c, a, b: f"Tickets are {b} dollars apiece. What do {a} tickets cost?",
        lambda n, m, t, c, a, b: f"{n} runs {b} laps a day. How many laps is that after {a} days?",
    ],
}


# Phrases of the frames above that no training prompt may contain (gen_data.py counts them).
FRAME_MARKERS = ["starts with", "end up with", "were in a box", "Find the sum", "saved", "Together,",
                 "hands you", "walked", "but gave", "Subtract", "remain?", " own?", "A jar held",
                 "paid", "take", "A box holds", "Work out", "is filling", "students", "Find the product",
                 "apiece", "runs"]


def problem(rng):
    """(question, answer, op) for one held-out problem."""
    op = rng.choice("+-*")
    a, b = _ab(rng, op)
    n, m, t, c = _pick(rng)
    frame = rng.choice(FRAMES[op])
    answer = a + b if op == "+" else a - b if op == "-" else a * b
    return frame(n, m, t, c, a, b), answer, op


def problems(seed, count):
    import random

    rng = random.Random(seed)
    return [problem(rng) for _ in range(count)]
