import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Backend } from '../../src/backend/backend.js';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { loadModel } from '../../src/model/load-model.js';
import type { TraceLine } from '../../src/model/minimax-m3/allreduce-trace.js';
import { runForward } from '../../src/model/run-forward.js';
import type { Communicator } from '../../src/parallel/communicator.js';
import { DelegatingCommunicator } from '../../src/parallel/delegating-communicator.js';
import { connectLocalGroup } from '../../src/parallel/cpu/local-group.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { goldenCase } from '../golden-dir.js';

const TINY_MOE = goldenCase('tiny-moe'); // layer 0 dense, layers 1–3 MoE
const IDS = [1, 7, 42, 99, 3, 250, 17, 64, 5];

/**
 * A communicator with the optional fused FFN reduction, done here as allReduce of a copy of h
 * then the backend's add + norm (h left unreduced, as the CUDA kernel leaves it), counting calls.
 */
class FusedCounting extends DelegatingCommunicator {
  fusedCalls = 0;
  constructor(
    inner: Communicator,
    private readonly b: Backend,
  ) {
    super(inner);
  }
  override readonly allReduceAddRmsNorm = async (
    a: Tensor,
    r: Tensor,
    h: Tensor,
    w: Tensor,
    eps: number,
  ): Promise<void> => {
    this.fusedCalls++;
    const s = this.b.upload(this.b.readF32(h), h.shape, h.dtype);
    await this.inner.allReduce(s);
    this.b.addRmsNorm(a, r, s, w, eps);
  };
}

async function forward(fusion: 'off' | 'all', withHook: boolean, traceDir?: string) {
  const { comms, close } = await connectLocalGroup(2, { timeoutMs: 30_000 });
  try {
    const wrapped = comms.map((c) => {
      const backend = new CpuBackend();
      return { backend, comm: withHook ? new FusedCounting(c, backend) : c };
    });
    const models = await Promise.all(
      wrapped.map(({ backend, comm }) =>
        loadModel(TINY_MOE, {
          backend,
          comm,
          parallel: { tpRank: comm.rank, tpSize: 2 },
          allReduceFusion: fusion,
          ...(traceDir && { allReduceTrace: { dir: traceDir, variant: 'exact' as const } }),
        }),
      ),
    );
    const results = await Promise.all(models.map((m) => runForward(m, IDS)));
    const calls = wrapped.map(({ comm }) => (comm instanceof FusedCounting ? comm.fusedCalls : 0));
    return { logits: results[0]!.logits, calls };
  } finally {
    close();
  }
}

describe('the model runs a communicator’s fused all-reduce + add + norm at deferred reductions', () => {
  it('calls it at every deferred site (--allreduce-fusion all) and gives the unfused logits', async () => {
    const fused = await forward('all', true);
    expect(fused.calls).toEqual([4, 4]); // layers 0..3, into the next input norm or the final one
    const off = await forward('off', false);
    expect(fused.logits).toEqual(off.logits);
    expect((await forward('off', true)).calls).toEqual([0, 0]); // immediate: never deferred
  });

  it('the trace compares against the communicator’s fused op: zeros, one call per site', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'moeserve-trace-hook-'));
    const { calls } = await forward('all', true, dir);
    expect(calls).toEqual([4, 4]);
    for (const r of [0, 1]) {
      const lines = readFileSync(join(dir, `rank${r}.jsonl`), 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as TraceLine);
      expect(lines.map((l) => [l.layer_id, l.residual_max_diff, l.norm_max_diff])).toEqual([
        [0, 0, 0],
        [1, 0, 0],
        [2, 0, 0],
        [3, 0, 0],
      ]);
    }
  });
});
