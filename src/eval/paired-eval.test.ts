import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { mcnemarExactP } from './mcnemar.js';
import { pairEvals, readEvalItems } from './paired-eval.js';

describe('exact McNemar', () => {
  it('matches known binomial values', () => {
    // TokenSpeed's M3 drafter check: 10 vs 8 discordant items, p ≈ 0.81.
    expect(mcnemarExactP(10, 8)).toBeCloseTo(0.8145, 3);
    expect(mcnemarExactP(0, 6)).toBeCloseTo(2 / 64, 10);
    expect(mcnemarExactP(5, 5)).toBe(1);
    expect(mcnemarExactP(0, 0)).toBe(1);
    expect(mcnemarExactP(30, 60)).toBeLessThan(0.005);
    expect(mcnemarExactP(600, 700)).toBeGreaterThan(0); // large n stays finite
  });
});

describe('paired evals', () => {
  it('joins two stop-rate runs by idx and counts discordant items and finish changes', () => {
    const dir = mkdtempSync(join(tmpdir(), 'paired-'));
    const rows = (xs: [number, boolean, string][]) =>
      xs.map(([idx, correct, f]) => JSON.stringify({ idx, correct, finish_reason: f })).join('\n');
    writeFileSync(
      join(dir, 'a.jsonl'),
      rows([
        [0, true, 'stop'],
        [1, true, 'stop'],
        [2, false, 'stop'],
        [3, false, 'length'],
        [4, true, 'stop'],
      ]),
    );
    writeFileSync(
      join(dir, 'b.jsonl'),
      rows([
        [0, true, 'stop'],
        [1, false, 'stop'],
        [2, true, 'stop'],
        [3, false, 'stop'],
      ]) + '\n{"idx":4,"error":"HTTP 500"}\n',
    );
    const r = pairEvals(
      readEvalItems(join(dir, 'a.jsonl'), 'correct'),
      readEvalItems(join(dir, 'b.jsonl'), 'correct'),
    );
    expect(r).toMatchObject({
      n: 4,
      both: 1,
      onlyA: 1,
      onlyB: 1,
      neither: 1,
      finishDiffers: 1,
      unpaired: 1,
    });
    expect(r.pValue).toBe(1);
  });
});
