import { DecodeGraphs, graphBatchSizes } from '../backend/cuda/decode-graphs.js';
import type { CudaBackend } from '../backend/cuda/cuda-backend.js';
import type { CudaTensor } from '../backend/cuda/cuda-tensor.js';
import {
  GpuSampler,
  type GpuSampleRow,
  GpuSequenceState,
  MAX_TOP_LOGPROBS,
} from '../backend/cuda/gpu-sampler.js';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { MiniMaxM3Model } from '../model/minimax-m3/minimax-m3-model.js';
import { usesExpertParallel } from '../parallel/parallel-layout.js';
import type { SamplingParams } from './engine-types.js';
import type { M3ModelRunner } from './m3-model-runner.js';
import type { SampleResult } from './sampler.js';
import type { MemoryReport } from './model-runner.js';
import type { StepRunnerOptions } from './step-runner-for.js';
import type { RowSampling, SequenceSampling, StepResult, StepRunner } from './step-runner.js';

class CudaSequenceSampling implements SequenceSampling {
  constructor(
    readonly params: SamplingParams,
    readonly state: GpuSequenceState,
    private readonly sampler: GpuSampler,
  ) {}
  release(): void {
    this.sampler.release(this.state);
  }
}

/**
 * The engine's runner on one CUDA device: the model writes logits into a device buffer
 * [rows, V] f32, the GPU sampler picks the tokens there, and only the ids (and requested
 * logprobs) come back. Decode steps the model declares capturable replay CUDA graphs of
 * padded batch sizes; prefill, mixed and non-capturable steps (captured routed experts) run
 * eagerly. One KV page is reserved for the padding sequences of graph replays.
 */
export class CudaStepRunner implements StepRunner {
  readonly numPages: number;
  /** The GPU wait polls an event from setImmediate (CudaDevice.whenDone). */
  readonly overlapsHost: boolean = true;
  readonly maxTopLogprobs = MAX_TOP_LOGPROBS;
  private readonly backend: CudaBackend;
  private readonly logits: CudaTensor;
  private readonly sampler: GpuSampler;
  private readonly graphs: DecodeGraphs | null;
  /** Steps replayed from graphs / run eagerly (for tests and logs). */
  readonly counts = { graphSteps: 0, eagerSteps: 0 };

  private readonly model: MiniMaxM3Model;

  /** A model on one rank without expert parallelism (groups keep the host sampler). */
  static supports(r: M3ModelRunner): boolean {
    const m = r.model;
    return m instanceof MiniMaxM3Model && m.comm.worldSize === 1 && !usesExpertParallel(m.layout);
  }

  get memory(): MemoryReport {
    return this.inner.memory;
  }

  constructor(
    readonly inner: M3ModelRunner,
    o: StepRunnerOptions = {},
  ) {
    if (!CudaStepRunner.supports(inner)) throw new Error('CudaStepRunner: one rank, no EP');
    this.model = inner.model as MiniMaxM3Model;
    this.backend = this.model.backend as CudaBackend;
    if (inner.numPages < 2) throw new Error('CudaStepRunner: needs at least 2 KV pages');
    this.numPages = inner.numPages - 1; // the last page pads graph replays
    const maxNumSeqs = o.maxNumSeqs ?? 64;
    const sizes = o.enforceEager
      ? []
      : graphBatchSizes(Math.min(o.cudaGraphMaxBs ?? 512, maxNumSeqs));
    const rows = Math.max(maxNumSeqs, sizes.at(-1) ?? 0);
    this.logits = this.backend.alloc([rows, inner.vocabSize], 'f32') as CudaTensor; // [rows, V]
    this.sampler = new GpuSampler(
      this.backend.dev,
      this.backend.ctx.kernels,
      inner.vocabSize,
      rows,
    );
    this.graphs =
      sizes.length === 0
        ? null
        : new DecodeGraphs(this.backend, (b) => this.enqueue(b).then(() => undefined), {
            sizes,
            maxPagesPerSeq: Math.ceil(inner.maxModelLen / inner.pageSize),
            padPage: inner.numPages - 1,
          });
  }

