"""Run 6: word problems that make the operation and the operand order depend on roles, not on
positions or a few template words. Run 5's misses (docs/tiny-model.md, "Run 5") were of four
kinds: a loss verb in the second person read as a gain, a transfer read the wrong way round (who
gives and who gets), "each of the N people <verb> B" read as a sum, and a subtraction whose
amount taken away comes before the amount there was. Each family returns (facts, question,
swappable, cue) like arith_train.py's. None of them may hold a held-out frame marker
(heldout_phrasings.FRAME_MARKERS): gen_data.py drops any problem that does and counts them."""
from lexicon import CURRENCY, NAMES_WIDE as NAMES, THINGS_WIDE as THINGS

# Transfer verbs: (3rd person present, past, base). The giver loses, the receiver gains.
TRANSFER = [("gives", "gave", "give"), ("hands", "handed", "hand"), ("passes", "passed", "pass"),
            ("sends", "sent", "send"), ("tosses", "tossed", "toss"), ("offers", "offered", "offer"),
            ("mails", "mailed", "mail"), ("lends", "lent", "lend"), ("slips", "slipped", "slip"),
            ("delivers", "delivered", "deliver"), ("throws", "threw", "throw"), ("sells", "sold", "sell"),
            ("donates", "donated", "donate"), ("returns", "returned", "return"), ("leaves", "left", "leave")]
GIVERS = ["a friend", "a neighbour", "an uncle", "a cousin", "the teacher", "grandpa", "a classmate",
          "the coach", "a stranger", "the shopkeeper", "their mother", "an old friend"]
# Loss verbs in the second person, the commonest ones many times over.
YOU_LOSE = ["lose", "lose", "lose", "drop", "drop", "give away", "spend", "eat", "break", "use",
            "sell", "misplace", "throw out", "spill", "use up", "hand back", "leave behind", "forget"]
LEFT_Q = ["How many {t} are still yours?", "How many {t} are you left with?", "How many {t} do you have left?",
          "How many {t} stay with you?", "How many {t} do you keep?",
          "How many {t} are there now?", "What number of {t} is left?", "How many {t} survive?",
          "How many {t} are left over?", "How many {t} are not gone?", "How many {t} do you still own?"]
GROUP_PEOPLE = ["friends", "children", "kids", "pupils", "players", "workers", "visitors", "guests", "cousins",
                "campers", "helpers", "scouts", "dancers", "singers", "members", "teachers", "nurses",
                "farmers", "neighbours", "volunteers", "girls", "boys", "adults", "families", "teams"]
GROUP_VERBS = [("brings", "brought", "bring"), ("carries", "carried", "carry"), ("collects", "collected", "collect"),
               ("makes", "made", "make"), ("buys", "bought", "buy"), ("picks", "picked", "pick"),
               ("donates", "donated", "donate"), ("sends", "sent", "send"),
               ("gives", "gave", "give"), ("draws", "drew", "draw"), ("finds", "found", "find"),
               ("plants", "planted", "plant"), ("packs", "packed", "pack")]
FILL_VERBS = [("is packing", "packs"), ("is loading", "loads"), ("is stocking", "stocks"),
              ("is stuffing", "stuffs"), ("is preparing", "prepares"), ("is setting up", "sets up")]
PLACES = ["purse", "bag", "pocket", "piggy bank", "money box", "account", "jar", "drawer"]


def _other(rng, n):
    return rng.choice([x for x in NAMES if x != n] + GIVERS)


def _cap(s):
    return s[0].upper() + s[1:]


def transfer(rng, a, b, incoming):
    """n starts with a; b things move to n (incoming) or from n. Which way they move decides + or -."""
    n = rng.choice(NAMES)
    m = _other(rng, n)
    t = rng.choice(THINGS)[0]
    v = rng.choice(TRANSFER)
    past = rng.random() < 0.5
    verb = v[1] if past else v[0]
    start = rng.choice([f"{n} {'had' if past else 'has'} {a} {t}.", f"{n} started with {a} {t}.",
                        f"{n} began the day with {a} {t}.", f"At the start, {n} had {a} {t}.",
                        f"To begin with, {n} owned {a} {t}."])
    q = rng.choice([f"How many {t} does {n} have now?", f"How many {t} does {n} have at the end?",
                    f"How many {t} is {n} holding now?", f"How many {t} does {n} finish with?",
                    f"How many {t} belong to {n} after that?"])
    if incoming:
        second = rng.choice([f"{_cap(m)} {verb} {n} {b} more {t}.", f"{_cap(m)} {verb} {b} {t} to {n}.",
                             f"{_cap(m)} {verb} {n} another {b}.", f"Then {m} {verb} {b} more to {n}.",
                             f"{n} {'got' if past else 'gets'} {b} more from {m}.",
                             f"{n} {'was' if past else 'is'} {v[1]} {b} more {t} by {m}."])
        return [start, second], q, False, "more"
    second = rng.choice([f"{n} {verb} {b} {t} to {m}.", f"{n} {verb} {m} {b} of them.",
                         f"Then {n} {verb} {b} of the {t} to {m}.", f"{n} {verb} {b} away to {m}.",
                         f"{_cap(m)} {'got' if past else 'gets'} {b} {t} from {n}."])
    return [start, second], q, False, "left"


