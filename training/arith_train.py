"""Arithmetic word problems for training: many phrasings combined at random (names, things,
units, order of facts, distractor sentences, question first or last). heldout_phrasings.py
holds sentence frames this file never produces, for the eval."""
import re
from collections import Counter

import arith_roles as R
import arith_sem as S
import arith_words as W
from heldout_phrasings import FRAME_MARKERS
from lexicon import CURRENCY, DAYS, MEASURES, NAMES_WIDE as NAMES, THINGS_WIDE as THINGS


def _n(rng, lo=2, hi=90):
    return rng.randint(lo, hi)


def _two_names(rng):
    a, b = rng.sample(NAMES, 2)
    return a, b


def gain(rng, a, b):
    n, t = rng.choice(NAMES), rng.choice(THINGS)[0]
    verb = rng.choice(["buys", "finds", "gets", "is given", "wins", "collects", "picks", "receives", "makes"])
    facts = [f"{n} has {a} {t}.", f"{rng.choice([n, 'Then ' + n, 'Later ' + n])} {verb} {b} more."]
    q = rng.choice([f"How many {t} does {n} have now?", f"How many {t} does {n} have in all?",
                    f"How many {t} does {n} have altogether?", "How many are there now?"])
    return facts, q, False, "more"


def together(rng, a, b):
    n, m = _two_names(rng)
    t, c = rng.choice(THINGS)
    form = rng.randrange(3)
    if form == 0:
        facts = [f"{n} has {a} {t} and {m} has {b} {t}."]
    elif form == 1:
        facts = [f"{n} has {a} {t}.", f"{m} has {b} {t}."]
    else:
        facts = [f"There are {a} {t} in the first of the {c} and {b} in the second."]
    q = rng.choice([f"How many {t} do they have together?", f"How many {t} are there altogether?",
                    f"How many {t} are there in total?", "What is the total?"])
    return facts, q, form == 1, "total"


def measure(rng, a, b):
    n = rng.choice(NAMES)
    unit, verb, q = rng.choice(MEASURES)
    d1, d2 = rng.sample(DAYS, 2)
    if rng.random() < 0.5:
        facts = [f"{n} {verb} {a} {unit} on {d1} and {b} {unit} on {d2}."]
    else:
        facts = [f"On {d1}, {n} {verb} {a} {unit}.", f"On {d2}, {n} {verb} {b} {unit}."]
    return facts, q.format(P=n), True, "total"


def lose(rng, a, b):
    n, m = _two_names(rng)
    t = rng.choice(THINGS)[0]
    verb = rng.choice(["gives away", "loses", "eats", "sells", "uses", "breaks", f"gives {m}", "drops"])
    facts = [f"{n} has {a} {t}.", f"{n} {verb} {b} of them."]
    q = rng.choice([f"How many {t} does {n} have left?", "How many are left?", f"How many {t} are left?",
                    f"How many {t} does {n} have now?"])
    return facts, q, False, "left"


def compare(rng, a, b):
    n, m = _two_names(rng)
    t = rng.choice(THINGS)[0]
    facts = [f"{n} has {a} {t}.", f"{m} has {b} {t}."]
    q = rng.choice([f"How many more {t} does {n} have than {m}?", f"How many fewer {t} does {m} have than {n}?",
                    f"What is the difference between the number of {t} they have?"])
    return facts, q, True, "difference"


def spend(rng, a, b):
    n, cur = rng.choice(NAMES), rng.choice(CURRENCY)
    item = rng.choice(["a book", "lunch", "a toy", "a ticket", "a shirt", "groceries"])
    facts = [f"{n} has {a} {cur}.", f"{n} spends {b} {cur} on {item}."]
    q = rng.choice([f"How much money does {n} have left?", f"How many {cur} are left?",
                    f"How many {cur} does {n} have now?"])
    return facts, q, False, "left"


