"""The key line of run 9's worked reasoning: before each step's cue the think copies, word for
word, the phrase of the question that decides the operation, then names what it means
(`lose: left, so -`, `how many more: difference, so -`, `each: each, so *`). Runs 5-8 chose the
cue word straight from the whole question, and an unseen frame around a known verb ("You lose
50 ... remain?") got `more`: the decision was keyed on surface words around it. Copying the
phrase first makes the cue depend on one short span the model has just written, and the
classes below are taught over many verbs and frames (arith_sem.py), so that a phrase is read by
its meaning class: gains, losses, comparisons, groups.

key_phrase(text, op, after) finds the phrase: the first pattern of the operation's list (ordered
from the most to the least specific) that occurs in the text, at its first occurrence past
`after` if there is one. Patterns are regexes matched case-insensitively on word boundaries; the
phrase is copied as the text spells it."""
import re

_V = {  # verb stems in all the forms the generators write, as regex alternatives
    "gain": r"buys?|bought|buying|finds?|found|gets?|got|receives?|received|wins?|won|collects?|collected"
            r"|picks? up|picked up|earns?|earned|adds?|added|gathers?|gathered|makes?|made|borrows?|borrowed"
            r"|orders?|ordered|puts? in|brings? home|brought home|(?:is|was|were|are) given|gains?|gained"
            r"|packs? in|packed in|grabs?|grabbed|catch(?:es)?|caught|saves? up|buys? up|scoops? up|wins? back"
            r"|receiving|getting|finding|earning|collecting|(?:is|are|was|were) handed|is sent|was sent"
            r"|picks?|picked|scooped up|scoops? up|comes? in|came in|arrives?|arrived|joins?|joined|rises?|rose|goes up|went up"
            r"|grows?|grew more|increases?|increased|doubles? up|tops? up|topped up|arrive|come in|(?:are|were )?delivered"
            r"|(?:are|were )?(?:added|found|bought|collected)|to you",
    "loss": r"loses?|lost|losing|gives? away|gave away|given away|eats?|ate|eaten|sells?|sold|uses? up|used up"
            r"|uses?|used|breaks?|broke|broken|drops?|dropped|throws? away|threw away|thrown away|throws? out"
            r"|threw out|donates?|donated|lends? out|lent out|removes?|removed|pulls? out|pulled out|misplaces?"
            r"|misplaced|trades? away|traded away|returns?|returned|mails?|mailed|gets? rid of|got rid of|spills?"
            r"|spilled|gives? back|gave back|given back|hides?|hid|hidden|sends? off|sent off|spends?|spent"
            r"|picked out|pops?|popped|burns?|burned|loses? track of|leaves? behind|left behind"
            r"|forgets?|forgot|hands? back|handed back|gives? up|gave up|wears? out|wore out|crack(?:s|ed)?"
            r"|melts?|melted|sinks?|sank|falls? out|fell out|rolls? away|rolled away|runs? out of|ran out of"
            r"|puts? away|put away|packs? away|packed away|sends? back|sent back|takes? off|went missing"
            r"|goes missing|go missing|get lost|got lost|get broken|got broken|roll away|fall out|drove off with|gets? stolen|got stolen|are stolen|were stolen|stolen"
            r"|feeds? \S+ to|fed \S+ to|shares? out|shared out|deletes?|deleted|cancels?|cancelled"
            r"|gives?|gave|sends?|sent|passes|passed|hands|handed|tosses|tossed|offers?|offered|lends?|lent"
            r"|slips?|slipped|delivers?|delivered|throws?|threw|leaves|out of",
}

KEYS = {
    "+": [r"count \S+ on", r"sum", r"plus", r"\+", r"add up|added together|add", r"increase", r"combine",
          _V["gain"], r"another", r"extra", r"more", r"to (?-i:[A-Z])\w+", r"the two of them|over the two \w+|two days", r"combined", r"between them", r"altogether", r"in all",
          r"in total", r"together", r"both", r"total", r"and"],
    "-": [r"how many more|how many fewer|how much more|how much less|how many \S+ more|how many \S+ fewer"
          r"|how much (?:taller|heavier|older|longer|bigger|wider|deeper|higher|faster|further|farther|younger"
          r"|lighter|cheaper|smaller|narrower|slower|lower)|how many \S+ (?:taller|heavier|older|longer|younger"
          r"|higher|lighter|cheaper)|by how many|by how much|how far",
          r"difference|gap|ahead|catch up|short of|fewer|more than|less than|still missing|needs?|go up|went up"
          r"|apart|exceed",
          r"minus|deduct|subtracted|reduced|reduce|decrease|lower|count back|less|-|remove",
          _V["loss"], r"from (?-i:[A-Z])\w+", r"left over|left|remaining|remains?|still|stay(?:ed|s)?|survive|not|keep|rest|now"],
    "*": [r"times as many|times as much", r"times|multipl\w*|product|lots of|sets of|groups? of|x|\*",
          r"each|every|per|a day|an hour|a week|a box|a bag|a row|rows? of|stacks? of|piles? of|a piece"
          r"|for all|all", r"one of the|\w+ of(?= \d)"],
}


def _longest_first(pattern):
    """The pattern's top-level alternatives, longest first, so that "wins back" is copied whole
    rather than as "wins"."""
    parts, depth, cur = [], 0, ""
    for ch in pattern:
        depth += (ch == "(") - (ch == ")")
        if ch == "|" and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return "|".join(sorted(parts + [cur], key=len, reverse=True))


_COMPILED = {op: [re.compile(rf"(?<![\w-])(?:{_longest_first(p)})(?![\w-])" if p not in (r"\+", r"-", r"\*") else p, re.I)
                  for p in pats] for op, pats in KEYS.items()}


def key_phrase(text, op, after=0):
    """(phrase as written, the offset where the next key may start) of the first pattern of
    `op` that the text holds at or past `after` (else anywhere); None when none occurs."""
    for start in (after, 0):
        for rx in _COMPILED[op]:
            m = next((h for h in rx.finditer(text) if h.start() >= start), None)
            if m:
                stop = re.compile(r"[.?!,;]\s|\sand\s|\sbut\s").search(text, m.end())
                return m.group(0), stop.end() if stop else m.end()
    return None


def keys_for(text, steps):
    """The key phrase of each step with a cue, in the text's order (a later step's key is
    looked for past the clause of the previous key); None for a step without a cue."""
    out, after = [], 0
    for a, op, b, *cue in steps:
        k = key_phrase(text, op, after) if cue else None
        if k:
            after = k[1]
        out.append(k[0] if k else None)
    return out
