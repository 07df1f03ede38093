/**
 * CUDA graphs for decode: one graph per padded batch size (e.g. 1, 2, 4, 8, 16, 32, 64, 128),
 * captured on first use after one eager warm-up step of that size, then replayed with static
 * buffers. A decode batch of B sequences is padded to the next captured size with dummy
 * sequences that write their KV into a reserved padding page; their logits are dropped.
 * Prefill (and decode batches above the largest size) run eagerly.
 *
 * What changes between replays lives in device buffers the graph reads: the per-step metadata
 * (token ids, positions, slots, page tables) is staged in pinned memory that the graph's first
 * node copies (batch-meta.ts), and the page-table stride is fixed at `maxPagesPerSeq`.
 */
import type { ForwardBatch, SeqInBatch } from '../forward-batch.js';
import type { CapturedGraph, CudaBackend } from './cuda-backend.js';

/** The model step being captured: host logits [R, V] and optional routed-expert rows. */
export interface StepResult {
  readonly logits: Float32Array;
  readonly numRows: number;
  readonly routedExperts: Record<string, Int32Array>;
}

export type StepFn = (batch: ForwardBatch) => Promise<StepResult>;

export interface DecodeGraphOptions {
  /** Padded batch sizes to capture, ascending. */
  readonly sizes?: readonly number[];
  /** Page-table row length of every captured step (max context / page size). */
  readonly maxPagesPerSeq: number;
  /** A KV page reserved for padding sequences (never holds real data). */
  readonly padPage: number;
}

export const DEFAULT_GRAPH_SIZES: readonly number[] = [1, 2, 4, 8, 16, 32, 64, 128];

export class DecodeGraphs {
  private readonly graphs = new Map<string, CapturedGraph<StepResult>>();
  readonly sizes: readonly number[];
  captures = 0;
  replays = 0;
  eagerSteps = 0;

  constructor(
    private readonly backend: CudaBackend,
    private readonly step: StepFn,
    private readonly o: DecodeGraphOptions,
  ) {
    this.sizes = [...(o.sizes ?? DEFAULT_GRAPH_SIZES)].sort((a, b) => a - b);
  }

  /** True when `batch` is a decode batch this runner can replay (one new token per sequence). */
  canReplay(batch: ForwardBatch): boolean {
    const B = batch.seqs.length;
    return (
      B > 0 &&
      B <= this.sizes[this.sizes.length - 1]! &&
      batch.tokenIds.length === B &&
      batch.seqs.every((s) => s.numNew === 1 && s.pageTable.length <= this.o.maxPagesPerSeq)
    );
  }

  /**
   * One step: replayed from a graph when possible (captured on first use), else eager.
   * The returned arrays are reused by the next replay of the same size: consume them first.
   */
  async run(batch: ForwardBatch): Promise<StepResult> {
    if (!this.canReplay(batch)) {
      this.eagerSteps++;
      return this.step(batch);
    }
    const { graph, padded, B, P } = await this.graphFor(batch);
    const store = this.backend.metaStore;
    store.fixedPageStride = this.o.maxPagesPerSeq;
    try {
      store.stage(padded);
    } finally {
      store.fixedPageStride = null;
    }
    const r = this.backend.replay(graph);
    this.replays++;
    return B === P ? r : this.unpad(r, B, P);
  }

  /**
   * The graph for `batch`'s padded size (captured after one eager warm-up step when new) and
   * the padded batch. Does not stage or replay: `run` does, and benchmarks time replays.
   */
  async graphFor(
    batch: ForwardBatch,
  ): Promise<{ graph: CapturedGraph<StepResult>; padded: ForwardBatch; B: number; P: number }> {
    const B = batch.seqs.length;
    const P = this.sizes.find((s) => s >= B);
    if (P === undefined || !this.canReplay(batch))
      throw new Error(`decode graphs: batch of ${B} cannot be replayed`);
    const padded = this.pad(batch, P);
    const key = `${P}:${batch.captureRoutedExperts ? 1 : 0}`;
    let graph = this.graphs.get(key);
    if (!graph) {
      const store = this.backend.metaStore;
      store.fixedPageStride = this.o.maxPagesPerSeq;
      try {
        await this.step(padded); // warm-up: pools and workspaces reach this size's needs
        graph = await this.backend.captureGraph(() => this.step(padded));
      } finally {
        store.fixedPageStride = null;
      }
      this.graphs.set(key, graph);
      this.captures++;
    }
    return { graph, padded, B, P };
  }

  private pad(batch: ForwardBatch, P: number): ForwardBatch {
    const B = batch.seqs.length;
    if (B === P) return batch;
    const padSeq: SeqInBatch = {
      numCached: 0,
      numNew: 1,
      pageTable: Int32Array.of(this.o.padPage),
    };
    const tokenIds = new Int32Array(P);
    tokenIds.set(batch.tokenIds);
    return {
      ...batch,
      tokenIds,
      seqs: [...batch.seqs, ...Array.from({ length: P - B }, () => padSeq)],
    };
  }

  private unpad(r: StepResult, B: number, P: number): StepResult {
    const V = r.logits.length / r.numRows;
    const routedExperts: Record<string, Int32Array> = {};
    for (const [k, v] of Object.entries(r.routedExperts))
      routedExperts[k] = v.subarray(0, (v.length / P) * B);
    return { logits: r.logits.subarray(0, B * V), numRows: B, routedExperts };
  }

  destroy(): void {
    for (const g of this.graphs.values()) g.graph.destroy();
    this.graphs.clear();
  }
}
