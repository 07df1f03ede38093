import { describe, expect, it } from 'vitest';
import {
  computeBenchMetrics,
  peakConcurrentRequests,
  peakOutputTokensPerS,
  type TimedRequest,
} from './bench-metrics.js';
import type { RequestTiming } from './request-timing.js';

function timing(
  ttft: number,
  itl: number[],
  outputTokens: number,
  promptTokens = 10,
): RequestTiming {
  const e2e = ttft + itl.reduce((a, b) => a + b, 0);
  return { ttft, itl, e2e, outputTokens, promptTokens, usageReported: true };
}

describe('computeBenchMetrics', () => {
  it('derives throughputs, TPOT and concurrency from known timings', () => {
    const ok: TimedRequest[] = [
      { startS: 100, timing: timing(0.1, [0.02, 0.02, 0.02], 4) },
      { startS: 100.5, timing: timing(0.3, [0.04], 2, 30) },
    ];
    const m = computeBenchMetrics(ok, ['HTTP 500: boom'], 100, 2);
    expect(m.completed).toBe(2);
    expect(m.failed).toBe(1);
    expect(m.errors).toEqual(['HTTP 500: boom']);
    expect(m.totalInputTokens).toBe(40);
    expect(m.totalOutputTokens).toBe(6);
    expect(m.requestThroughput).toBe(1);
    expect(m.outputThroughput).toBe(3);
    expect(m.totalThroughput).toBe(23);
    // TPOT: (0.16-0.1)/3 = 20 ms and (0.34-0.3)/1 = 40 ms.
    expect(m.tpot.mean).toBeCloseTo(30, 9);
    expect(m.ttft.median).toBeCloseTo(200, 9);
    // ITL pools every gap of every request.
    expect(m.itl.mean).toBeCloseTo(25, 9);
    expect(m.concurrency).toBeCloseTo((0.16 + 0.34) / 2, 12);
    expect(m.maxConcurrentRequests).toBe(1);
  });

  it('counts tokens per SSE event and a lower bound on one-token events', () => {
    const perToken = computeBenchMetrics(
      [{ startS: 0, timing: timing(0.1, [0.01, 0.01], 3) }],
      [],
      0,
      1,
    );
    expect(perToken.tokensPerEvent).toBe(1);
    expect(perToken.oneTokenEventsMin).toBe(1);
    // 10 tokens in 4 events (1 + 3 gaps): 2.5 per event, at least 2·4 − 10 < 0 -> 0 singles.
    const burst = computeBenchMetrics(
      [{ startS: 0, timing: timing(0.1, [0.2, 0.2, 0.2], 10) }],
      [],
      0,
      1,
    );
    expect(burst.tokensPerEvent).toBe(2.5);
    expect(burst.oneTokenEventsMin).toBe(0);
    // 11 tokens in 10 events: at least 9 carry one token.
    const one = computeBenchMetrics(
      [{ startS: 0, timing: timing(0.1, Array(9).fill(0.01), 11) }],
      [],
      0,
      1,
    );
    expect(one.oneTokenEventsMin).toBeCloseTo(0.9, 12);
  });

  it('excludes single-token requests from TPOT', () => {
    const m = computeBenchMetrics([{ startS: 0, timing: timing(0.05, [], 1) }], [], 0, 1);
    expect(m.tpot.mean).toBe(0);
    expect(m.ttft.mean).toBeCloseTo(50, 9);
  });
});

describe('peaks', () => {
  it('buckets reconstructed chunk times per second, spreading multi-token chunks', () => {
    const ok: TimedRequest[] = [
      { startS: 0, timing: timing(0.5, [0.2, 0.2, 0.2], 8) }, // chunks at .5 .7 .9 1.1, 2 tok each
      { startS: 0.2, timing: timing(0.6, [0.1], 2) }, // chunks at .8 .9
    ];
    expect(peakOutputTokensPerS(ok, 0)).toBe(8);
  });

  it('sweeps exact overlaps', () => {
    const ok: TimedRequest[] = [
      { startS: 0, timing: timing(1, [], 1) },
      { startS: 0.5, timing: timing(1, [], 1) },
      { startS: 1, timing: timing(1, [], 1) },
      { startS: 1.2, timing: timing(0.1, [], 1) },
    ];
    expect(peakConcurrentRequests(ok)).toBe(3);
  });
});