def groups(rng, a, b):
    n = rng.choice(NAMES)
    t, c = rng.choice(THINGS)
    form = rng.randrange(4)
    if form == 0:
        facts = [f"{n} has {a} {c} with {b} {t} in each."]
    elif form == 1:
        facts = [f"There are {a} {c}.", f"Each one holds {b} {t}."]
    elif form == 2:
        facts = [f"Each of the {a} {c} has {b} {t} in it."]
    else:
        facts = [f"{n} buys {a} {c} of {t}.", f"There are {b} {t} in each."]
    q = rng.choice([f"How many {t} are there in total?", f"How many {t} are there altogether?",
                    f"How many {t} does {n} have?"])
    return facts, q, False, "each"


def price(rng, a, b):
    n, cur = rng.choice(NAMES), rng.choice(CURRENCY)
    t = rng.choice(THINGS)[0]
    facts = rng.choice([[f"One of the {t} costs {b} {cur}.", f"{n} buys {a} {t}."],
                        [f"{n} buys {a} {t} at {b} {cur} each."],
                        [f"{t.capitalize()} cost {b} {cur} each.", f"{n} buys {a} of them."]])
    q = rng.choice([f"How much does {n} pay?", f"How many {cur} does {n} spend?", "What is the total cost?"])
    return facts, q, False, "each"


def per_day(rng, a, b):
    n = rng.choice(NAMES)
    unit, verb, _ = rng.choice(MEASURES)
    facts = [f"{n} {verb} {b} {unit} every day for {a} days."]
    q = rng.choice([f"How many {unit} is that in total?", f"How many {unit} does {n} manage altogether?"])
    return facts, q, False, "each"


BARE = {
    "+": ["What is {a} + {b}?", "What is {a} plus {b}?", "Calculate {a} + {b}.", "{a} + {b} = ?",
          "What is the sum of {a} and {b}?", "Add {a} and {b}.", "How much is {a} plus {b}?", "{a} plus {b}",
          "Compute {a} + {b}.", "What is {a} added to {b}?", "Add up {a} and {b}.", "Sum up {a} and {b}.",
          "What do {a} and {b} make together?", "What is the total of {a} and {b}?", "Please add {b} to {a}.",
          "I need the sum of {a} and {b}.", "What number is {b} more than {a}?", "Increase {a} by {b}.",
          "Add {b} to {a}.", "What's {a} plus {b}?", "Figure out {a} plus {b}.", "Evaluate {a} + {b}.",
          "Tell me {a} plus {b}.", "Quick: {a} + {b}?", "Solve {a} + {b}.", "Count {b} on from {a}.",
          "What is {a} and {b} added together?", "Determine the total of {a} and {b}.", "{a} and {b} together make?",
          "Combine {a} and {b}.", "What do you get if you add {a} and {b}?"],
    "-": ["What is {a} - {b}?", "What is {a} minus {b}?", "Calculate {a} - {b}.", "{a} - {b} = ?",
          "What is the difference of {a} and {b}?", "How much is {a} minus {b}?", "{a} minus {b}",
          "Compute {a} - {b}.", "What is {b} less than {a}?", "Remove {b} from {a}. What is left?",
          "Deduct {b} from {a}.", "What is {a} reduced by {b}?", "How much is left if {b} is removed from {a}?",
          "What is {a} less {b}?", "From {a}, remove {b}.", "Decrease {a} by {b}.", "What is the difference between {b} and {a}?",
          "How much bigger is {a} than {b}?", "If you remove {b} from {a}, what is left?", "What do you get when {b} is subtracted from {a}?",
          "What's {a} minus {b}?", "Figure out {a} minus {b}.", "Evaluate {a} - {b}.", "Tell me {a} minus {b}.",
          "Quick: {a} - {b}?", "Solve {a} - {b}.", "Count back {b} from {a}.", "Lower {a} by {b}.",
          "What is {a} with {b} removed?", "Remove {b} from {a}.", "How far is {b} from {a}?",
          "Deduct {b} from {a}. What is the result?"],
    "*": ["What is {a} * {b}?", "What is {a} times {b}?", "Calculate {a} * {b}.", "{a} * {b} = ?",
          "What is the product of {a} and {b}?", "Multiply {a} by {b}.", "How much is {a} times {b}?",
          "What is {a} x {b}?", "{a} times {b}", "Compute {a} * {b}.", "What is {a} multiplied by {b}?",
          "Multiply {a} and {b}.", "What are {a} groups of {b}?", "Give me {a} times {b}.", "What is {b} times {a}?",
          "I need the product of {a} and {b}.", "{a} lots of {b} make how many?",
          "What's {a} times {b}?", "Figure out {a} times {b}.", "Evaluate {a} * {b}.", "Tell me {a} times {b}.",
          "Quick: {a} x {b}?", "Solve {a} * {b}.", "Multiply together {a} and {b}.", "{a} multiplied by {b} is?",
          "Determine the product of {a} and {b}.", "What do {a} sets of {b} come to?", "Calculate {a} times {b}.",
          "What is {a} multiplied with {b}?"],
}

