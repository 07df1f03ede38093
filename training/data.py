"""Training data: the generator's train.jsonl.gz, a byte-level BPE tokenizer, padded batches."""
import gzip
import json
import random

import torch

# The M3 control tokens (src/datagen/m3-format.ts SPECIAL_TOKENS), ids 0..5. The last three stay in
# decoded text (special = false) so that the reasoning and tool-call parsers see them.
SPECIALS = ["]~!b[", "]~b]", "[e~[", "<mm:think>", "</mm:think>", "]<]minimax[>["]
KEEP_IN_TEXT = {"<mm:think>", "</mm:think>", "]<]minimax[>["}
EOT = "[e~["


def read_samples(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _plain_pieces(texts):
    """Texts split at the control tokens, so that BPE merges never straddle them."""
    for t in texts:
        for s in SPECIALS:
            t = t.replace(s, "\n")
        yield t


def train_tokenizer(texts, vocab_size):
    """A byte-level BPE (HF tokenizers) with the M3 control tokens as added tokens. Digits are
    split one by one, so every number is spelled the same way for the arithmetic."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Digits(individual_digits=True),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        min_frequency=2,
        show_progress=False,
    )
    tok.train_from_iterator(_plain_pieces(texts), trainer)
    spec = json.loads(tok.to_str())
    for added in spec["added_tokens"]:
        added["special"] = added["content"] not in KEEP_IN_TEXT
    return Tokenizer.from_str(json.dumps(spec))


class ByteTokenizer:
    """Dry-run stand-in where HF tokenizers is missing: control tokens 0..5, then raw bytes."""

    def __init__(self):
        self.size = len(SPECIALS) + 256

    def get_vocab_size(self):
        return self.size

    def token_to_id(self, s):
        return SPECIALS.index(s)

    def _encode(self, text):
        ids, i = [], 0
        while i < len(text):
            hit = next((s for s in SPECIALS if text.startswith(s, i)), None)
            if hit:
                ids.append(SPECIALS.index(hit))
                i += len(hit)
            else:
                ids.extend(len(SPECIALS) + b for b in text[i].encode())
                i += 1
        return ids

    def encode_batch(self, texts):
        return [type("E", (), {"ids": self._encode(t)}) for t in texts]

    def decode(self, ids, skip_special_tokens=False):
        out, buf = [], bytearray()
        for i in ids:
            if i < len(SPECIALS):
                out.append(buf.decode(errors="replace"))
                buf = bytearray()
                out.append(SPECIALS[i])
            else:
                buf.append(i - len(SPECIALS))
        return "".join(out) + buf.decode(errors="replace")


def load_tokenizer(path, dry_run):
    """The bundled tokenizer, or the byte stand-in on a dry run without HF tokenizers."""
    try:
        from tokenizers import Tokenizer
    except ImportError:
        assert dry_run, "HF tokenizers is needed outside --dry-run"
        return ByteTokenizer()
    return Tokenizer.from_file(path)


def encode(tok, samples, max_len):
    """[(ids, first completion index, kind)] for samples that fit in max_len tokens."""
    prompts = [e.ids for e in tok.encode_batch([s["prompt"] for s in samples])]
    comps = [e.ids for e in tok.encode_batch([s["completion"] for s in samples])]
    out = []
    for p, c, s in zip(prompts, comps, samples):
        if len(p) + len(c) <= max_len:
            out.append((p + c, len(p), s["kind"]))
    return out


def _rounded(n, step=32):
    return -(-n // step) * step


def make_batches(encoded, tokens_per_batch, pad_id, seed):
    """Length-sorted, padded batches: (ids [B, L] int64, loss mask [B, L] bool on targets).
    L is rounded up to a multiple of 32, so that a few dozen batch shapes recur. With the exact
    longest length every batch of the first epoch has a shape of its own, and the step time
    fell as shapes began to repeat (run 4: 0.2 s a step until step 1,100, its first epoch's end,
    then 0.09 s; run 6, alone on the machine: 0.34 s for the first 200 steps, 0.16 s by 1,000)."""
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i][0]))
    batches, cur = [], []
    for i in order:
        longest = _rounded(len(encoded[i][0]))
        if cur and (len(cur) + 1) * longest > tokens_per_batch:
            batches.append(cur)
            cur = []
        cur.append(i)
    if cur:
        batches.append(cur)
    random.Random(seed).shuffle(batches)
    out = []
    for b in batches:
        L = _rounded(max(len(encoded[i][0]) for i in b))
        ids = torch.full((len(b), L), pad_id, dtype=torch.int64)
        mask = torch.zeros((len(b), L), dtype=torch.bool)
        for r, i in enumerate(b):
            seq, start, _ = encoded[i]
            ids[r, : len(seq)] = torch.tensor(seq)
            mask[r, start : len(seq)] = True  # positions whose token is a completion token
        out.append((ids, mask))
    return out
