import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import koffi from 'koffi';
import { describe, expect, it } from 'vitest';
import type { Tensor } from '../../src/tensor/tensor.js';

/**
 * The NCCL communicator's koffi bindings against a mock libnccl with the same C signatures
 * (fixtures/mock-nccl.c): no GPU needed. Real NCCL runs need several GPUs and are not part
 * of CI; this checks what can go wrong in marshalling — the 128-byte unique id through a
 * by-value struct (with zero bytes), the async init, the out handle, dtypes, counts, byte
 * offsets of the grouped all-to-all, and error text from ncclGetErrorString.
 */
function buildMock(): string | null {
  const src = fileURLToPath(new URL('./fixtures/mock-nccl.c', import.meta.url));
  const out = join(mkdtempSync(join(tmpdir(), 'mock-nccl-')), 'libmock-nccl.so');
  try {
    execFileSync('cc', ['-shared', '-fPIC', '-O1', '-o', out, src], { stdio: 'pipe' });
    return out;
  } catch {
    return null;
  }
}

const lib = buildMock();

/** A fake device tensor: NCCL only sees its address. */
const dev = (ptr: number, shape: number[], dtype: Tensor['dtype']): Tensor =>
  ({ shape, dtype, device: 'cuda', storage: { device: 'cuda', ptr } }) satisfies Tensor;

describe.skipIf(lib === null)('NCCL bindings (mock libnccl; skipped without a C compiler)', () => {
  it('marshals ids, handles, collectives and errors', async () => {
    process.env['MOESERVE_LIBNCCL'] = lib!;
    const { ncclUniqueId, NcclCommunicator } =
      await import('../../src/parallel/nccl/nccl-communicator.js');
    const { loadNccl } = await import('../../src/parallel/nccl/nccl-ffi.js');
    const mock = koffi.load(lib!);
    const logCount = mock.func('int mockLogCount()') as () => number;
    const logLine = mock.func('const char *mockLogLine(int i)') as (i: number) => string;
    const log = (): string[] => Array.from({ length: logCount() }, (_, i) => logLine(i));

    const id = ncclUniqueId();
    expect(id.length).toBe(128);
    expect(id[3]).toBe(0); // a zero byte survives (char[128] would have cut the id there)
    expect(id[127]).toBe((127 * 7 + 1) & 0xff);

    let synced = 0;
    const comm = await NcclCommunicator.init(loadNccl(), 1, 4, id, {
      stream: null,
      synchronize: () => synced++,
      scratch: () => dev(64, [1], 'f32'),
    });
    comm.allReduce(dev(4096, [3, 5], 'bf16'));
    comm.allGather(dev(8192, [8, 4], 'f32'), dev(4096, [2, 4], 'f32'));
    comm.reduceScatter(dev(4096, [2, 4], 'f32'), dev(8192, [8, 4], 'f32'));
    comm.broadcast(dev(4096, [6], 'i32'), 2);
    // 3 columns of bf16 (6 bytes a row): rows [1, 0, 2, 1] out, [2, 2, 0, 1] in.
    comm.allToAll(
      dev(20000, [5, 3], 'bf16'),
      dev(10000, [4, 3], 'bf16'),
      [1, 0, 2, 1],
      [2, 2, 0, 1],
    );
    comm.barrier();
    expect(synced).toBe(1);
    expect(() => comm.allReduce(dev(4096, [12345], 'f32'))).toThrow(
      /ncclAllReduce: mock error 5 \(last error detail\)/,
    );
    comm.close();
    expect(log()).toEqual([
      'init nranks=4 rank=1',
      'allReduce send=4096 recv=4096 count=15 dtype=9 arg=0 comm=1',
      'allGather send=4096 recv=8192 count=8 dtype=7 arg=-1 comm=1',
      'reduceScatter send=8192 recv=4096 count=8 dtype=7 arg=0 comm=1',
      'broadcast send=4096 recv=4096 count=6 dtype=2 arg=2 comm=1',
      'groupStart',
      'send send=10000 recv=0 count=3 dtype=9 arg=0 comm=1',
      'recv send=0 recv=20000 count=6 dtype=9 arg=0 comm=1',
      'recv send=0 recv=20012 count=6 dtype=9 arg=1 comm=1',
      'send send=10006 recv=0 count=6 dtype=9 arg=2 comm=1',
      'send send=10018 recv=0 count=3 dtype=9 arg=3 comm=1',
      'recv send=0 recv=20024 count=3 dtype=9 arg=3 comm=1',
      'groupEnd',
      'allReduce send=64 recv=64 count=1 dtype=7 arg=0 comm=1',
      'allReduce send=4096 recv=4096 count=12345 dtype=7 arg=0 comm=1',
      'abort',
    ]);
  });
});
