"""Run 9: one-step word problems built from parts by meaning class, so that the operation is
read from what a phrase means and not from the frame around it. A problem is a start state (a
holder, a place or the reader), an event or a second fact, and a question, each drawn from many
wordings: gains (buy, find, receive, things that arrive) -> +, losses (lose, spend, eat, give
away, things that roll away or get stolen) -> -, comparisons (how many more, fewer, taller,
lighter, difference) -> -, groups, rows, rates and "times as many" -> *. Half of the change
problems ask a neutral question ("How many ... now?"), so the event alone decides the
operation. Families return (facts, question, swappable, cue) like arith_train.py's; each names
its operation with one of op_words.KEYS' phrases, which the key line of the think copies."""
from lexicon import CURRENCY, NAMES_WIDE as NAMES, THINGS_WIDE as THINGS

# (3rd person present, past, base, past participle), the thing as object: the holder gains.
GAIN = [("buys", "bought", "buy", "bought"), ("finds", "found", "find", "found"), ("gets", "got", "get", "got"),
        ("receives", "received", "receive", "received"), ("wins", "won", "win", "won"),
        ("collects", "collected", "collect", "collected"), ("picks up", "picked up", "pick up", "picked up"),
        ("earns", "earned", "earn", "earned"), ("gathers", "gathered", "gather", "gathered"),
        ("borrows", "borrowed", "borrow", "borrowed"), ("orders", "ordered", "order", "ordered"),
        ("brings home", "brought home", "bring home", "brought home"), ("gains", "gained", "gain", "gained"),
        ("grabs", "grabbed", "grab", "grabbed"), ("catches", "caught", "catch", "caught"),
        ("scoops up", "scooped up", "scoop up", "scooped up"), ("wins back", "won back", "win back", "won back"),
        ("makes", "made", "make", "made"), ("adds", "added", "add", "added"), ("buys up", "bought up", "buy up", "bought up")]
# The holder loses.
LOSS = [("loses", "lost", "lose", "lost"), ("gives away", "gave away", "give away", "given away"),
        ("eats", "ate", "eat", "eaten"), ("sells", "sold", "sell", "sold"), ("uses up", "used up", "use up", "used up"),
        ("uses", "used", "use", "used"), ("breaks", "broke", "break", "broken"), ("drops", "dropped", "drop", "dropped"),
        ("throws away", "threw away", "throw away", "thrown away"), ("donates", "donated", "donate", "donated"),
        ("misplaces", "misplaced", "misplace", "misplaced"), ("spills", "spilled", "spill", "spilled"),
        ("gives back", "gave back", "give back", "given back"), ("spends", "spent", "spend", "spent"),
        ("pops", "popped", "pop", "popped"), ("burns", "burned", "burn", "burned"),
        ("leaves behind", "left behind", "leave behind", "left behind"), ("forgets", "forgot", "forget", "forgotten"),
        ("hands back", "handed back", "hand back", "handed back"), ("gives up", "gave up", "give up", "given up"),
        ("wears out", "wore out", "wear out", "worn out"), ("puts away", "put away", "put away", "put away"),
        ("sends back", "sent back", "send back", "sent back"), ("throws out", "threw out", "throw out", "thrown out"),
        ("deletes", "deleted", "delete", "deleted"), ("returns", "returned", "return", "returned")]
# (present plural, past), the things as subject: they go (loss) or come (gain).
GO = [("roll away", "rolled away"), ("fall out", "fell out"), ("melt", "melted"), ("crack", "cracked"),
      ("break", "broke"), ("go missing", "went missing"), ("get lost", "got lost"), ("are stolen", "were stolen"),
      ("are sold", "were sold"), ("are eaten", "were eaten"), ("are used up", "were used up"),
      ("are given away", "were given away"), ("get broken", "got broken")]
COME = [("arrive", "arrived"), ("come in", "came in"), ("are added", "were added"), ("are delivered", "were delivered"),
        ("are found", "were found"), ("are bought", "were bought"), ("are collected", "were collected")]