def _one(container):
    """The singular of a container word (boxes -> box, shelves -> shelf)."""
    irregular = {"boxes": "box", "bunches": "bunch", "shelves": "shelf"}
    return irregular.get(container, container[:-1])


def gain_past(rng, a, b):
    n, m = _two_names(rng)
    t, c = rng.choice(THINGS)
    form = rng.randrange(4)
    if form == 0:
        facts = [f"{n} had {a} {t}.", f"Then {m} gave {n} {b} more."]
    elif form == 1:
        facts = [f"There were {a} {t} in the {c}.", f"{n} put in {b} more."]
    elif form == 2:
        facts = [f"You own {a} {t}.", f"You buy {b} more."]
    else:
        facts = [f"{n} collected {a} {t} in the morning and {b} in the afternoon."]
    q = rng.choice({0: [f"How many {t} does {n} have now?", f"How many {t} did {n} have after that?"],
                    1: [f"How many {t} are in the {c} now?", f"How many {t} are there in all?"],
                    2: [f"How many {t} do you have now?", f"How many {t} do you own in total?"],
                    3: [f"How many {t} did {n} collect that day?", f"How many {t} did {n} gather in all?"]}[form])
    return facts, q, False, "more"


def lose_past(rng, a, b):
    n, m = _two_names(rng)
    t, c = rng.choice(THINGS)
    form = rng.randrange(5)
    if form == 0:
        facts = [f"{n} had {a} {t}.", f"{n} gave {b} of them to {m}."]
        q = rng.choice([f"How many {t} does {n} have now?", f"How many {t} did {n} keep?"])
    elif form == 1:
        facts = [f"There were {a} {t} in the {c}.", f"{n} removed {b} of them."]
        q = rng.choice([f"How many {t} are in the {c} now?", f"How many {t} are still in the {c}?"])
    elif form == 2:
        facts = [f"You have {a} {t}.", f"You give away {b}."]
        q = rng.choice([f"How many {t} do you have left?", f"How many {t} are left for you?"])
    elif form == 3:
        facts = [f"{n} bought {a} {t} and used {b} of them."]
        q = rng.choice([f"How many {t} are not used?", f"How many {t} does {n} still have?"])
    else:
        facts = [f"A {_one(c)} had {a} {t} in it.", f"{n} picked out {b}."]
        q = rng.choice([f"How many {t} are left in it?", f"How many {t} stayed behind?"])
    return facts, q, False, "left"


def compare_words(rng, a, b):
    n, m = _two_names(rng)
    t = rng.choice(THINGS)[0]
    facts = [f"{m} has {b} {t} and {n} has {a} {t}."] if rng.random() < 0.5 else [f"{m} has {b} {t}.", f"{n} has {a}."]
    q = rng.choice([f"How many more {t} does {n} have?", f"By how many {t} is {n} ahead of {m}?",
                    f"How many {t} does {m} need to catch up with {n}?", f"How many fewer {t} does {m} have?"])
    return facts, q, False, "difference"


