"""More wordings of the one-step word problems (run 5): gain, loss, combine, compare and group
verbs, each in present, past and second-person frames, so that the operation has to be read from
the meaning of the verb rather than from a few template words. Each family returns
(facts, question, swappable, cue) like arith_train.py's; the cue is the meaning word of the
worked reasoning's cue line (worked.CUES). No frame here holds a held-out frame marker
(heldout_phrasings.FRAME_MARKERS; gen_data.py counts them in every run)."""
from lexicon import CURRENCY, DAYS, NAMES_WIDE as NAMES, THINGS_WIDE as THINGS

# (3rd person present, past, base, past participle)
GAIN = [("buys", "bought", "buy", "bought"), ("finds", "found", "find", "found"), ("gets", "got", "get", "got"),
        ("receives", "received", "receive", "received"), ("wins", "won", "win", "won"),
        ("collects", "collected", "collect", "collected"), ("picks", "picked", "pick", "picked"),
        ("earns", "earned", "earn", "earned"), ("adds", "added", "add", "added"),
        ("gathers", "gathered", "gather", "gathered"), ("makes", "made", "make", "made"),
        ("borrows", "borrowed", "borrow", "borrowed"), ("orders", "ordered", "order", "ordered"),
        ("puts in", "put in", "put in", "put in"), ("picks up", "picked up", "pick up", "picked up"),
        ("brings home", "brought home", "bring home", "brought home"), ("is given", "was given", "are given", "given"),
        ("gains", "gained", "gain", "gained"), ("adds in", "added in", "add in", "added in"),
        ("packs in", "packed in", "pack in", "packed in"), ("grabs", "grabbed", "grab", "grabbed")]
LOSE = [("loses", "lost", "lose", "lost"), ("gives away", "gave away", "give away", "given away"),
        ("eats", "ate", "eat", "eaten"), ("sells", "sold", "sell", "sold"), ("uses", "used", "use", "used"),
        ("breaks", "broke", "break", "broken"), ("drops", "dropped", "drop", "dropped"),
        ("throws away", "threw away", "throw away", "thrown away"), ("donates", "donated", "donate", "donated"),
        ("lends out", "lent out", "lend out", "lent out"), ("removes", "removed", "remove", "removed"),
        ("pulls out", "pulled out", "pull out", "pulled out"), ("misplaces", "misplaced", "misplace", "misplaced"),
        ("trades away", "traded away", "trade away", "traded away"), ("returns", "returned", "return", "returned"),
        ("mails", "mailed", "mail", "mailed"), ("gets rid of", "got rid of", "get rid of", "got rid of"),
        ("uses up", "used up", "use up", "used up"), ("spills", "spilled", "spill", "spilled"),
        ("gives back", "gave back", "give back", "given back"), ("hides", "hid", "hide", "hidden"),
        ("sends off", "sent off", "send off", "sent off")]
GIVE = [("gives", "gave", "give"), ("sends", "sent", "send"), ("passes", "passed", "pass"),
        ("brings", "brought", "bring"), ("mails", "mailed", "mail"), ("lends", "lent", "lend")]
# (unit, 3rd person present, past, base): measured amounts that add up over two periods.
AMOUNTS = [("km", "cycles", "cycled", "cycle"), ("km", "drives", "drove", "drive"), ("km", "hikes", "hiked", "hike"),
           ("km", "rides", "rode", "ride"), ("km", "jogs", "jogged", "jog"), ("pages", "reads", "read", "read"),
           ("pages", "writes", "wrote", "write"), ("minutes", "practises", "practised", "practise"),
           ("minutes", "studies", "studied", "study"), ("laps", "swims", "swam", "swim"),
           ("kg of rice", "sells", "sold", "sell"), ("liters of water", "drinks", "drank", "drink"),
           ("songs", "sings", "sang", "sing"), ("pictures", "paints", "painted", "paint"),
           ("cakes", "bakes", "baked", "bake"), ("letters", "sends", "sent", "send"),
           ("emails", "answers", "answered", "answer"), ("miles", "sails", "sailed", "sail"),
           ("trees", "plants", "planted", "plant"), ("fish", "catches", "caught", "catch"),
           ("dollars", "earns", "earned", "earn"), ("euros", "spends", "spent", "spend"),
           ("pounds", "collects", "collected", "collect"), ("dollars", "raises", "raised", "raise")]