GIVERS = ["a friend", "a neighbour", "the teacher", "an aunt", "grandpa", "a classmate", "the coach", "a cousin"]
PLACES = ["box", "bag", "basket", "drawer", "cupboard", "crate", "tin", "bin"]
PEOPLE = ["friends", "children", "pupils", "players", "workers", "guests", "campers", "helpers", "scouts",
          "dancers", "members", "volunteers", "families", "teams", "riders", "cooks"]


def _cap(s):
    return s[0].upper() + s[1:]


def _holder(rng):
    """(subject, object, has, does, is-you)."""
    if rng.random() < 0.3:
        return "You", "you", "have", "do", True
    n = rng.choice(NAMES)
    return n, n, "has", "does", False


def _start(rng, s, has, past, a, t, place):
    """(sentence, whether it is about a place rather than the holder)."""
    held = [f"{s} {'had' if past else has} {a} {t}.", f"{s} {'owned' if past else ('own' if s == 'You' else 'owns')} {a} {t}.",
            f"{s} {'kept' if past else ('keep' if s == 'You' else 'keeps')} {a} {t} in the {place}.",
            f"At first {s.lower() if s == 'You' else s} had {a} {t}.", f"{s} began with {a} {t}."]
    placed = [f"There {'were' if past else 'are'} {a} {t} in the {place}.", f"The {place} {'held' if past else 'holds'} {a} {t}.",
              f"{a} {t} {'were' if past else 'are'} in the {place}."]
    if rng.random() < 0.7:
        return rng.choice(held), False
    return rng.choice(placed), True


NEUTRAL_Q = ["How many {t} {d} {o} have now?", "How many {t} are there now?", "What is the number of {t} now?",
             "How many {t} {d} {o} have at the end?", "How many {t} {d} {o} have after that?",
             "What is the count of {t} now?", "How many {t} are in the {place} now?"]
GAIN_Q = ["How many {t} {d} {o} have in all now?", "How many {t} is that altogether?", "What is the new total of {t}?",
          "How many {t} {d} {o} have all together now?"]
LOSS_Q = ["How many {t} are left?", "How many {t} {d} {o} have left?", "How many {t} are still there?",
          "How many {t} are remaining?", "How many {t} {d} {o} still have?", "How many {t} are left over?",
          "How many {t} stay in the {place}?", "What number of {t} is left?", "How many {t} does that leave?"]


def change(rng, a, b, gain):
    """A start state, then an event that adds b (gain) or removes b; a neutral question half the time."""
    s, o, has, d, you = _holder(rng)
    t = rng.choice(THINGS)[0]
    place = rng.choice(PLACES)
    past = rng.random() < 0.5
    then = rng.choice(["", "", "Then ", "Later ", "After that, ", "Next, "])
    x = rng.random()
    if x < 0.25:  # the things as subject
        v = rng.choice(COME if gain else GO)
        verb = v[1] if past else v[0]
        second = rng.choice([f"{then}{b} {'more ' if gain and rng.random() < 0.5 else ''}{t} {verb}.",
                             f"{then}{b} of {'them' if not gain else 'those'} {verb}." if not gain else f"{then}{b} more {verb}."])
    elif x < 0.4 and gain:  # someone gives to the holder
        g = rng.choice([x for x in NAMES if x != s] + GIVERS)
        gv = rng.choice([("gives", "gave"), ("sends", "sent"), ("hands", "handed"), ("brings", "brought")])
        second = rng.choice([f"{then}{_cap(g)} {gv[1] if past else gv[0]} {o} {b} more.",
                             f"{then}{_cap(g)} {gv[1] if past else gv[0]} {b} {t} to {o}.",
                             f"{then}{s if not then else o} {'was' if past else 'is'} given {b} more." if not you
                             else f"{then}{'you' if then else 'You'} {'were' if past else 'are'} given {b} more."])
    else:
        v = rng.choice(GAIN if gain else LOSS)
        verb = v[1] if past else (v[2] if you else v[0])
        subj = o if then else s
        obj = rng.choice([f"{b} more", f"another {b}", f"{b} {t}", f"{b} extra {t}"] if gain
                         else [f"{b} of them", f"{b} {t}", f"{b}", f"{b} of the {t}"])
        second = f"{then}{subj} {verb} {obj}."
    second = _cap(second)
    first, placed = _start(rng, s, has, past, a, t, place)
    pool = NEUTRAL_Q if rng.random() < 0.5 else (GAIN_Q if gain else LOSS_Q)
    if placed:  # a question about the place, not about a holder
        pool = [q for q in pool if "{o}" not in q]
    q = rng.choice(pool).format(t=t, d=d, o=o, place=place)
    return [first, second], q, False, "more" if gain else "left"


