import { afterEach, describe, expect, it } from 'vitest';
import {
  closeGroup,
  formGroupAsRank0,
  formGroupAsWorker,
  openMaster,
  type GroupConfig,
  type ProcessGroup,
} from '../transport/process-group.js';
import {
  agreedBlocks,
  decodeBufferInfo,
  encodeBufferInfo,
  exchangeBufferInfo,
  type IpcBufferInfo,
} from './handle-exchange.js';

let groups: ProcessGroup[] = [];
afterEach(() => {
  groups.forEach(closeGroup);
  groups = [];
});

async function group(W: number): Promise<ProcessGroup[]> {
  const base: GroupConfig = {
    worldSize: W,
    masterAddr: '127.0.0.1',
    masterPort: 0,
    bindHost: '127.0.0.1',
    timeoutMs: 10_000,
  };
  const master = await openMaster(base);
  const cfg = { ...base, masterPort: master.port };
  groups = await Promise.all([
    formGroupAsRank0(master, cfg),
    ...Array.from({ length: W - 1 }, (_, i) => formGroupAsWorker(i + 1, cfg)),
  ]);
  return groups;
}

/** Rank r's info as if from its own process (pids differ), a handle of distinct bytes. */
function info(rank: number, W: number, cap = 4096): IpcBufferInfo {
  const handle = Uint8Array.from({ length: 64 }, (_, i) => (rank * 64 + i) & 0xff);
  return { rank, worldSize: W, pid: 1000 + rank, cap, blocks: 16, handle };
}

describe('IPC handle exchange', () => {
  it('gives every rank every handle, byte for byte, in rank order', async () => {
    const W = 3;
    const g = await group(W);
    const got = await Promise.all(g.map((p) => exchangeBufferInfo(info(p.rank, W), p.peers, 5000)));
    for (const all of got) {
      expect(all.map((i) => i.rank)).toEqual([0, 1, 2]);
      all.forEach((i, q) => expect(Array.from(i.handle)).toEqual(Array.from(info(q, W).handle)));
    }
  });

  it('agrees on the smallest block cap (ranks on a shared GPU keep fewer resident)', async () => {
    const g = await group(3);
    const blocks = [132, 66, 66];
    const got = await Promise.all(
      g.map((p) =>
        exchangeBufferInfo({ ...info(p.rank, 3), blocks: blocks[p.rank]! }, p.peers, 5000),
      ),
    );
    for (const all of got) expect(agreedBlocks(all)).toBe(66);
  });

  it('names the rank whose regions differ in size', async () => {
    const g = await group(2);
    const res = await Promise.allSettled([
      exchangeBufferInfo(info(0, 2, 4096), g[0]!.peers, 5000),
      exchangeBufferInfo(info(1, 2, 8192), g[1]!.peers, 5000),
    ]);
    expect(res[0]).toMatchObject({ status: 'rejected' });
    expect(String((res[0] as PromiseRejectedResult).reason)).toMatch(
      /rank 1 registered 8192-byte regions, this rank 4096/,
    );
  });

  it('names a rank that sends nothing in time', async () => {
    const g = await group(2);
    await expect(exchangeBufferInfo(info(0, 2), g[0]!.peers, 200)).rejects.toThrow(
      /got no handle from rank 1 within 0.2 s/,
    );
  });

  it('rejects a handle from this process, a wrong rank, a short handle and junk', () => {
    const own = info(0, 2);
    const from1 = (o: Partial<IpcBufferInfo>): Uint8Array =>
      encodeBufferInfo({ ...info(1, 2), ...o });
    expect(() => decodeBufferInfo(from1({ pid: own.pid }), 1, own)).toThrow(/in this process/);
    expect(() => decodeBufferInfo(from1({ rank: 2 }), 1, own)).toThrow(/says it is rank 2/);
    expect(() => decodeBufferInfo(from1({ worldSize: 4 }), 1, own)).toThrow(/expects 4 ranks/);
    expect(() => decodeBufferInfo(from1({ blocks: 0 }), 1, own)).toThrow(/sent 0 blocks/);
    expect(() => decodeBufferInfo(from1({ handle: new Uint8Array(8) }), 1, own)).toThrow(
      /8-byte handle/,
    );
    expect(() => decodeBufferInfo(Buffer.from('{'), 1, own)).toThrow(/not JSON/);
    expect(decodeBufferInfo(from1({}), 1, own).handle).toEqual(info(1, 2).handle);
  });
});