def you_transfer(rng, a, b, incoming):
    """The reader as the one who gets or gives: 'Your cousin passes over 7 more' or 'You give 7 to Mia'."""
    t = rng.choice(THINGS)[0]
    m = _other(rng, "")
    v = rng.choice(TRANSFER)
    start = rng.choice([f"You started with {a} {t}.", f"You own {a} {t}.",
                        f"There are {a} {t} in your bag.", f"You had {a} {t} this morning."])
    if incoming:
        giver = rng.choice([f"{_cap(m)}", "Your friend", "Your brother", "Your aunt", "Someone", "A friend"])
        second = rng.choice([f"{giver} {v[0]} over {b} more.", f"{giver} {v[0]} {b} extra {t} to you.",
                             f"{giver} {v[0]} you {b} more {t}.", f"{giver} {v[1]} you another {b}.",
                             f"You get {b} more from {m}.", f"You are {v[1]} {b} more {t}.",
                             f"{giver} {v[1]} {b} more {t} your way."])
        q = rng.choice([f"How many {t} do you have now?", f"How many {t} are yours now?",
                        f"How many {t} do you have in all?", f"What is your total of {t} now?"])
        return [start, second], q, False, "more"
    second = rng.choice([f"You {v[2]} {b} of them to {m}.", f"You {v[2]} {m} {b} {t}.",
                         f"You {v[2]} {b} {t} away.", f"Then you {v[2]} {b} to {m}."])
    return [start, second], rng.choice(LEFT_Q).format(t=t), False, "left"


def you_lose(rng, a, b):
    """A loss told to the reader, short sentences: 'You own 40 cards. You drop 12.'"""
    t = rng.choice(THINGS)[0]
    verb = rng.choice(YOU_LOSE)
    start = rng.choice([f"You own {a} {t}.", f"You keep {a} {t} in a box.", f"Your bag holds {a} {t}.",
                        f"You are holding {a} {t}.", f"You started with {a} {t}."])
    second = rng.choice([f"You {verb} {b}.", f"You {verb} {b} of them.", f"You {verb} {b} {t}.",
                         f"Then you {verb} {b}.", f"Sadly, you {verb} {b}.", f"Later you {verb} {b} of the {t}."])
    return [start, second], rng.choice(LEFT_Q).format(t=t), False, "left"


def each_people(rng, a, b):
    """'Every one of the 12 campers carries 5 cups': people times what each one has."""
    p = rng.choice(GROUP_PEOPLE)
    t = rng.choice(THINGS)[0]
    v = rng.choice(GROUP_VERBS)
    past = rng.random() < 0.4
    verb = v[1] if past else v[0]
    fact = rng.choice([f"Every one of the {a} {p} {verb} {b} {t}.",
                       f"All {a} {p} {v[1] if past else v[2]} {b} {t} each.", f"There are {a} {p}, and each {verb} {b} {t}.",
                       f"{a} {p} come, and every one of them {verb} {b} {t}."])
    q = rng.choice([f"How many {t} is that altogether?",
                    f"How many {t} do the {p} {v[2]} in all?", f"What is the total number of {t}?",
                    f"How many {t} {'were' if past else 'are'} {v[1]} by the {p}?"])
    return [fact], q, False, "each"


def fill_each(rng, a, b):
    """'Nadia is packing 6 crates with 8 pears in each': containers times what goes in each."""
    n = rng.choice(NAMES)
    t, c = rng.choice(THINGS)
    prog, pres = rng.choice(FILL_VERBS)
    fact = rng.choice([f"{n} {prog} {a} {c}; {b} {t} go into each.", f"{n} {pres} {a} {c}, putting {b} {t} into each one.",
                       f"{n} {prog} {a} {c}. Each one gets {b} {t}.", f"{n} {pres} {b} {t} into each of {a} {c}.",
                       f"{n} {prog} {a} {c} and puts {b} {t} in each of them."])
    q = rng.choice([f"How many {t} does {n} need?", f"How many {t} are used?", f"How many {t} go in?",
                    f"How many {t} does that come to?", f"How many {t} are needed altogether?"])
    return [fact], q, False, "each"


