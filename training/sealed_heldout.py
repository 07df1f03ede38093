"""A third held-out arithmetic set for `npm run eval:tiny -- --set data/tiny-m3/eval-tiny-sealed.json`,
written on 2026-12-02 (session 8) and committed before run 9's data was changed or any run-9
result existed. The first set (heldout_phrasings.py) shaped runs 5-6; the fresh set
(fresh_heldout.py) has been read once (run 8's misses). This one is sealed: its questions are
not to be read when training data is designed, only its score reported. Same range as the other
sets (numbers 2-90, + - *, exact integer answers, heldout_phrasings._ab), held-out names and
things only, 21 frames written from scratch (7 per operation), some with a word that elsewhere
names another operation ("pulled out of the station", "flew off"), one with the question first.
SEALED_MARKERS: `python3 training/sealed_heldout.py --check N` counts them in N generated
training conversations; gen_data.py does not know them."""
import sys

import heldout_sets

SEED = 20261209

FRAMES = {
    "+": [
        lambda n, m, t, a, b: f"{n} scored {a} goals last season and {b} goals this season. What is {n}'s goal tally over the two seasons?",
        lambda n, m, t, a, b: f"Yesterday the orchard crew harvested {a} {t}; today they harvested {b}. How many {t} did the crew bring in over those two days?",
        lambda n, m, t, a, b: f"{n}'s jar has {a} {t} in it. {n} tosses in {b} more. How many {t} are in the jar at the moment?",
        lambda n, m, t, a, b: f"What total do you reach by putting {b} onto {a}?",
        lambda n, m, t, a, b: f"A train pulled out of the station with {a} passengers, and {b} more got on at the next town. How many passengers were on board after that?",
        lambda n, m, t, a, b: f"The club raised {a} dollars at the bake sale and {b} dollars at the car wash. How much did the club raise in all?",
        lambda n, m, t, a, b: f"How many {t} will {n} own once {m} adds {b} to the {a} {t} {n} already has?",
    ],
    "-": [
        lambda n, m, t, a, b: f"A basket had {a} {t}. {b} of them went bad and were thrown out. How many good {t} are in the basket?",
        lambda n, m, t, a, b: f"{n} is on a {a} km trip and has covered {b} km. How many km of the trip are still ahead?",
        lambda n, m, t, a, b: f"How much smaller is {b} than {a}?",
        lambda n, m, t, a, b: f"{a} birds sat on a wire. {b} flew off. How many birds stayed on the wire?",
        lambda n, m, t, a, b: f"{n} had {a} dollars before buying a lamp for {b} dollars. How much money did {n} have after buying it?",
        lambda n, m, t, a, b: f"{m} is {a} cm tall; {n} is {b} cm tall. How much shorter is {n} than {m}?",
        lambda n, m, t, a, b: f"The theatre has {a} seats and {b} of them are sold. How many seats are still unsold?",
    ],
    "*": [
        lambda n, m, t, a, b: f"{n} feeds each of {a} goats {b} {t}. How many {t} do the goats get from {n}?",
        lambda n, m, t, a, b: f"What is {b}, {a} times over?",
        lambda n, m, t, a, b: f"There are {a} tables in the cafe, with {b} {t} on every table. Count the {t} on the tables.",
        lambda n, m, t, a, b: f"{n} earns {b} dollars for each lawn mowed and mows {a} lawns. What does {n} earn?",
        lambda n, m, t, a, b: f"{a} teams enter the contest, and each team has {b} players. How many players entered?",
        lambda n, m, t, a, b: f"{n} stacks the {t} in {a} piles, {b} to a pile. How many {t} are stacked?",
        lambda n, m, t, a, b: f"A printer makes {b} copies a minute. How many copies come out in {a} minutes?",
    ],
}

# One phrase of each frame; none may occur in a training user turn (--check counts them).
SEALED_MARKERS = ["goal tally", "orchard crew", "at the moment", "total do you reach", "on board", "bake sale",
                  "already has", "went bad", "still ahead", "smaller is", "flew off", "before buying",
                  "shorter", "unsold", "goats", "times over", "cafe", "lawn", "each team has",
                  "to a pile", "printer"]


def problems(seed, count):
    return heldout_sets.problems(FRAMES, seed, count)


if __name__ == "__main__":
    heldout_sets.main(sys.argv[1:], FRAMES, SEALED_MARKERS, SEED, "eval-tiny-sealed.json", "training/sealed_heldout.py")