def rate(rng, a, b):
    n = rng.choice(NAMES)
    t, c = rng.choice(THINGS)
    cur = rng.choice(CURRENCY)
    form = rng.randrange(5)
    if form == 0:
        facts, q = [f"Every {_one(c)} holds {b} {t}."], f"How many {t} fit in {a} {c}?"
    elif form == 1:
        facts, q = [f"{a} friends each bring {b} {t}."], f"How many {t} do they bring altogether?"
    elif form == 2:
        facts, q = [f"Each ticket costs {b} {cur}."], f"How much do {a} tickets cost?"
    elif form == 3:
        unit, verb, _ = rng.choice(MEASURES)
        facts, q = [f"{n} {verb} {b} {unit} each day."], f"How many {unit} is that over {a} days?"
    else:
        facts, q = [f"You pack {b} {t} into each of {a} {c}."], f"How many {t} do you pack?"
    return facts, q, False, "each"


# Run 5 adds arith_words.py's families, twice each where they carry many more verbs.
ONE_STEP = {"+": [gain, together, measure, gain_past, W.gain_words, W.gain_words, W.combine_words, W.combine_words],
            "-": [lose, compare, spend, lose_past, compare_words, W.loss_words, W.loss_words, W.loss_words, W.compare_measure,
                  W.spend_words],
            "*": [groups, price, per_day, rate, W.groups_words, W.groups_words, W.rate_words]}
# Run 6 adds arith_roles.py's families (transfer direction, second-person loss, "each of the N
# people", filling containers, "started with", the amount taken named first).
ONE_STEP = {op: fams + {"+": R.PLUS, "-": R.MINUS, "*": R.TIMES}[op] for op, fams in ONE_STEP.items()}
# Run 9 adds arith_sem.py's families (parts by meaning class): about 40% of each operation's one-step
# word problems.
# Off by default since run 9 was not bundled (docs/tiny-model.md, "Run 9"): gen_data.py --run9 sets it.
RUN9 = False
ONE_STEP_RUN9 = {op: fams + {"+": S.PLUS * 3, "-": S.MINUS * 4, "*": S.TIMES * 4}[op] for op, fams in ONE_STEP.items()}
BARE_CUE = {"+": "plus", "-": "minus", "*": "times"}


def operands(rng, op):
    if op == "-":
        a, b = sorted((_n(rng), _n(rng)), reverse=True)
        return (a, b) if a != b else (a + 1, b)
    if op == "*" and rng.random() < 0.4:
        return _n(rng, 2, 12), _n(rng, 2, 90)
    return _n(rng), _n(rng)


def distractor(rng):
    n, t = rng.choice(NAMES), rng.choice(THINGS)[0]
    d = _n(rng, 2, 60)
    return rng.choice([f"{n} is {d} years old.", f"It is {d} degrees outside.", f"{n} also has {d} {t}.",
                       f"The shop is {d} km away.", f"The clock shows {d} minutes past noon.",
                       f"{n} has a friend who owns {d} {t}."])


def one_step(rng):
    op = rng.choice("+-*")
    a, b = operands(rng, op)
    if rng.random() < 0.2:
        return rng.choice(BARE[op]).format(a=a, b=b), [(a, op, b, BARE_CUE[op])]
    facts, q, swappable, cue = rng.choice((ONE_STEP_RUN9 if RUN9 else ONE_STEP)[op])(rng, a, b)
    return compose(rng, facts, q, swappable), [(a, op, b, cue)]


