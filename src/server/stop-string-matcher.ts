/**
 * An Aho–Corasick automaton over the stop strings. A state is the longest suffix of the text
 * read so far that is a prefix of some stop string, so its depth is exactly the text that must
 * be held back; `out` names the longest stop string ending at that state, if any.
 */
class StopAutomaton {
  private readonly next: Map<string, number>[] = [new Map()];
  private readonly fail: number[] = [0];
  readonly depth: number[] = [0];
  /** Index of the longest stop string that ends at this state (-1: none). */
  private readonly out: number[] = [-1];

  constructor(readonly stops: readonly string[]) {
    stops.forEach((stop, i) => {
      let s = 0;
      for (const ch of stop) s = this.child(s, ch);
      if (this.out[s] === -1) this.out[s] = i;
    });
    this.link();
  }

  private child(s: number, ch: string): number {
    let t = this.next[s]!.get(ch);
    if (t === undefined) {
      t = this.next.length;
      this.next.push(new Map());
      this.fail.push(0);
      this.depth.push(this.depth[s]! + ch.length);
      this.out.push(-1);
      this.next[s]!.set(ch, t);
    }
    return t;
  }

  /** Breadth-first failure links; a state without its own stop inherits its suffix's. */
  private link(): void {
    const queue = [...this.next[0]!.values()];
    for (let q = 0; q < queue.length; q++) {
      const s = queue[q]!;
      for (const [ch, t] of this.next[s]!) {
        this.fail[t] = this.step(this.fail[s]!, ch);
        if (this.out[t] === -1) this.out[t] = this.out[this.fail[t]!]!;
        queue.push(t);
      }
    }
  }

  /** The state after reading `ch` in state `s` (amortised O(1) over a stream). */
  step(s: number, ch: string): number {
    for (;;) {
      const t = this.next[s]!.get(ch);
      if (t !== undefined) return t;
      if (s === 0) return 0;
      s = this.fail[s]!;
    }
  }

  /** The stop string that ends at state `s` (the longest, i.e. the earliest-starting), or null. */
  matchAt(s: number): string | null {
    const i = this.out[s]!;
    return i < 0 ? null : this.stops[i]!;
  }
}

/**
 * Finds stop strings in streamed text, across chunk boundaries. Text that could still be the
 * start of a stop string is held back until the next chunk decides; so a stop string can never
 * begin inside text already released, and the released text never contains one. The cut is
 * where the first stop string completes (among those completing together, the one starting
 * first), which is independent of how the text arrived in chunks. Each character is read once,
 * so the cost is linear in the output whatever the stop strings are.
 */
export class StopStringMatcher {
  private readonly automaton: StopAutomaton | null;
  private state = 0;
  private pending = '';
  private matched: string | null = null;

  constructor(
    stops: readonly string[],
    private readonly includeStop = false,
  ) {
    this.automaton = stops.length > 0 ? new StopAutomaton(stops) : null;
  }

  /** The stop string found, or null while none has been. */
  get stopped(): string | null {
    return this.matched;
  }

  /** Appends text; returns the text that is now safe to release. */
  push(text: string): string {
    if (this.matched !== null) return '';
    const a = this.automaton;
    if (a === null) return text;
    const held = this.pending.length;
    const all = this.pending + text;
    let pos = held;
    for (const ch of text) {
      pos += ch.length;
      this.state = a.step(this.state, ch);
      const hit = a.matchAt(this.state);
      if (hit !== null) {
        this.matched = hit;
        this.pending = '';
        return all.slice(0, pos - (this.includeStop ? 0 : hit.length));
      }
    }
    const keep = a.depth[this.state]!;
    this.pending = all.slice(all.length - keep);
    return all.slice(0, all.length - keep);
  }

  /** Releases held-back text at the end of generation (no stop string completed). */
  flush(): string {
    const out = this.pending;
    this.pending = '';
    return out;
  }
}