def gain(rng, a, b):
    return change(rng, a, b, True)


def loss(rng, a, b):
    return change(rng, a, b, False)


# (statement with {x} and {unit}, question asking for the bigger one's lead, the smaller one's lack)
ATTR = [("is {x} cm tall", "How much taller is {big} than {small}?", "How many cm taller is {big}?"),
        ("weighs {x} kg", "How much heavier is {big} than {small}?", "How many kg lighter is {small}?"),
        ("is {x} years old", "How much older is {big} than {small}?", "How many years younger is {small}?"),
        ("lives {x} km from the city", "How much farther away does {big} live?", "By how many km is {small} closer?"),
        ("scored {x} points", "How many more points did {big} score?", "By how many points did {big} beat {small}?"),
        ("has {x} dollars", "How much more money does {big} have?", "How many dollars less does {small} have?"),
        ("read {x} pages", "How many more pages did {big} read?", "How many fewer pages did {small} read?")]


def compare(rng, a, b):
    """Two amounts and a question for their difference, the smaller one named first half of the time."""
    big, small = rng.sample(NAMES, 2)
    t = rng.choice(THINGS)[0]
    facts_big_first = rng.random() < 0.5
    if rng.random() < 0.5:
        st, q1, q2 = rng.choice(ATTR)
        fb, fs = f"{big} {st.format(x=a)}.", f"{small} {st.format(x=b)}."
        q = rng.choice([q1, q2, "What is the difference between the two?", "What is the gap between them?"]).format(big=big, small=small)
    else:
        h = rng.choice(["has", "owns", "keeps", "collected", "made", "found", "picked"])
        fb, fs = f"{big} {h} {a} {t}.", f"{small} {h} {b} {t}."
        q = rng.choice([f"How many more {t} does {big} have than {small}?", f"How many fewer {t} does {small} have than {big}?",
                        f"How many more {t} does {big} have?", f"How many fewer {t} does {small} have?",
                        f"What is the difference between their {t}?", f"By how many {t} is {big} ahead?",
                        f"How many {t} does {small} need to catch up?", f"How many {t} is {small} short of {big}?"])
    facts = [fb, fs] if facts_big_first else [fs, fb]
    if rng.random() < 0.3:
        facts = [f"{facts[0].rstrip('.')}, and {facts[1][0].lower() + facts[1][1:] if facts[1].split(' ')[0] not in NAMES else facts[1]}"]
    return facts, q, False, "difference"