  get vocabSize(): number {
    return this.inner.vocabSize;
  }
  get pageSize(): number {
    return this.inner.pageSize;
  }
  /** The model's limit, clamped to the pages left after the padding page. */
  get maxModelLen(): number {
    return Math.min(this.inner.maxModelLen, this.numPages * this.inner.pageSize);
  }
  get eosTokenIds(): readonly number[] {
    return this.inner.eosTokenIds;
  }
  /** Captured graph sizes (empty with --enforce-eager). */
  get graphSizes(): readonly number[] {
    return this.graphs?.sizes ?? [];
  }

  openSampling(
    params: SamplingParams,
    promptIds: readonly number[],
    seed: number,
  ): SequenceSampling {
    return new CudaSequenceSampling(
      params,
      this.sampler.open(params, seed, promptIds),
      this.sampler,
    );
  }

  async step(
    batch: ForwardBatch,
    rows: readonly (RowSampling | null)[],
    ready?: Promise<void>,
  ): Promise<StepResult> {
    let routed: Record<string, Int32Array> = {};
    let hostLogits: Float32Array | undefined;
    if (batch.seqs.some((s) => s.allLogits)) {
      // Prompt logprobs: every row's logits go to the host anyway; the sampled rows are put
      // back on the device for the sampler.
      const out = await this.model.forward(batch, this.inner.kv);
      hostLogits = out.logits;
      routed = out.routedExperts;
      this.counts.eagerSteps++;
    } else if (this.graphs?.paddedSize(batch) != null && this.model.capturable(batch)) {
      await this.graphs.replay(batch);
      this.counts.graphSteps++;
    } else {
      routed = await this.enqueue(batch);
      this.counts.eagerSteps++;
    }
    await ready;
    const gpuRows: GpuSampleRow[] = [];
    const rowOf: number[] = [];
    rows.forEach((r, i) => {
      if (r === null) return;
      if (!(r.seq instanceof CudaSequenceSampling))
        throw new Error('CudaStepRunner: sampling state from another runner');
      const mask = r.allowedMask?.() ?? null;
      const bias = r.seq.params.logitBias;
      const logitsRow = hostLogits ? gpuRows.length : i;
      gpuRows.push({
        logitsRow,
        state: r.seq.state,
        numLogprobs: r.numLogprobs,
        ...(mask ? { allowedMask: mask } : {}),
        ...(bias && bias.length > 0 ? { bias } : {}),
      });
      rowOf.push(i);
    });
    if (hostLogits) this.putRows(hostLogits, rowOf);
    const out = await this.sampler.sample(this.logits.ptr, gpuRows);
    const samples: (SampleResult | null)[] = rows.map(() => null);
    rowOf.forEach((row, j) => (samples[row] = out[j]!));
    return {
      samples,
      ...(batch.captureRoutedExperts ? { routedExperts: routed } : {}),
      ...(hostLogits ? { logits: hostLogits } : {}),
    };
  }

  /** Host rows `rowOf[j]` of [R, V] logits into device row j of the logits buffer. */
  private putRows(host: Float32Array, rowOf: readonly number[]): void {
    const V = this.inner.vocabSize;
    rowOf.forEach((row, j) => {
      this.backend.write(
        this.backend.rows(this.logits, j, 1),
        host.subarray(row * V, (row + 1) * V),
      );
    });
  }

  /** The forward into the logits buffer (device work only when capturable). */
  private enqueue(batch: ForwardBatch): Promise<Record<string, Int32Array>> {
    return this.model.forwardInto(batch, this.inner.kv, this.logits);
  }

  close(): void {
    this.graphs?.destroy();
    this.sampler.destroy();
    this.backend.free(this.logits);
  }
}