PERIODS = [None, None, ("in the morning", "in the afternoon"), ("last month", "this month"), ("before lunch", "after lunch"),
           ("on the first day", "on the second day"), ("last year", "this year"), ("at home", "at school")]
PEOPLE = ["friends", "children", "kids", "players", "workers", "visitors", "guests", "cousins", "neighbours",
          "campers", "helpers", "drivers"]
COLOURS = ["red", "blue", "green", "yellow", "white", "black", "big", "small"]


def _a(word):
    return ("an " if word[0] in "aeiou" else "a ") + word


def _one(container):
    irregular = {"boxes": "box", "bunches": "bunch", "shelves": "shelf"}
    return irregular.get(container, container[:-1])


def _subject(rng):
    """(subject, object, 'have' in present, is-you) for a name or the reader."""
    if rng.random() < 0.25:
        return "You", "you", "have", True
    n = rng.choice(NAMES)
    return n, n, "has", False


def _does(you, past):
    return "did" if past else ("do" if you else "does")


def _start(rng, s, have, past, a, t, c):
    o = "you" if s == "You" else s
    return rng.choice([f"{s} {'had' if past else have} {a} {t}.", f"At first, {o} {'had' if past else have} {a} {t}.",
                       f"There {'were' if past else 'are'} {a} {t} in the {_one(c)}.",
                       f"{s} {'kept' if past else ('keep' if s == 'You' else 'keeps')} {a} {t} in {_a(_one(c))}.",
                       f"In the morning, {o} {'had' if past else have} {a} {t}.",
                       f"{a} {t} {'were' if past else 'are'} on the {rng.choice(['table', 'shelf', 'floor', 'desk'])}."])


def _clause(sentence):
    """A sentence as a clause after 'After', 'and' or 'but': no leading adverb, no full stop."""
    for lead in ("Then ", "Later ", "After that, ", "Next, ", "Soon ", "Sadly, "):
        sentence = sentence.removeprefix(lead)
    first = sentence.split(" ", 1)[0]
    sentence = sentence if first in NAMES else sentence[0].lower() + sentence[1:]
    return sentence.rstrip(".")


def _shape(rng, first, second, q, s, cue):
    """The two facts as they are, or joined ('F1 and/but f2.'), or the event as an 'After' clause
    before the question ('F1 After f2, q?')."""
    x = rng.random()
    if x < 0.15 and first.startswith(s + " "):
        verb_part = _clause(second)
        if verb_part.startswith(s + " ") or verb_part.startswith("you "):
            verb_part = verb_part.split(" ", 1)[1]
            but = cue == "left" and rng.random() < 0.6 and not verb_part.startswith("gave")  # "but gave": a marker
            return [f"{first.rstrip('.')} {'but' if but else 'and'} {verb_part}."], q
    if x < 0.3:
        return [first], f"After {_clause(second)}, {q[0].lower() + q[1:]}"
    return [first, second], q


