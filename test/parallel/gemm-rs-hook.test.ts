import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { loadModel } from '../../src/model/load-model.js';
import { runForward } from '../../src/model/run-forward.js';
import type { Communicator, Matmul } from '../../src/parallel/communicator.js';
import { DelegatingCommunicator } from '../../src/parallel/delegating-communicator.js';
import { connectLocalGroup } from '../../src/parallel/cpu/local-group.js';
import { gemmRsChunks } from '../../src/parallel/cuda-ipc/gemm-rs-plan.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { goldenCase } from '../golden-dir.js';

const TINY_MOE = goldenCase('tiny-moe'); // layer 0 dense, layers 1–3 MoE
const IDS = [1, 7, 42, 99, 3, 250, 17, 64, 5]; // 9 tokens: SP pads them to 10 rows on 2 ranks

/**
 * A communicator with the optional GEMM + reduce-scatter, done here as the CUDA path splits it:
 * the chunk GEMMs of gemm-rs-plan.ts in its order, then the reduce-scatter of the whole
 * partial output; it records the shapes it was called with.
 */
class GemmRsCounting extends DelegatingCommunicator {
  readonly calls: string[] = [];
  constructor(
    inner: Communicator,
    private readonly b: Backend,
  ) {
    super(inner);
  }
  override readonly matmulReduceScatter = async (
    out: Tensor,
    all: Tensor,
    x: Tensor,
    w: Tensor,
    matmul: Matmul,
  ): Promise<void> => {
    const n = out.shape[0]!;
    this.calls.push(`${x.shape.join('x')}·${w.shape.join('x')}ᵀ→${all.shape.join('x')}`);
    for (const c of gemmRsChunks(x.shape[0]!, n, this.worldSize, this.rank))
      if (c.rows > 0) matmul(this.b.rows(all, c.start, c.rows), this.b.rows(x, c.start, c.rows), w);
    await this.inner.reduceScatter(out, all);
  };
}

async function forward(sp: boolean, withHook: boolean) {
  const { comms, close } = await connectLocalGroup(2, { timeoutMs: 30_000 });
  try {
    const wrapped = comms.map((c) => {
      const backend = new CpuBackend();
      return { backend, comm: withHook ? new GemmRsCounting(c, backend) : c };
    });
    const models = await Promise.all(
      wrapped.map(({ backend, comm }) =>
        loadModel(TINY_MOE, {
          backend,
          comm,
          parallel: { tpRank: comm.rank, tpSize: 2, sp },
        }),
      ),
    );
    const results = await Promise.all(models.map((m) => runForward(m, IDS)));
    const calls = wrapped.map(({ comm }) => (comm instanceof GemmRsCounting ? comm.calls : []));
    return { logits: results[0]!.logits, calls };
  } finally {
    close();
  }
}

describe('the model runs a communicator’s GEMM + reduce-scatter at its SP projections', () => {
  it('o_proj of every layer and the dense down_proj, with the logits of GEMM then reduce-scatter', async () => {
    const hooked = await forward(true, true);
    // x [9, K/tp] against [D, K/tp], into the padded [10, D]: 4 o_proj (4 heads·16 / 2 = 32)
    // and layer 0's down_proj (96 / 2 = 48).
    const want = ['9x32·64x32ᵀ→10x64', '9x48·64x48ᵀ→10x64', ...Array(3).fill('9x32·64x32ᵀ→10x64')];
    expect(hooked.calls).toEqual([want, want]);
    expect(hooked.logits).toEqual((await forward(true, false)).logits);
  });

  it('is not called without SP (TP all-reduces its projections)', async () => {
    expect((await forward(false, true)).calls).toEqual([[], []]);
  });
});
