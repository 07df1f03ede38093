/**
 * CUDA graphs for decode: one graph per padded batch size (vLLM's list: 1, 2, 4, then every
 * multiple of 8 up to the cap), captured on first use after one eager warm-up step of that
 * size, then replayed. A decode batch of B sequences is padded to the next captured size with
 * dummy sequences that write their KV into a reserved padding page; their output rows are
 * ignored by the caller. Prefill, mixed steps and decode batches above the largest size run
 * eagerly, as do steps the model does not declare capturable.
 *
 * The step function is a capturable step (CudaBackend.captureGraph): it only enqueues device
 * work into buffers the caller owns (e.g. a [rows, V] logits buffer), so a replay leaves its
 * outputs where the eager step would. What changes between replays lives in device buffers
 * the graph reads: the per-step metadata is staged in pinned memory that the graph's first
 * node copies (batch-meta.ts), with the page-table stride fixed at `maxPagesPerSeq`
 * (`ForwardBatch.pageTableStride`).
 */
import type { ForwardBatch, SeqInBatch } from '../forward-batch.js';
import type { CudaBackend } from './cuda-backend.js';
import type { CudaGraph } from './device.js';

/** Enqueues one step's device work (no host reads when the batch is capturable). */
export type StepFn = (batch: ForwardBatch) => Promise<void>;

export interface DecodeGraphOptions {
  /** Padded batch sizes to capture, ascending. */
  readonly sizes: readonly number[];
  /** Page-table row length of every captured step (max context / page size). */
  readonly maxPagesPerSeq: number;
  /** A KV page reserved for padding sequences (never holds real data). */
  readonly padPage: number;
}

/**
 * vLLM's capture sizes: 1, 2, 4, then multiples of 8, up to `maxBs` (and the first size
 * covering it, so a batch of exactly `maxBs` sequences is replayed).
 */
export function graphBatchSizes(maxBs: number): number[] {
  if (!Number.isInteger(maxBs) || maxBs < 1)
    throw new Error(`cuda graphs: max batch size must be a positive integer, got ${maxBs}`);
  const sizes = [1, 2, 4];
  for (let s = 8; s < maxBs + 8; s += 8) sizes.push(s);
  const last = sizes.findIndex((s) => s >= maxBs);
  return sizes.slice(0, last + 1);
}

/** Pads a decode batch to `P` sequences with one-token dummies on `padPage`. */
export function padDecodeBatch(
  batch: ForwardBatch,
  P: number,
  padPage: number,
  stride: number,
): ForwardBatch {
  const B = batch.seqs.length;
  if (P < B) throw new Error(`cuda graphs: cannot pad ${B} sequences to ${P}`);
  const padSeq: SeqInBatch = { numCached: 0, numNew: 1, pageTable: Int32Array.of(padPage) };
  const tokenIds = new Int32Array(P);
  tokenIds.set(batch.tokenIds);
  return {
    ...batch,
    tokenIds,
    seqs: [...batch.seqs, ...Array.from({ length: P - B }, () => padSeq)],
    pageTableStride: stride,
  };
}

export class DecodeGraphs {
  private readonly graphs = new Map<number, CudaGraph>();
  readonly sizes: readonly number[];
  captures = 0;
  replays = 0;

  constructor(
    private readonly backend: CudaBackend,
    private readonly step: StepFn,
    private readonly o: DecodeGraphOptions,
  ) {
    this.sizes = [...o.sizes].sort((a, b) => a - b);
  }

  /** The padded size a decode batch of B sequences replays at, or null (run it eagerly). */
  paddedSize(batch: ForwardBatch): number | null {
    const B = batch.seqs.length;
    const isDecode =
      B > 0 &&
      batch.tokenIds.length === B &&
      batch.logitsFor === 'last' &&
      batch.seqs.every(
        (s) => s.numNew === 1 && !s.allLogits && s.pageTable.length <= this.o.maxPagesPerSeq,
      );
    return isDecode ? (this.sizes.find((s) => s >= B) ?? null) : null;
  }

  /**
   * Replays the graph of `batch`'s padded size (captured on first use). The caller checked
   * `paddedSize(batch)` and that the model declares the batch capturable. Only enqueues.
   */
  async replay(batch: ForwardBatch): Promise<void> {
    const P = this.paddedSize(batch);
    if (P === null) throw new Error(`cuda graphs: a batch of ${batch.seqs.length} is no decode`);
    const padded = padDecodeBatch(batch, P, this.o.padPage, this.o.maxPagesPerSeq);
    const graph = this.graphs.get(P) ?? (await this.capture(padded, P));
    this.backend.metaStore.stage(padded);
    graph.launch();
    this.replays++;
  }

  /** The graph for a padded batch, captured after an eager warm-up of the same size. */
  async graphFor(padded: ForwardBatch): Promise<CudaGraph> {
    return this.graphs.get(padded.seqs.length) ?? this.capture(padded, padded.seqs.length);
  }

  private async capture(padded: ForwardBatch, P: number): Promise<CudaGraph> {
    await this.step(padded); // warm-up: pools and workspaces reach this size's needs
    const graph = await this.backend.captureGraph(() => this.step(padded));
    this.graphs.set(P, graph);
    this.captures++;
    return graph;
  }

  destroy(): void {
    for (const g of this.graphs.values()) g.destroy();
    this.graphs.clear();
  }
}