def combine(rng, a, b):
    """Two parts and a question for the whole."""
    n, m = rng.sample(NAMES, 2)
    t, c = rng.choice(THINGS)
    form = rng.randrange(4)
    if form == 0:
        h = rng.choice(["has", "owns", "found", "brought", "made", "collected"])
        facts = rng.choice([[f"{n} {h} {a} {t}.", f"{m} {h} {b} {t}."], [f"{n} {h} {a} {t} and {m} {h} {b}."]])
        q = rng.choice([f"How many {t} do they have together?", f"How many {t} is that in all?", f"How many {t} is that combined?",
                        f"What is the total number of {t}?", f"How many {t} do {n} and {m} have between them?",
                        f"How many {t} are there altogether?"])
    elif form == 1:
        facts = [f"One {c[:-1] if not c.endswith('es') else c[:-2]} has {a} {t} and another has {b} {t}."]
        q = rng.choice([f"How many {t} are in both?", f"How many {t} are there in total?", f"How many {t} is that in all?"])
    elif form == 2:
        p = rng.choice([("the first half", "the second half", "points"), ("the morning", "the afternoon", t),
                        ("the first week", "the second week", t), ("the first round", "the second round", "points")])
        facts = [f"In {p[0]} {n} got {a} {p[2]}, and in {p[1]} {n} got {b} {p[2]}."]
        q = rng.choice([f"How many {p[2]} did {n} get in all?", f"How many {p[2]} is that altogether?",
                        f"What was {n}'s total?"])
    else:
        x, y = rng.sample(["red", "blue", "green", "yellow", "big", "small", "old", "new"], 2)
        facts = [f"There are {a} {x} {t} and {b} {y} {t}."]
        q = rng.choice([f"How many {t} are there in all?", f"How many {t} is that altogether?", f"How many {t} in total?"])
    return facts, q, True, "total"


def groups(rng, a, b):
    """a groups of b: containers, rows, people with b each, rates, prices, 'times as many'."""
    n, m = rng.sample(NAMES, 2)
    t, c = rng.choice(THINGS)
    cur = rng.choice(CURRENCY)
    form = rng.randrange(7)
    if form == 5 and a > 12:  # "times as many" with a small factor only
        form = 0
    if form == 0:
        facts = rng.choice([[f"{n} has {a} {c}.", f"Every one of them has {b} {t} in it."],
                            [f"{n} fills {a} {c} with {b} {t} each."], [f"There are {b} {t} in each of {a} {c}."]])
        q = rng.choice([f"How many {t} are there in all?", f"How many {t} is that?", f"How many {t} does {n} have?"])
    elif form == 1:
        facts = rng.choice([[f"The {t} are set out in {a} rows of {b}."], [f"There are {a} rows with {b} {t} in each row."],
                            [f"{n} lines up {a} rows of {t}, {b} in every row."]])
        q = rng.choice([f"How many {t} are there?", f"How many {t} are in the rows?", f"How many {t} is that in total?"])
    elif form == 2:
        p = rng.choice(PEOPLE)
        facts = rng.choice([[f"{a} {p} each get {b} {t}."], [f"There are {a} {p} and every one has {b} {t}."],
                            [f"{a} {p} bring {b} {t} each."]])
        q = rng.choice([f"How many {t} do the {p} have in all?", f"How many {t} is that?", f"How many {t} altogether?"])
    elif form == 3:
        per = rng.choice([("a day", "days"), ("per day", "days"), ("an hour", "hours"), ("a week", "weeks"), ("per week", "weeks")])
        facts = [f"{n} makes {b} {t} {per[0]}."]
        q = rng.choice([f"How many {t} does {n} make in {a} {per[1]}?", f"How many {t} is that after {a} {per[1]}?"])
    elif form == 4:
        facts, q = rng.choice([([f"One of the {t} costs {b} {cur}.", f"{n} wants {a} of them."], f"How many {cur} does {n} pay?"),
                               ([f"{n} buys {a} {t} for {b} {cur} each."], "What is the cost?"),
                               ([f"Each of the {t} sells for {b} {cur}."], f"How much do {a} {t} cost?")])
    elif form == 5:
        facts = [f"{m} has {b} {t}.", f"{n} has {a} times as many {t} as {m}."]
        q = rng.choice([f"How many {t} does {n} have?", f"How many {t} are {n}'s?"])
    else:
        facts = rng.choice([[f"{n} makes {a} groups of {t} with {b} in each group."], [f"{n} packs {a} sets of {b} {t}."],
                            [f"{n} has {a} bags, and each bag has {b} {t}."]])
        q = rng.choice([f"How many {t} are there in all?", f"How many {t} does {n} have?", f"How many {t} is that?"])
    return facts, q, False, "each"


PLUS = [gain, gain, combine]
MINUS = [loss, loss, compare]
TIMES = [groups, groups]
