import { describe, expect, it } from 'vitest';
import type { ForwardBatch } from '../../backend/forward-batch.js';
import type { ForwardModel } from '../../model/forward-model.js';
import type { KvCache } from '../../model/minimax-m3/kv-cache.js';
import type { ForwardOutput } from '../../model/minimax-m3/minimax-m3-model.js';
import { runInitFault, withInjectedFault } from './fault-injection.js';

class CountingModel implements ForwardModel {
  readonly cfg = { vocabSize: 7 } as ForwardModel['cfg'];
  calls = 0;
  allocKv(_numPages: number, _pageSize: number): KvCache {
    return { pages: this.calls } as unknown as KvCache;
  }
  forward(_batch: ForwardBatch, _kv: KvCache): Promise<ForwardOutput> {
    this.calls++;
    return Promise.resolve({ logits: Float32Array.of(this.calls) } as ForwardOutput);
  }
}

const batch = {} as ForwardBatch;
const kv = {} as KvCache;

describe('withInjectedFault (the test seam of rank failure tests)', () => {
  it('returns the model itself when no fault is asked for', () => {
    const m = new CountingModel();
    expect(withInjectedFault(m)).toBe(m);
  });

  it('fails exactly the chosen forward step and passes everything else through', async () => {
    const m = new CountingModel();
    const f = withInjectedFault(m, { step: 2, mode: 'throw' });
    expect(f.cfg.vocabSize).toBe(7);
    expect((await f.forward(batch, kv)).logits[0]).toBe(1);
    expect((await f.forward(batch, kv)).logits[0]).toBe(2);
    expect(() => f.forward(batch, kv)).toThrow('injected fault at step 2');
    expect(m.calls).toBe(2);
    expect((await f.forward(batch, kv)).logits[0]).toBe(3);
    expect(f.allocKv(1, 1)).toEqual({ pages: 3 });
  });

  it('leaves the forward path alone for a set-up fault, which runInitFault raises', () => {
    const m = new CountingModel();
    expect(withInjectedFault(m, { step: 0, mode: 'throw', at: 'init' })).toBe(m);
    expect(() => runInitFault({ step: 0, mode: 'throw', at: 'init' })).toThrow(
      'injected fault at set-up',
    );
    expect(() => runInitFault({ step: 0, mode: 'throw' })).not.toThrow();
    expect(() => runInitFault(undefined)).not.toThrow();
  });
});
