import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runHttpSoak } from '../../src/tools/server-soak.js';
import { EOS_ID, ids } from './fake-text.js';
import { startTestServer, type TestServer } from './harness.js';

let s: TestServer;
beforeAll(async () => {
  s = await startTestServer({
    engine: {
      delayMs: 1,
      maxModelLen: 512,
      respond: (req) => ({
        tokens: [...ids('w1 w2 w3 w4 '.repeat(8)), EOS_ID],
        delayMs: req.promptIds.length % 3,
      }),
    },
    options: { processMetrics: true, maxConcurrentRequests: 64, stallTimeoutMs: 1000 },
  });
});
afterAll(() => s.close());

describe('HTTP soak', () => {
  it('runs mixed load with aborts and finds the server idle afterwards', async () => {
    const report = await runHttpSoak({
      url: s.url,
      seconds: 3,
      concurrency: 8,
      abortRate: 0.3,
      abuseRate: 0.2,
      maxTokens: 40,
      seed: 1,
      idleTimeoutS: 10,
      rssSlackMiB: null,
    });
    expect(report.failures).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.requests).toBeGreaterThan(20);
    expect(report.cutShort).toBeGreaterThan(0);
    const abusive = Object.keys(report.statusCounts).filter((k) => k.startsWith('abuse:'));
    expect(abusive.length).toBeGreaterThan(3);
    expect(report.statusCounts['200']).toBeGreaterThan(0);
    expect(report.finishCounts['stop']! + report.finishCounts['length']!).toBeGreaterThan(0);
    expect(report.idle).toEqual({
      moeserve_num_requests_running: 0,
      moeserve_num_requests_waiting: 0,
      moeserve_kv_pages_used: 0,
      moeserve_http_requests_in_flight: 0,
    });
    expect(report.rssBaselineMiB).toBeGreaterThan(0);
    expect(s.engine.running).toBe(0);
    expect(s.engine.aborted.length).toBeGreaterThan(0);
  });
});