def gain_words(rng, a, b):
    s, o, have, you = _subject(rng)
    t, c = rng.choice(THINGS)
    past = rng.random() < 0.5
    v = rng.choice(GAIN)
    verb = v[1] if past else (v[2] if you else v[0])
    if v[0] == "is given":
        verb = ("were given" if you else "was given") if past else ("are given" if you else "is given")
    m = rng.choice([x for x in NAMES if x != s] * 2 + ["a friend", "a neighbour", "an aunt", "a teacher", "grandma", "someone"])
    g = rng.choice(GIVE)
    then = rng.choice(["", "Then ", "Later ", "After that, ", "Next, ", "Soon "])
    sm = o if then else s
    second = rng.choice([f"{then}{sm} {verb} {b} more.",
                         f"{then}{sm} {verb} another {b}.", f"{then}{sm} {verb} {b} extra {t}.",
                         f"{then}{m} {g[1] if past else g[0]} {o} {b} more {t}."])
    second = second[0].upper() + second[1:]
    first = _start(rng, s, have, past, a, t, c)
    d = _does(you, False)
    q = rng.choice([f"How many {t} {d} {o} have now?", f"How many {t} {d} {o} have in all now?",
                    f"How many {t} are there now?", f"What is the number of {t} now?",
                    f"How many {t} {_does(you, True)} {o} have after that?", f"How many {t} is that in all?"])
    facts, q = _shape(rng, first, second, q, s, "more")
    return facts, q, False, "more"


def loss_words(rng, a, b):
    s, o, have, you = _subject(rng)
    t, c = rng.choice(THINGS)
    past = rng.random() < 0.5
    v = rng.choice(LOSE)
    verb = v[1] if past else (v[2] if you else v[0])
    m = rng.choice([x for x in NAMES if x != s])
    g = rng.choice(GIVE)
    then = rng.choice(["", "Then ", "Later ", "After that, ", "Sadly, "])
    sm = o if then else s
    second = rng.choice([f"{then}{sm} {verb} {b} of them.", f"{then}{sm} {verb} {b} {t}.", f"{then}{sm} {verb} {b}.",
                         f"{then}{sm} {g[1] if past else (g[2] if you else g[0])} {b} of them to {m}."])
    second = second[0].upper() + second[1:]
    first = _start(rng, s, have, past, a, t, c)
    d = _does(you, False)
    q = rng.choice([f"How many {t} {d} {o} have left?", f"How many {t} are left?", f"How many {t} are still there?",
                    f"How many {t} {d} {o} keep?", f"How many {t} {d} {o} still have?",
                    f"How many {t} {'were' if past else 'are'} not {v[3]}?", f"How many {t} are there now?",
                    f"How many {t} {'were' if past else 'are'} left over?"])
    facts, q = _shape(rng, first, second, q, s, "left")
    return facts, q, False, "left"


def spend_words(rng, a, b):
    """Money that goes out, the amount spent sometimes named before the amount there was."""
    s, o, have, you = _subject(rng)
    cur = rng.choice(CURRENCY)
    past = rng.random() < 0.5
    v = rng.choice([("spends", "spent", "spend"), ("uses", "used", "use"), ("gives away", "gave away", "give away"),
                    ("loses", "lost", "lose"), ("donates", "donated", "donate")])  # not "paid": a held-out marker
    verb = v[1] if past else (v[2] if you else v[0])
    place = rng.choice(["purse", "bag", "pocket", "piggy bank", "money box", "account"])
    facts = rng.choice([[f"{s} {verb} {b} {cur} of the {a} {cur} in {'your' if you else 'the'} {place}."],
                        [f"Out of {a} {cur}, {o} {verb} {b} {cur}."],
                        [f"{s} {'had' if past else have} {a} {cur} in {'your' if you else 'a'} {place}.", f"{s} {verb} {b} {cur}."]])
    q = rng.choice([f"How many {cur} are left in the {place}?", f"How many {cur} are left?",
                    f"How much money {_does(you, False)} {o} have now?", f"How many {cur} {'were' if past else 'are'} not {v[1]}?"])
    return facts, q, False, "left"