def two_step(rng):
    """Problems of two or three steps; the worked steps follow the order of computation."""
    n, m = _two_names(rng)
    t, c = rng.choice(THINGS)
    cur = rng.choice(CURRENCY)
    kind = rng.randrange(5)
    if kind == 0:
        a, b = _n(rng), _n(rng)
        k = rng.randint(2, a + b - 1)
        facts = [f"{n} has {a} {t}.", f"{n} gets {b} more.", f"Then {n} gives {k} to {m}."]
        return compose(rng, facts, f"How many {t} does {n} have now?", False), [(a, "+", b, "more"), ("prev", "-", k, "left")]
    if kind == 1:
        a, b, k = _n(rng, 2, 12), _n(rng, 2, 30), _n(rng)
        facts = [f"{n} has {a} {c} with {b} {t} in each.", f"{n} also has {k} loose {t}."]
        return compose(rng, facts, f"How many {t} does {n} have in total?", False), [(a, "*", b, "each"), ("prev", "+", k, "more")]
    if kind == 2:
        q, p = _n(rng, 2, 9), _n(rng, 2, 20)
        money = q * p + _n(rng, 0, 50)
        facts = [f"{n} has {money} {cur}.", f"{n} buys {q} {t} at {p} {cur} each."]
        qs = f"How many {cur} does {n} have left?"
        return compose(rng, facts, qs, False), [(q, "*", p, "each"), (money, "-", "prev", "left")]
    if kind == 3:
        a, b = _n(rng, 2, 12), _n(rng, 2, 40)
        k = rng.randint(1, a * b - 1) if a * b < 90 else _n(rng, 2, 90)
        facts = [f"There are {a} {c} of {t} with {b} in each.", f"{k} of the {t} are broken."]
        return compose(rng, facts, f"How many {t} are not broken?", False), [(a, "*", b, "each"), ("prev", "-", k, "left")]
    a, b, k = _n(rng), _n(rng), _n(rng)
    j = rng.randint(1, a + b + k - 1)
    facts = [f"{n} has {a} {t}.", f"{n} finds {b} more.", f"{m} gives {n} {k} more.", f"{n} loses {j}."]
    return compose(rng, facts, f"How many {t} does {n} have now?", False), [(a, "+", b, "more"), ("prev", "+", k, "more"), ("prev", "-", j, "left")]


SUFFIXES = ["", "", "", " Solve step by step.", " Show your work.", " Give the final number.",
            " Think step by step and give the answer after ####."]


def _lower_first(text):
    """A sentence as a clause: its first word lowercased unless it is a name."""
    first = text.split(" ", 1)[0]
    return text if first in NAMES else text[0].lower() + text[1:]


def conditional(facts, question):
    """'If F1 and F2, q?': two facts and the question in one sentence."""
    f1, f2 = (f.rstrip(".") for f in facts)
    f1 = f1.removeprefix("At first, ")
    for lead in ("Then ", "Later ", "After that, ", "Next, ", "Soon ", "Sadly, "):
        if f2.startswith(lead):
            f2 = f2[len(lead):]
    return f"If {_lower_first(f1)} and {_lower_first(f2)}, {_lower_first(question)}"


def compose(rng, facts, question, swappable):
    facts = list(facts)
    if swappable and rng.random() < 0.5:
        facts.reverse()
    if len(facts) == 2 and rng.random() < 0.12:
        return conditional(facts, question) + rng.choice(SUFFIXES)
    if rng.random() < 0.3:
        facts.insert(rng.randrange(len(facts) + 1), distractor(rng))
    text = " ".join(facts)
    text = f"{question} {text}" if rng.random() < 0.15 else f"{text} {question}"
    return text.strip() + rng.choice(SUFFIXES)


def numbers_in(text, steps):
    """The problem's operands in the order the text gives them (the extraction line), leaving
    out the numbers of a distractor sentence."""
    need = Counter(x for s in steps for x in (s[0], s[2]) if x != "prev")
    out = []
    for m in re.findall(r"\d+", text):
        if need[int(m)] > 0:
            need[int(m)] -= 1
            out.append(int(m))
    assert not +need, (text, steps)
    return out


def problem(rng):
    """(question text, steps, numbers) for one training problem; one that happens to hold a
    held-out frame marker is drawn again, so the held-out frames stay out of training."""
    while True:
        q, steps = one_step(rng) if rng.random() < 0.72 else two_step(rng)
        if not any(m in q for m in FRAME_MARKERS):
            return q, steps, numbers_in(q, steps)
