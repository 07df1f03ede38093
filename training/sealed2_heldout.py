"""A fourth held-out arithmetic set for `npm run eval:tiny -- --set data/tiny-m3/eval-tiny-sealed2.json`,
written on 2026-12-02 (session 9) and committed before run 10's data was changed or run 10 was
trained. Sealed like sealed_heldout.py: its questions are not read when training data is
designed, only its score is reported, once per run. Same ranges (heldout_phrasings._ab), held-out
names and things only, 21 frames written from scratch (7 per operation). On purpose some frames
hold a word that in training names another operation ("lent out" in a sum, "more" in a
difference, "fills" in a product), four hold a sentence with no bearing on the answer, two give
the smaller number first, two ask the question first, and units vary (euros, kg, steps, minutes,
lengths). SEALED2_MARKERS: `python3 training/sealed2_heldout.py --check N` counts them in N
generated training conversations; gen_data.py does not know them."""
import sys

import heldout_sets

SEED = 20261210

FRAMES = {
    "+": [
        lambda n, m, t, a, b: f"{n} planted {a} tulips in spring and another {b} tulips in autumn. How many tulips did {n} plant that year?",
        lambda n, m, t, a, b: f"A library lent out {a} books on Saturday and {b} books on Sunday. Over the weekend, how many books were lent?",
        lambda n, m, t, a, b: f"How many {t} are there, given that one crate holds {a} {t} and a second crate holds {b}?",
        lambda n, m, t, a, b: f"{n} had saved {a} euros. Then an uncle sent {b} euros as a birthday gift. How many euros does {n} have now?",
        lambda n, m, t, a, b: f"Add up {a} and {b} and tell me what you get.",
        lambda n, m, t, a, b: f"The morning ferry brought {a} visitors to the island and the evening ferry brought {b}. The sea was calm. How many visitors arrived that day?",
        lambda n, m, t, a, b: f"{n} walked {a} steps to the bakery, then {b} steps to the park. How many steps was that altogether?",
    ],
    "-": [
        lambda n, m, t, a, b: f"Of the {a} {t} in the crate, {b} were sold at the fair. How many {t} did not get sold?",
        lambda n, m, t, a, b: f"{n} needs {a} points to win the game and has {b} points so far. How many more points does {n} need?",
        lambda n, m, t, a, b: f"A parking lot fits {a} cars. Right now {b} cars are parked in it. How many empty spaces are there?",
        lambda n, m, t, a, b: f"What is left when you remove {b} from {a}?",
        lambda n, m, t, a, b: f"{n} weighed {a} kg in January and {b} kg in June. By how many kg did {n}'s weight drop?",
        lambda n, m, t, a, b: f"{n} has read {b} pages of a novel that is {a} pages long. How many pages are unread?",
        lambda n, m, t, a, b: f"{a} {t} lay on the table. The cat was asleep on the sofa. {m} pocketed {b} of them. How many {t} are on the table?",
    ],
    "*": [
        lambda n, m, t, a, b: f"{n} has {a} shelves, and {b} {t} rest on each one. How many {t} are on the shelves?",
        lambda n, m, t, a, b: f"A baker fills {a} trays with {b} rolls per tray. How many rolls does the baker make?",
        lambda n, m, t, a, b: f"Take {b} and repeat it {a} times. What do you get when you add all of them?",
        lambda n, m, t, a, b: f"{n} swims {b} lengths every day for {a} days. How many lengths does {n} swim over those days?",
        lambda n, m, t, a, b: f"{a} vans drive to the market, and every van unloads {b} {t}. How many {t} reach the market?",
        lambda n, m, t, a, b: f"A garden has {a} rows of carrots with {b} carrots in a row. The gate is painted green. How many carrots grow in the garden?",
        lambda n, m, t, a, b: f"How many minutes do {a} lessons take if a lesson lasts {b} minutes?",
    ],
}

# One phrase of each frame; none may occur in a training user turn (--check counts them).
SEALED2_MARKERS = ["tulips", "Over the weekend", "given that", "birthday gift", "tell me what you get",
                   "ferry", "steps to the", "did not get sold", "to win the game", "empty spaces", "when you remove",
                   "weight drop", "unread", "pocketed", "rest on each", "rolls per tray", "repeat it",
                   "lengths every day", "unloads", "The gate is", "lesson lasts"]


def problems(seed, count):
    return heldout_sets.problems(FRAMES, seed, count)


if __name__ == "__main__":
    heldout_sets.main(sys.argv[1:], FRAMES, SEALED2_MARKERS, SEED, "eval-tiny-sealed2.json", "training/sealed2_heldout.py")