def combine_words(rng, a, b):
    s, o, have, you = _subject(rng)
    past = rng.random() < 0.6
    form = rng.randrange(4)
    if form == 0:
        unit, v3, vp, vb = rng.choice(AMOUNTS)
        verb = vp if past else (vb if you else v3)
        p = rng.choice(PERIODS) or tuple(f"on {d}" for d in rng.sample(DAYS, 2))
        facts = rng.choice([[f"{s} {verb} {a} {unit} {p[0]} and {b} {unit} {p[1]}."],
                            [f"{p[0][0].upper() + p[0][1:]}, {o} {verb} {a} {unit}.", f"{p[1][0].upper() + p[1][1:]}, {o} {verb} {b} {unit}."]])
        d = _does(you, past)
        days = p[0].startswith("on ")
        q = rng.choice([f"How many {unit} {d} {o} {vb} in total?", f"How many {unit} {d} {o} {vb} altogether?",
                        f"How many {unit} is that in all?"]
                       + ([f"How many {unit} {d} {o} {vb} over the two days?", f"How many {unit} {d} {o} {vb} on both days combined?"]
                          if days else [f"How many {unit} {d} {o} {vb} in the two parts together?"]))
        return facts, q, True, "total"
    if form == 1:
        n, m = rng.sample(NAMES, 2)
        t = rng.choice(THINGS)[0]
        h = "had" if past else "has"
        facts = rng.choice([[f"{n} {h} {a} {t} and {m} {h} {b} {t}."], [f"{n} {h} {a} {t}.", f"{m} {h} {b}."]])
        q = rng.choice([f"How many {t} {'did' if past else 'do'} they have combined?", f"How many {t} do the two of them have?",
                        f"How many {t} {'did' if past else 'do'} they have between them?", f"What is the total number of {t}?",
                        f"How many {t} {'did' if past else 'do'} {n} and {m} have in all?"])
        return facts, q, True, "total"
    if form == 2:
        t, c = rng.choice(THINGS)
        x, y = rng.sample(COLOURS, 2)
        # (not "A box holds" / "A jar held": held-out frame markers)
        facts = [rng.choice([f"The {_one(c)} {'contained' if past else 'contains'} {a} {x} {t} and {b} {y} {t}.",
                             f"In one {_one(c)} there {'were' if past else 'are'} {a} {x} {t} and {b} {y} {t}."])]
        q = rng.choice([f"How many {t} {'were' if past else 'are'} in the {_one(c)} in all?", f"How many {t} is that in total?",
                        f"How many {t} are there altogether?"])
        return facts, q, False, "total"
    grp = rng.choice([("boys", "girls", "children"), ("adults", "children", "people"), ("cats", "dogs", "pets"),
                      ("cars", "buses", "vehicles"), ("men", "women", "people")])
    where = rng.choice(["in the park", "at the party", "on the street", "at the show", "in the hall"])
    facts = [f"There {'were' if past else 'are'} {a} {grp[0]} and {b} {grp[1]} {where}."]
    q = rng.choice([f"How many {grp[2]} {'were' if past else 'are'} there?", f"How many {grp[2]} {'were' if past else 'are'} {where} in all?"])
    return facts, q, True, "total"


def compare_measure(rng, a, b):
    n, m = rng.sample(NAMES, 2)
    form = rng.randrange(5)
    if form == 0:
        facts, q = [f"{n} is {a} cm tall and {m} is {b} cm tall."], rng.choice([f"How much taller is {n} than {m}, in cm?", f"How many cm taller is {n}?"])
    elif form == 1:
        facts = [f"{n} scored {a} points and {m} scored {b} points."]
        q = rng.choice([f"By how many points did {n} win?", f"How many more points did {n} score?"])
    elif form == 2:
        x, y = rng.sample(COLOURS[:6], 2)
        facts, q = [f"A {x} rope is {a} m long and a {y} rope is {b} m long."], f"How much longer is the {x} rope, in m?"
    elif form == 3:
        t = rng.choice(THINGS)[0]
        facts = [f"{n} needs {a} {t}.", f"{n} has {b} {t} so far."]
        q = rng.choice([f"How many more {t} does {n} need?", f"How many {t} are still missing?"])
    else:
        t = rng.choice(THINGS)[0]
        h = rng.choice(["has", "owns", "keeps"])
        facts = rng.choice([[f"{m} {h} {b} {t}.", f"{n} {h} {a} {t}."], [f"{m} {h} {b} {t}; {n} {h} {a}."]])
        q = rng.choice([f"How many {t} fewer does {m} have?", f"What is the gap between {n} and {m}?",
                        f"How many {t} more than {m} does {n} have?", f"How many more {t} does {n} have?"])
    return facts, q, form in (1, 4), "difference"


