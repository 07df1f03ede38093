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

  /**
   * The occurrence that completes first (smallest end), which is where streaming one token at
   * a time would have stopped; among those ending together, the one starting first. This makes
   * the cut independent of how the text arrived in chunks.
   */
  private earliestMatch(): { at: number; stop: string } | null {
    let best: { at: number; stop: string } | null = null;
    for (const stop of this.stops) {
      const at = this.pending.indexOf(stop); // a stop's first occurrence is also its first to end
      if (at < 0) continue;
      const end = at + stop.length;
      const bestEnd = best === null ? Infinity : best.at + best.stop.length;
      if (best === null || end < bestEnd || (end === bestEnd && at < best.at)) best = { at, stop };
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
