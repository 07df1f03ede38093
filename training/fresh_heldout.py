"""A second held-out arithmetic set for `npm run eval:tiny -- --set data/tiny-m3/eval-tiny-fresh.json`,
written on 2026-12-02 (session 7) before run 7 was measured and not used to shape any training
data. The first set (heldout_phrasings.py) was read after each of runs 4-6 and the next run's
data was designed from its misses, so its score has become an optimistic measure of unseen
wordings; this one is the check of that. Same range as the first set (numbers 2-90, + - *,
exact integer answers), held-out names and things only, 21 frames none of which the training
generator writes (FRESH_MARKERS: `python3 training/fresh_heldout.py --check N` counts them in
N generated conversations; gen_data.py does not know them, so the training data cannot be
steered away from or towards them)."""
import sys

import heldout_sets

FRAMES = {
    "+": [
        lambda n, m, t, a, b: f"On the top shelf sit {a} {t}, and on the bottom shelf {b}. Counting both shelves, how many {t} are there?",
        lambda n, m, t, a, b: f"{n} counted {a} {t} in the morning. By evening the count had gone up by {b}. What was the evening count?",
        lambda n, m, t, a, b: f"{n} is {a} years old. How old will {n} be in {b} years?",
        lambda n, m, t, a, b: f"A bus carries {a} passengers. At the next stop {b} more climb aboard. How many passengers ride on now?",
        lambda n, m, t, a, b: f"What number is {b} greater than {a}?",
        lambda n, m, t, a, b: f"{n}'s pile of {t} grew from {a} by another {b}. How big is the pile?",
        lambda n, m, t, a, b: f"Put {a} {t} and {b} {t} into one heap. How many {t} does the heap have?",
    ],
    "-": [
        lambda n, m, t, a, b: f"A rope is {a} cm long. {n} cuts off {b} cm. How long is the rest of the rope?",
        lambda n, m, t, a, b: f"There were {a} {t} on the tree. The wind knocked down {b} of them. How many {t} hang on the tree still?",
        lambda n, m, t, a, b: f"Knock {b} off {a}. What is the result?",
        lambda n, m, t, a, b: f"{n} has a score of {a} and {m} has a score of {b}. What separates the two scores?",
        lambda n, m, t, a, b: f"From a stack of {a} {t}, {b} were handed out. How many {t} were not handed out?",
        lambda n, m, t, a, b: f"{n} was born {a} years ago and {m} {b} years ago. How many years apart were they born?",
        lambda n, m, t, a, b: f"A tank held {a} litres until {b} litres leaked out. What is in the tank?",
    ],
    "*": [
        lambda n, m, t, a, b: f"A hall is laid out as {a} lines of {b} seats. How many seats does the hall have?",
        lambda n, m, t, a, b: f"{n} picks up {a} packs. Inside every pack are {b} {t}. How many {t} is that?",
        lambda n, m, t, a, b: f"What do {a} batches of {b} come to?",
        lambda n, m, t, a, b: f"One crate weighs {b} kg. What do {a} such crates weigh?",
        lambda n, m, t, a, b: f"{a} hikers gather {b} {t} per hiker. How many {t} are gathered?",
        lambda n, m, t, a, b: f"A car park has {a} levels with space for {b} cars on each level. How many cars fit?",
        lambda n, m, t, a, b: f"{n} builds {a} towers of {b} {t}. How many {t} went into the towers?",
    ],
}

# One phrase of each frame; none may occur in a training user turn (--check counts them).
FRESH_MARKERS = ["top shelf", "in the morning. By evening", "years old. How old", "climb aboard",
                 "greater than", "grew from", "into one heap", "cuts off", "knocked down", "Knock ",
                 "separates", "were handed out", "years apart", "leaked out",
                 "laid out as", "Inside every pack", "batches of", "such crates", "car park",
                 "towers of", "per hiker"]


def problems(seed, count):
    return heldout_sets.problems(FRAMES, seed, count)


if __name__ == "__main__":
    heldout_sets.main(sys.argv[1:], FRAMES, FRESH_MARKERS, 20261202, "eval-tiny-fresh.json", "training/fresh_heldout.py")
