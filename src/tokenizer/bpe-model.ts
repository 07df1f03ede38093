/** Options of the tokenizer.json `BPE` model that byte-level vocabularies use. */
export interface BpeModelOptions {
  /** Llama-3 style: a word found whole in the vocabulary is emitted without merging. */
  ignoreMerges?: boolean;
  /** Id emitted for a character missing from the vocabulary; dropped when undefined. */
  unkId?: number;
}

// Merge table key: both ids packed into one float-safe integer (ids < 2^26).
const ID_SPACE = 2 ** 26;

/**
 * The BPE merge loop over one pre-tokenized word. Merges are applied lowest rank first
 * (leftmost on ties) with a binary heap over a linked list of symbols, so a word of n
 * symbols costs O(n log n) instead of rescanning all pairs after every merge.
 */
export class BpeModel {
  private readonly merges = new Map<number, { rank: number; id: number }>();

  constructor(
    private readonly vocab: ReadonlyMap<string, number>,
    merges: readonly (readonly [string, string])[],
    private readonly opts: BpeModelOptions = {},
  ) {
    merges.forEach(([a, b], rank) => {
      const left = vocab.get(a);
      const right = vocab.get(b);
      const id = vocab.get(a + b);
      if (left === undefined || right === undefined || id === undefined) {
        throw new Error(`BPE merge "${a} ${b}" uses tokens missing from the vocabulary`);
      }
      const key = left * ID_SPACE + right;
      if (!this.merges.has(key)) this.merges.set(key, { rank, id });
    });
  }

  /** Token ids of one word spelled in byte-level characters. */
  encodeWord(word: string): number[] {
    return this.merge(word);
  }

  private merge(word: string): number[] {
    if (this.opts.ignoreMerges) {
      const whole = this.vocab.get(word);
      if (whole !== undefined) return [whole];
    }
    const syms = this.initialSymbols(word);
    const n = syms.length;
    if (n < 2) return syms;
    const next = Int32Array.from({ length: n }, (_, i) => (i + 1 < n ? i + 1 : -1));
    const prev = Int32Array.from({ length: n }, (_, i) => i - 1);
    const heap = new PairHeap();
    for (let i = 0; i + 1 < n; i++) this.pushPair(heap, syms, i, i + 1);
    for (let top = heap.pop(); top; top = heap.pop()) {
      const { pos, left, right, id } = top;
      const nxt = next[pos]!;
      // Stale entries: a side was merged away or changed since the pair was queued.
      if (syms[pos] !== left || nxt < 0 || syms[nxt] !== right) continue;
      syms[pos] = id;
      syms[nxt] = -1;
      const after = next[nxt]!;
      next[pos] = after;
      if (after >= 0) prev[after] = pos;
      if (prev[pos]! >= 0) this.pushPair(heap, syms, prev[pos]!, pos);
      if (after >= 0) this.pushPair(heap, syms, pos, after);
    }
    return syms.filter((s) => s >= 0);
  }

  private initialSymbols(word: string): number[] {
    const syms: number[] = [];
    for (const ch of word) {
      const id = this.vocab.get(ch) ?? this.opts.unkId;
      if (id !== undefined) syms.push(id);
    }
    return syms;
  }

  private pushPair(heap: PairHeap, syms: number[], pos: number, nextPos: number): void {
    const left = syms[pos]!;
    const right = syms[nextPos]!;
    const merge = this.merges.get(left * ID_SPACE + right);
    if (merge) heap.push({ rank: merge.rank, pos, left, right, id: merge.id });
  }
}

interface Pair {
  rank: number;
  pos: number;
  left: number;
  right: number;
  id: number;
}

/** Min-heap of candidate merges ordered by (rank, position). */
class PairHeap {
  private readonly items: Pair[] = [];

  push(p: Pair): void {
    const a = this.items;
    a.push(p);
    let i = a.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!less(a[i]!, a[parent]!)) break;
      [a[i], a[parent]] = [a[parent]!, a[i]!];
      i = parent;
    }
  }

  pop(): Pair | undefined {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length === 0 || last === undefined) return top;
    a[0] = last;
    for (let i = 0; ;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < a.length && less(a[l]!, a[m]!)) m = l;
      if (r < a.length && less(a[r]!, a[m]!)) m = r;
      if (m === i) break;
      [a[i], a[m]] = [a[m]!, a[i]!];
      i = m;
    }
    return top;
  }
}

function less(x: Pair, y: Pair): boolean {
  return x.rank < y.rank || (x.rank === y.rank && x.pos < y.pos);
}
