import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { StopStringMatcher } from './stop-string-matcher.js';

/** Feeds `chunks` and returns the released text and the stop string found. */
function run(stops: string[], chunks: string[], includeStop = false) {
  const m = new StopStringMatcher(stops, includeStop);
  let out = '';
  for (const c of chunks) {
    out += m.push(c);
    if (m.stopped !== null) return { out, stopped: m.stopped };
  }
  return { out: out + m.flush(), stopped: null };
}

/**
 * The reference, written independently: scan the text one character at a time (the finest
 * possible streaming) and cut at the first position where some stop string has just been
 * completed; if several end there, the one that starts first.
 */
function oneShot(stops: string[], text: string, includeStop = false) {
  let best: { at: number; stop: string } | null = null;
  for (let end = 1; end <= text.length && best === null; end++) {
    for (const s of stops) {
      if (
        s.length > 0 &&
        text.slice(0, end).endsWith(s) &&
        (best === null || end - s.length < best.at)
      )
        best = { at: end - s.length, stop: s };
    }
  }
  if (!best) return { out: text, stopped: null };
  return { out: text.slice(0, best.at + (includeStop ? best.stop.length : 0)), stopped: best.stop };
}

/** Splits `text` at the given cut points. */
function split(text: string, cuts: number[]): string[] {
  const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
  const out: string[] = [];
  let last = 0;
  for (const p of points) {
    out.push(text.slice(last, p));
    last = p;
  }
  out.push(text.slice(last));
  return out;
}

describe('StopStringMatcher', () => {
  it('cuts before a stop string split across chunks', () => {
    expect(run(['STOP'], ['Hello S', 'T', 'OP more'])).toEqual({ out: 'Hello ', stopped: 'STOP' });
    expect(run(['STOP'], ['Hello S', 'T', 'OP more'], true)).toEqual({
      out: 'Hello STOP',
      stopped: 'STOP',
    });
  });

  it('holds back only a possible stop prefix and releases it when it fails', () => {
    const m = new StopStringMatcher(['world']);
    expect(m.push('hello wor')).toBe('hello ');
    expect(m.push('k')).toBe('work');
    expect(m.push(' wo')).toBe(' ');
    expect(m.flush()).toBe('wo');
  });

  it('prefers the shorter of two stop strings starting at the same place', () => {
    expect(run(['abc', 'ab'], ['xabcd'], true)).toEqual({ out: 'xab', stopped: 'ab' });
  });

  it('passes text straight through without stop strings', () => {
    const m = new StopStringMatcher([]);
    expect(m.push('abc')).toBe('abc');
    expect(m.flush()).toBe('');
  });

  it('stops where the first stop string completes, however the text is chunked', () => {
    // fast-check's counterexample: "b" completes before the longer "ébc" that starts earlier.
    for (const chunks of [['ébc'], ['é', 'bc'], ['éb', 'c'], ['é', 'b', 'c']]) {
      expect(run(['b', 'ébc'], chunks)).toEqual({ out: 'é', stopped: 'b' });
    }
    expect(run(['bc', 'abc'], ['xabc'])).toEqual({ out: 'x', stopped: 'abc' }); // same end: earlier start
  });

  it('matches the one-shot cut for any chunking (property)', () => {
    const alphabet = fc.constantFrom('a', 'b', 'c', ' ', 'é');
    const word = fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((a) => a.join(''));
    fc.assert(
      fc.property(
        fc.array(alphabet, { maxLength: 30 }).map((a) => a.join('')),
        fc.array(word, { minLength: 1, maxLength: 3 }),
        fc.array(fc.nat(), { maxLength: 10 }),
        fc.boolean(),
        (text, stops, cuts, include) => {
          const got = run(stops, split(text, cuts), include);
          const want = oneShot(stops, text, include);
          expect(got.out).toBe(want.out);
          expect(got.stopped === null).toBe(want.stopped === null);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
