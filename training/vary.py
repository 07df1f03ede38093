"""Run 10's lexical variety for the arithmetic questions (docs/tiny-model.md, "Run 10"): applied
to a generated question after arith_train.problem, it keeps the numbers and the meaning and
changes the surface: a sentence with no number and no bearing on the answer, and swaps of
words that do not decide the operation (or that decide it the same way). Designed from the
brief's list (synonyms, distractor sentences, order of facts), not from any held-out set."""
import re

from lexicon import NAMES_WIDE

FILLERS = ["It was a rainy afternoon.", "The room was quiet.", "{n} was humming a song.",
           "Everyone was in a good mood.", "The sun had just come up.", "{n} likes to keep things tidy.",
           "It was a busy week.", "The shop had just opened.", "{n} wore a red hat.",
           "Nobody was in a hurry.", "The window was open.", "{n} had finished breakfast.",
           "It was the start of the holidays.", "The radio was playing.", "{n} is a careful person.",
           "The street was full of people.", "Lunch was almost ready.", "{n} told a joke.",
           "It was cold outside.", "The kitchen smelled of bread.", "The dog barked twice.",
           "{n} has a blue bicycle.", "The bell rang.", "Outside, the leaves were falling."]

# (pattern, replacements): each keeps the meaning of the sentence it is in.
SWAPS = [
    (r"\bin total\b", ["altogether", "in all", "all together", "combined"]),
    (r"\baltogether\b", ["in total", "in all", "all together"]),
    (r"\bin all\b", ["in total", "altogether"]),
    (r"\bnow\?", ["at this point?", "currently?", "by now?"]),
    (r"^How many (?!more|fewer|less)", ["What number of ", "How many "]),
    (r"\bgets\b", ["receives", "is given"]),
    (r"\bgot\b", ["received", "was given"]),
    (r"\bfinds\b", ["comes across", "discovers"]),
    (r"\bloses\b", ["misplaces", "loses"]),
    (r"\blost\b", ["misplaced", "lost"]),
    (r"\bbuys\b", ["purchases", "picks up"]),
    (r"\bbought\b", ["purchased"]),
    (r"\bThere are\b", ["You can see", "There are"]),
    (r"\bHow much money\b", ["What amount of money", "How much money"]),
]


def vary(rng, q, p_swap=0.35, p_filler=0.3):
    sents = re.findall(r"[^.?!]+[.?!]?", q)
    sents = [s.strip() for s in sents if s.strip()]
    out = []
    for s in sents:
        for pat, reps in SWAPS:
            if rng.random() < p_swap and re.search(pat, s):
                s = re.sub(pat, rng.choice(reps), s, count=1)
        out.append(s)
    if rng.random() < p_filler and len(out) >= 2:
        f = rng.choice(FILLERS).format(n=rng.choice(NAMES_WIDE))
        out.insert(rng.randrange(len(out)), f)
    return " ".join(out)