def groups_words(rng, a, b):
    s, o, have, you = _subject(rng)
    t, c = rng.choice(THINGS)
    past = rng.random() < 0.4
    form = rng.randrange(7)
    if form == 0:
        facts, q = [f"There are {b} {t} in each of the {a} {c}."], f"How many {t} are there in all?"
    elif form == 1:
        facts, q = [f"{s} {'had' if past else have} {a} {c}, each with {b} {t}."], f"How many {t} is that?"
    elif form == 2:
        facts, q = [f"{s} {'bought' if past else ('buy' if you else 'buys')} {a} {c} of {b} {t}."], f"How many {t} {_does(you, past)} {o} get?"
    elif form == 3:
        p = rng.choice(PEOPLE)
        v = rng.choice([("got", "get"), ("had", "have"), ("carried", "carry"), ("brought", "bring"), ("received", "receive")])
        facts = [f"{a} {p} each {v[0] if past else v[1]} {b} {t}."]
        q = rng.choice([f"How many {t} {'did' if past else 'do'} the {p} {v[1]} in all?", f"How many {t} is that in total?"])
    elif form == 4:
        facts = [f"{s} {'put' if past else ('put' if you else 'puts')} {b} {t} in every {_one(c)}.", f"There are {a} {c}."]
        q = rng.choice([f"How many {t} {'were' if past else 'are'} used?", f"How many {t} are needed?",
                        f"How many {t} does that take up?".replace("take up", "use up")])
    elif form == 5:
        facts, q = [f"{a} rows of {t} have {b} {t} in each row."], f"How many {t} are there?"
    else:
        facts, q = [f"Every {_one(c)} has {b} {t}.", f"{s} {'had' if past else have} {a} {c}."], f"How many {t} {_does(you, past)} {o} have?"
    return facts, q, False, "each"


def rate_words(rng, a, b):
    s, o, have, you = _subject(rng)
    form = rng.randrange(3)
    if form == 0:
        unit, v3, vp, vb = rng.choice(AMOUNTS)
        per = rng.choice(["a day", "each day", "per day", "every day"])
        facts = [f"{s} {vb if you else v3} {b} {unit} {per}."]
        q = rng.choice([f"How many {unit} {_does(you, False)} {o} {vb} in {a} days?", f"How many {unit} is that for {a} days?",
                        f"How many {unit} in {a} days?"])
    elif form == 1:
        cur, t = rng.choice(CURRENCY), rng.choice(THINGS)[0]
        facts = [rng.choice([f"{t.capitalize()} sell for {b} {cur} each.", f"The price of one of the {t} is {b} {cur}.",
                             f"{t.capitalize()} are {b} {cur} per item."])]
        q = rng.choice([f"How much do {a} {t} cost?", f"What is the price of {a} {t}?", f"How many {cur} for {a} of them?",
                        f"What do {a} {t} cost?", f"What do {a} of them cost together?"])
    else:
        cur = rng.choice(CURRENCY)
        facts = [f"{s} {'earn' if you else 'earns'} {b} {cur} an hour."]
        q = rng.choice([f"How much {_does(you, False)} {o} earn in {a} hours?", f"How many {cur} is that for {a} hours?"])
    return facts, q, False, "each"
