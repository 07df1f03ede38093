import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { loadModel } from '../../src/model/load-model.js';
import type { AllReduceTraceOptions } from '../../src/model/minimax-m3/allreduce-trace.js';
import { runForward, type ForwardResult } from '../../src/model/run-forward.js';
import { writeRandomCheckpoint } from '../../src/model/weights/random-checkpoint.js';
import { PRESETS, type RawConfig } from '../../src/model/weights/random-presets.js';
import type { AllReduceFusion } from '../../src/parallel/allreduce-placement.js';
import type { CollectiveRecord } from '../../src/parallel/comm-stats.js';
import { connectLocalGroup } from '../../src/parallel/cpu/local-group.js';

export interface LayoutCase {
  readonly tp: number;
  readonly ep?: boolean;
  readonly sp?: boolean;
  readonly fusion?: AllReduceFusion;
  readonly fuseSharedExperts?: boolean;
  /** Fused-versus-native trace of every deferred reduction. */
  readonly trace?: AllReduceTraceOptions;
}

export function layoutName(c: LayoutCase): string {
  return [
    `tp${c.tp}`,
    c.ep ? 'ep' : '',
    c.sp ? 'sp' : '',
    c.fusion ? `fusion-${c.fusion}` : '',
    c.fuseSharedExperts ? 'fused-shared' : '',
  ]
    .filter(Boolean)
    .join('+');
}

/**
 * Runs one full forward over `ids` on every rank of `c` inside this process (ranks joined by
 * the CPU communicator over localhost TCP) and returns each rank's result and collective log.
 */
export async function forwardOnRanks(
  dir: string,
  c: LayoutCase,
  ids: readonly number[],
): Promise<{ results: ForwardResult[]; logs: CollectiveRecord[][] }> {
  const { comms, close } = await connectLocalGroup(c.tp, { recordLog: true, timeoutMs: 30_000 });
  try {
    const models = await Promise.all(
      comms.map((comm) =>
        loadModel(dir, {
          backend: new CpuBackend(),
          comm,
          parallel: { tpRank: comm.rank, tpSize: c.tp, ep: c.ep, sp: c.sp },
          allReduceFusion: c.fusion ?? 'dense',
          fuseSharedExperts: c.fuseSharedExperts ?? false,
          allReduceTrace: c.trace,
        }),
      ),
    );
    const results = await Promise.all(models.map((m) => runForward(m, ids)));
    return { results, logs: comms.map((cm) => cm.stats.log) };
  } finally {
    close();
  }
}

/** The single-rank reference. */
export async function forwardSingle(
  dir: string,
  ids: readonly number[],
  fuseSharedExperts = false,
): Promise<ForwardResult> {
  return runForward(await loadModel(dir, { backend: new CpuBackend(), fuseSharedExperts }), ids);
}

/** max |a − b| / max(1, max |b|) over all logits. */
export function relativeLogitError(a: ForwardResult, b: ForwardResult): number {
  let maxRef = 0;
  let maxDiff = 0;
  b.logits.forEach((row, t) =>
    row.forEach((v, j) => {
      maxRef = Math.max(maxRef, Math.abs(v));
      const d = Math.abs((a.logits[t]?.[j] ?? NaN) - v);
      maxDiff = Number.isNaN(d) ? Infinity : Math.max(maxDiff, d);
    }),
  );
  return maxDiff / Math.max(1, maxRef);
}

/**
 * A random MiniMax-M3 checkpoint deeper than the golden ones, with dense layers between MoE
 * layers (so deferred reductions land before MoE and dense layers), 4 KV heads (split at
 * tp=4, unlike the golden models' replication), 16 experts top-4, float32 weights.
 */
export function writeDeepRandomCheckpoint(): string {
  const dir = mkdtempSync(join(tmpdir(), 'moeserve-parallel-'));
  const layers = 8;
  const moe = [0, 1, 1, 0, 1, 1, 0, 1];
  const sparse = [0, 1, 1, 1, 0, 1, 1, 1];
  const base = PRESETS['tiny']!();
  const config: RawConfig = {
    ...base,
    num_hidden_layers: layers,
    num_attention_heads: 8,
    num_key_value_heads: 4,
    num_local_experts: 16,
    num_experts_per_tok: 4,
    moe_layer_freq: moe,
    sparse_attention_config: {
      ...(base['sparse_attention_config'] as RawConfig),
      sparse_num_index_heads: 4,
      sparse_attention_freq: sparse,
      sparse_disable_index_value: sparse,
    },
  };
  writeRandomCheckpoint({ config, outDir: dir, dtype: 'f32', seed: 7 });
  return dir;
}
