import { afterEach, describe, expect, it } from 'vitest';
import { CpuBackend } from '../../backend/cpu/cpu-backend.js';
import type { CpuTensor } from '../../backend/cpu/cpu-tensor.js';
import { connectLocalGroup } from './local-group.js';
import type { CpuCommunicator } from './cpu-communicator.js';

const b = new CpuBackend();
const f32 = (data: number[], shape = [data.length]): CpuTensor =>
  b.upload(Float32Array.from(data), shape, 'f32') as CpuTensor;
/** Values whose float32 sum depends on the order they are added in. */
const value = (rank: number, i: number): number =>
  Math.fround(Math.sin(rank * 7 + i) * 10 ** (i % 7));

let close: () => void = () => {};
afterEach(() => close());

async function group(W: number): Promise<CpuCommunicator[]> {
  const g = await connectLocalGroup(W, { recordLog: true, timeoutMs: 10_000 });
  close = g.close;
  return g.comms;
}

describe('CPU communicator across TCP', () => {
  for (const W of [2, 3, 4]) {
    it(`all-reduce with W=${W} sums in float32 in rank order on every rank`, async () => {
      const comms = await group(W);
      const n = 37; // not a multiple of W: uneven chunks
      const xs = comms.map((c) => f32(Array.from({ length: n }, (_, i) => value(c.rank, i))));
      await Promise.all(comms.map((c, r) => c.allReduce(xs[r]!)));
      const expect32 = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        let acc = Math.fround(value(0, i));
        for (let r = 1; r < W; r++) acc = Math.fround(acc + value(r, i));
        expect32[i] = acc;
      }
      for (const x of xs) expect(Array.from(x.data)).toEqual(Array.from(expect32));
      const sent = comms.reduce((s, c) => s + c.stats.bytesSent.allReduce, 0);
      expect(sent).toBe(2 * (W - 1) * n * 4);
    });

    it(`all-gather, reduce-scatter and broadcast with W=${W}`, async () => {
      const comms = await group(W);
      const outs = comms.map(() => b.alloc([W * 2, 3], 'f32') as CpuTensor);
      await Promise.all(
        comms.map((c, r) => c.allGather(outs[r]!, f32([r, r, r, -r, -r, -r], [2, 3]))),
      );
      const gathered = Array.from({ length: W }, (_, r) => [r, r, r, -r, -r, -r]).flat();
      for (const o of outs) expect(Array.from(o.data)).toEqual(gathered);

      const rs = comms.map(() => b.alloc([2], 'f32') as CpuTensor);
      const full = (r: number): CpuTensor =>
        f32(Array.from({ length: 2 * W }, (_, i) => r * 100 + i));
      await Promise.all(comms.map((c, r) => c.reduceScatter(rs[r]!, full(r))));
      const total = (W * (W - 1) * 100) / 2;
      rs.forEach((o, r) =>
        expect(Array.from(o.data)).toEqual([total + 2 * r * W, total + (2 * r + 1) * W]),
      );

      const bc = comms.map((c) => f32([c.rank + 1, 5]));
      await Promise.all(comms.map((c, r) => c.broadcast(bc[r]!, W - 1)));
      for (const x of bc) expect(Array.from(x.data)).toEqual([W, 5]);
      await Promise.all(comms.map((c) => c.barrier()));
      for (const c of comms) {
        expect(c.stats.bytesSent.allGather).toBe((W - 1) * 6 * 4);
        expect(c.stats.bytesSent.reduceScatter).toBe((W - 1) * 2 * 4);
        expect(c.stats.bytesSent.broadcast).toBe(c.rank === W - 1 ? (W - 1) * 2 * 4 : 0);
      }
    });
  }

  it('all-to-all moves variable row counts, int32 included', async () => {
    const W = 3;
    const comms = await group(W);
    // Rank r sends (r + q) % 3 rows of [r, q] to rank q.
    const rows = (r: number, q: number): number => (r + q) % 3;
    const results = await Promise.all(
      comms.map(async (c, r) => {
        const send = Array.from({ length: W }, (_, q) => rows(r, q));
        const recv = Array.from({ length: W }, (_, q) => rows(q, r));
        const data = send.flatMap((n, q) => Array.from({ length: n }, () => [r, q]).flat());
        const x = b.upload(Int32Array.from(data), [data.length / 2, 2], 'i32');
        const out = b.alloc([recv.reduce((s, v) => s + v, 0), 2], 'i32') as CpuTensor;
        await c.allToAll(out, x, send, recv);
        return Array.from(out.data);
      }),
    );
    results.forEach((got, r) => {
      const want = Array.from({ length: W }, (_, q) =>
        Array.from({ length: rows(q, r) }, () => [q, r]).flat(),
      ).flat();
      expect(got).toEqual(want);
    });
  });

  it('names the collectives when ranks disagree', async () => {
    const comms = await group(2);
    const a = comms[0]!.allReduce(f32([1, 2]));
    const g = comms[1]!.allGather(b.alloc([4], 'f32'), f32([1, 2]));
    await expect(Promise.all([a, g])).rejects.toThrow(
      /collective mismatch.*allReduce.*allGather|collective mismatch.*allGather.*allReduce/,
    );
  });

  it('fails a pending collective with the rank that went away', async () => {
    const comms = await group(3);
    const pending = comms[0]!.allReduce(f32([1, 2, 3]));
    comms[2]!.close();
    await expect(pending).rejects.toThrow(/rank 2/);
  });
});
