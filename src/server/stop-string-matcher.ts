/**
 * Finds stop strings in streamed text, across chunk boundaries. Text that could still be the
 * start of a stop string is held back until the next chunk decides; so a stop string can never
 * begin inside text already released, and the released text never contains one.
 */
export class StopStringMatcher {
  private pending = '';
  private matched: string | null = null;

  constructor(
    private readonly stops: readonly string[],
    private readonly includeStop = false,
  ) {}

  /** The stop string found, or null while none has been. */
  get stopped(): string | null {
    return this.matched;
  }

  /** Appends text; returns the text that is now safe to release. */
  push(text: string): string {
    if (this.matched !== null) return '';
    if (this.stops.length === 0) return text;
    this.pending += text;
    const hit = this.earliestMatch();
    if (hit) {
      this.matched = hit.stop;
      const end = hit.at + (this.includeStop ? hit.stop.length : 0);
      const out = this.pending.slice(0, end);
      this.pending = '';
      return out;
    }
    const keep = this.heldBackLength();
    const out = this.pending.slice(0, this.pending.length - keep);
    this.pending = this.pending.slice(this.pending.length - keep);
    return out;
  }

  /** Releases held-back text at the end of generation (no stop string completed). */
  flush(): string {
    const out = this.pending;
    this.pending = '';
    return out;
  }

  private earliestMatch(): { at: number; stop: string } | null {
    let best: { at: number; stop: string } | null = null;
    for (const stop of this.stops) {
      const at = this.pending.indexOf(stop);
      // On a tie the shorter wins: it is the one a finer chunking would have completed first.
      const better =
        best === null || at < best.at || (at === best.at && stop.length < best.stop.length);
      if (at >= 0 && better) best = { at, stop };
    }
    return best;
  }

  /** Length of the longest suffix of pending that is a proper prefix of some stop string. */
  private heldBackLength(): number {
    let keep = 0;
    for (const stop of this.stops) {
      const max = Math.min(stop.length - 1, this.pending.length);
      for (let k = max; k > keep; k--) {
        if (this.pending.endsWith(stop.slice(0, k))) {
          keep = k;
          break;
        }
      }
    }
    return keep;
  }
}