def started_gain(rng, a, b):
    """'Omar started with 23 cards and then got 19 more': the start comes first, the gain after."""
    n = rng.choice(NAMES)
    t = rng.choice(THINGS)[0]
    g = rng.choice(["gets", "receives", "finds", "wins", "is given", "collects", "earns", "picks up"])
    past = {"gets": "got", "receives": "received", "finds": "found", "wins": "won", "is given": "was given",
            "collects": "collected", "earns": "earned", "picks up": "picked up"}[g]
    form = rng.randrange(2)
    q = rng.choice([f"how many {t} does {n} have at the end?", f"how many {t} does {n} finish with?",
                    f"what is {n}'s final number of {t}?",
                    f"how many {t} does {n} have after that?"])
    if form == 0:
        return [f"{n} started with {a} {t} and then {past} {b} more."], _cap(q), False, "more"
    return [f"{n} began with {a} {t}.", f"After that {n} {past} another {b}."], _cap(q), False, "more"


def taken_first(rng, a, b):
    """The amount that goes, then the amount there was: 'Used 12 of the 40 cups', 'spent 9 from a
    purse holding 30'. The larger number is the start by its role, whatever the order."""
    n = rng.choice(NAMES)
    t = rng.choice(THINGS)[0]
    cur = rng.choice(CURRENCY)
    place = rng.choice(PLACES)
    form = rng.randrange(6)
    if form == 0:
        verb = rng.choice(["spent", "used", "gave away", "lost", "donated"])
        facts = [f"{n} {verb} {b} {cur} from a {place} that held {a} {cur}."]
        q = rng.choice([f"How many {cur} are in the {place} now?", f"How many {cur} are left in the {place}?"])
    elif form == 1:
        verb = rng.choice(["ate", "sold", "broke", "used", "lost", "gave away"])
        facts = [f"{n} {verb} {b} of the {a} {t}."]
        q = rng.choice([f"How many {t} are left?", f"How many {t} does {n} have now?", f"How many of the {t} are still there?"])
    elif form == 2:
        facts = [f"{b} {t} were broken out of a batch of {a}."]
        q = rng.choice([f"How many {t} are fine?", f"How many {t} are not broken?"])
    elif form == 3:
        facts = [f"{n} moved {b} {t} out of the {place}, which had {a}."]
        q = rng.choice([f"How many {t} are in the {place} now?", f"How many {t} are still in the {place}?"])
    elif form == 4:
        facts = [f"Only {b} of the {a} {t} were used."]
        q = rng.choice([f"How many {t} are left?", f"How many {t} were not used?"])
    else:
        facts = [f"{n} gave {b} {cur} out of {a} {cur} to charity."]
        q = rng.choice([f"How many {cur} does {n} keep?", f"How many {cur} are left?"])
    return facts, q, False, "left"


def smaller_first(rng, a, b):
    """Comparisons with the smaller amount named first."""
    n, m = rng.sample(NAMES, 2)
    t = rng.choice(THINGS)[0]
    form = rng.randrange(4)
    if form == 0:
        facts = [f"{m} has {b} {t}.", f"{n} has {a} {t}."]
        q = rng.choice([f"How many more {t} does {n} have than {m}?", f"How many {t} is {m} short of {n}?"])
    elif form == 1:
        facts = [f"A small box weighs {b} kg and a big box weighs {a} kg."]
        q = "How much heavier is the big box, in kg?"
    elif form == 2:
        facts = [f"Last year {n} had {b} {t}; this year {n} has {a} {t}."]
        q = rng.choice([f"How many more {t} does {n} have this year?", f"By how many did the {t} go up?"])
    else:
        facts = [f"{m} is {b} years old and {n} is {a}."]
        q = rng.choice([f"How much older is {n}?", f"How many years older is {n} than {m}?"])
    return facts, q, False, "difference"


def gets(family):
    return lambda rng, a, b: family(rng, a, b, True)


def gives(family):
    return lambda rng, a, b: family(rng, a, b, False)


PLUS = [gets(transfer), gets(you_transfer), started_gain, started_gain]
MINUS = [gives(transfer), gives(you_transfer), you_lose, you_lose] + [taken_first, smaller_first] * 3
TIMES = [each_people, each_people, fill_each, fill_each]
