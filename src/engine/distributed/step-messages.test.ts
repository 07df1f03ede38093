import { describe, expect, it } from 'vitest';
import {
  decodeStatus,
  decodeStep,
  encodeStatus,
  encodeStep,
  type StepMessage,
} from './step-messages.js';

describe('typed step messages', () => {
  it('round-trips every kind, a two-sequence ForwardBatch included', () => {
    const messages: StepMessage[] = [
      {
        kind: 'init',
        spec: {
          modelDir: '/m',
          backend: 'cpu',
          comm: 'cpu',
          tp: 4,
          ep: true,
          sp: false,
          allReduceFusion: 'dense',
          fuseSharedExperts: false,
        },
      },
      { kind: 'alloc-kv', cacheId: 3, numPages: 1000, pageSize: 128 },
      {
        kind: 'forward',
        cacheId: 3,
        stepId: 7,
        batch: {
          tokenIds: Int32Array.from([5, -1, 2 ** 31 - 1]),
          seqs: [
            { numCached: 0, numNew: 2, pageTable: Int32Array.from([4]), allLogits: true },
            { numCached: 130, numNew: 1, pageTable: Int32Array.from([9, 2]) },
          ],
          pageSize: 128,
          logitsFor: 'all',
          captureRoutedExperts: true,
        },
      },
      { kind: 'free-kv', cacheId: 3 },
      { kind: 'shutdown' },
    ];
    for (const m of messages) expect(decodeStep(encodeStep(m))).toEqual(m);
    expect(() => decodeStep(encodeStep(messages[2]!).subarray(0, 20))).toThrow(/truncated/);
    expect(() => decodeStep(Uint8Array.from([99]))).toThrow(/unknown tag 99/);
    const failed = { kind: 'failed', rank: 2, message: 'boom', secondary: false } as const;
    expect(decodeStatus(encodeStatus(failed))).toEqual(failed);
  });
});
