"""Run 10's think opening (docs/tiny-model.md, "Run 10"): after the extraction line, each number
with the words around it copied from the question, then the question's asking clause, so that the
cue line is chosen from a few short copied spans rather than from the whole unseen sentence:

    numbers: 85, 50
    85: You have 85 lemons
    50: You lose 50
    ask: How many lemons remain
    left, so -

The spans are defined by position only (the number's sentence, at most BEFORE words before it
and AFTER words after it; the sentence that holds '?', else the last one, after its last comma
when it holds a digit, at most ASK words), so the model can execute the copy on any text. Run 9's
key line asked it to copy "the phrase that decides", which presumes the decision."""
import re

BEFORE, AFTER, ASK = 4, 3, 9
_SENT = re.compile(r"[^.?!]+[.?!]?")
_EDGE = ".,;:?!\"'()"


def _sentences(q):
    return [s.strip() for s in _SENT.findall(q) if s.strip()]


def _words(s):
    return s.split()


def _clean(ws):
    return " ".join(ws).strip(_EDGE + " ")


def number_spans(q, numbers):
    """One span per extracted number, in order: its first unused occurrence in the text."""
    sents = [_words(s) for s in _sentences(q)]
    used = set()
    out = []
    for n in numbers:
        found = None
        for si, ws in enumerate(sents):
            for wi, w in enumerate(ws):
                if (si, wi) not in used and re.fullmatch(r"\d+", w.strip(_EDGE).removesuffix("-page")) \
                        and int(w.strip(_EDGE).removesuffix("-page")) == n:
                    found = (si, wi)
                    break
            if found:
                break
        if found is None:
            out.append(str(n))
            continue
        used.add(found)
        si, wi = found
        ws = sents[si]
        out.append(_clean(ws[max(0, wi - BEFORE): wi + AFTER + 1]))
    return out


def ask_span(q):
    sents = _sentences(q)
    s = next((s for s in sents if s.endswith("?")), sents[-1] if sents else q)
    if re.search(r"\d", s) and ", " in s:
        s = s.rsplit(", ", 1)[1]
    return _clean(_words(s)[:ASK])


def span_lines(q, numbers):
    return [f"{n}: {s}" for n, s in zip(numbers, number_spans(q, numbers))] + [f"ask: {ask_span(q)}"]
