"""The digit-level worked reasoning written inside <mm:think>: one small step per line, each a
fact a small model can look up (a one-digit sum, difference or product, plus a carry), with the
partial result written after `->` so that the final number is a copy of the last partial."""


def digits(n):
    return [int(c) for c in str(n)][::-1]  # ones first


def add_lines(a, b):
    da, db = digits(a), digits(b)
    lines, part, carry = [], "", 0
    for i in range(max(len(da), len(db))):
        x, y = (da[i] if i < len(da) else 0), (db[i] if i < len(db) else 0)
        s = x + y + carry
        lhs = f"{x} + {y}" + (f" + {carry}" if carry else "")
        part = str(s % 10) + part
        carry = s // 10
        lines.append(f"{lhs} = {s} -> {part}" + (", carry 1" if carry else ""))
    if carry:
        part = "1" + part
        lines.append(f"carry 1 -> {part}")
    return lines


def sub_lines(a, b):
    assert a >= b
    da, db = digits(a), digits(b)
    lines, part, borrow = [], "", 0
    for i in range(len(da)):
        x, y = da[i], (db[i] if i < len(db) else 0)
        need = x - borrow < y
        r = x + 10 * need - y - borrow
        lhs = f"{x} - {y}" + (f" - {borrow}" if borrow else "")
        part = str(r) + part
        borrow = 1 if need else 0
        # The borrow is decided after both digits are written, so that each step stays local.
        if need:
            lines.append(f"{lhs} is too small, 1{lhs} = {r} -> {part}, borrow 1")
        else:
            lines.append(f"{lhs} = {r} -> {part}")
    return lines


def mul1_lines(a, d):
    """a times one digit d: one line per digit of a, ending in the partial product."""
    da = digits(a)
    steps, part, carry = [], "", 0
    for i, x in enumerate(da):
        p = x * d
        s = p + carry
        txt = f"{x} * {d} = {p}" + (f", {p} + {carry} = {s}" if carry else "")
        last = i == len(da) - 1
        carry = s // 10
        part = (str(s) if last else str(s % 10)) + part
        steps.append(f"{txt} -> {part}" + (f", carry {carry}" if carry and not last else ""))
    return steps, int(part)


def mul_lines(a, b):
    """a * b with b of one or two digits: partial products, then their column sum."""
    if b > a and a < 100:
        a, b = b, a
        lines = [f"{b} * {a} = {a} * {b}"]
    else:
        lines = []
    db = digits(b)
    partials = []
    for k, d in enumerate(db):
        if d == 0:
            continue
        steps, p = mul1_lines(a, d)
        lines.append(f"{a} * {d}:")
        lines += steps
        if k:
            lines.append(f"{a} * {d}0 = {p}0")
            p *= 10
        partials.append(p)
    if not partials:
        partials = [0]
        lines.append(f"{a} * 0 = 0")
    total = partials[0]
    for p in partials[1:]:
        lines.append(f"{total} + {p}:")
        lines += add_lines(total, p)
        total += p
    return lines


OPS = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b}


def step_lines(a, op, b):
    """The worked lines of one binary step, header and result line included."""
    body = add_lines(a, b) if op == "+" else sub_lines(a, b) if op == "-" else mul_lines(a, b)
    r = OPS[op](a, b)
    return [f"{a} {op} {b}:"] + body + [f"{a} {op} {b} = {r}"], r


def compare_line(a, b, smaller_first):
    """Before a subtraction, its two operands, then the bigger one (`compare 46, 48: 48 is
    bigger`), so that the header copies the bigger number first by a decision taken with both
    numbers in view. Run 6 wrote them in the text's order, where the bigger came first 80% of
    the time: the model learnt to copy the first ("compare 46, 48: 46 is bigger", 3 of 13 on
    "paid 46 ... from a wallet with 48"). Run 7 puts the smaller first half of the time, so only
    comparing the two numbers lowers the loss."""
    x, y = (min(a, b), max(a, b)) if smaller_first else (max(a, b), min(a, b))
    return f"compare {x}, {y}: {max(a, b)} is bigger"


def worked(steps, numbers=None, rng=None, keys=None, spans=None):
    """steps: [(a, op, b)] or [(a, op, b, cue)] where a or b may be the string 'prev' for the last
    result. With numbers (the problem's numbers in the order the text gives them), the reasoning
    opens with the extraction line `numbers: 45, 29`, and each step with a cue carries the line
    `more, so +` (CUES) before its header: the operation is read from the problem as one of a few
    meaning words first, then the digits are worked; with rng, a subtraction also gets
    compare_line first. With keys (run 9, op_words.keys_for: per step, the question's phrase that
    decides its operation, or None), the cue line starts with that phrase copied:
    `lose: left, so -`. With spans (run 10, spans.span_lines: each number with its words, then
    the asking clause), those lines follow the extraction line.
    Returns (reasoning text, final result)."""
    lines, prev = ([f"numbers: {', '.join(str(n) for n in numbers)}"] if numbers is not None else []), None
    lines += spans or []
    for i, (a, op, b, *cue) in enumerate(steps):
        a = prev if a == "prev" else a
        b = prev if b == "prev" else b
        if cue:
            assert CUES[cue[0]] == op, (cue, op)
            key = keys[i] if keys else None
            lines.append(f"{key}: {cue[0]}, so {op}" if key else f"{cue[0]}, so {op}")
        if op == "-" and rng is not None:
            lines.append(compare_line(a, b, rng.random() < 0.5))
        ls, prev = step_lines(a, op, b)
        lines += ls
    return "\n".join(lines), prev


# The meaning words of the cue line and the operation each one names.
CUES = {"more": "+", "total": "+", "plus": "+", "left": "-", "difference": "-", "minus": "-",
        "each": "*", "times": "*"}
