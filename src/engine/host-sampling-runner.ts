import type { ForwardBatch } from '../backend/forward-batch.js';
import type { SamplingParams } from './engine-types.js';
import type { MemoryReport, ModelRunner } from './model-runner.js';
import { SequenceSampler } from './sampler.js';
import type { RowSampling, SequenceSampling, StepResult, StepRunner } from './step-runner.js';

class HostSequenceSampling implements SequenceSampling {
  readonly sampler: SequenceSampler;
  constructor(
    readonly params: SamplingParams,
    promptIds: readonly number[],
    seed: number,
  ) {
    this.sampler = new SequenceSampler(params, promptIds, seed);
  }
  release(): void {}
}

/**
 * A StepRunner over any logits runner (the CPU backend, a tensor-parallel group): the forward
 * returns host logits [R, V] and each requested row is sampled by the JavaScript sampler.
 */
export class HostSamplingRunner implements StepRunner {
  /**
   * As the logits runner: a model on another thread overlaps; one computing on this thread
   * (the CPU backend in-process) or a --tp group's driver does not.
   */
  readonly overlapsHost: boolean;
  /** The host sampler ranks the whole vocabulary. */
  readonly maxTopLogprobs = Infinity;
  constructor(readonly inner: ModelRunner) {
    this.overlapsHost = inner.overlapsHost === true;
  }

  get vocabSize(): number {
    return this.inner.vocabSize;
  }
  get memory(): MemoryReport | undefined {
    return this.inner.memory;
  }
  get numPages(): number {
    return this.inner.numPages;
  }
  get pageSize(): number {
    return this.inner.pageSize;
  }
  get maxModelLen(): number {
    return this.inner.maxModelLen;
  }
  get eosTokenIds(): readonly number[] {
    return this.inner.eosTokenIds;
  }

  openSampling(
    params: SamplingParams,
    promptIds: readonly number[],
    seed: number,
  ): SequenceSampling {
    return new HostSequenceSampling(params, promptIds, seed);
  }

  async step(
    batch: ForwardBatch,
    rows: readonly (RowSampling | null)[],
    ready?: Promise<void>,
  ): Promise<StepResult> {
    const out = await this.inner.forward(batch);
    await ready;
    const V = this.inner.vocabSize;
    if (out.logits.length !== rows.length * V) {
      throw new Error(`runner returned ${out.logits.length} logits, expected ${rows.length * V}`);
    }
    const samples = rows.map((r, i) => {
      if (r === null) return null;
      if (!(r.seq instanceof HostSequenceSampling))
        throw new Error('HostSamplingRunner: sampling state from another runner');
      const row = out.logits.subarray(i * V, (i + 1) * V);
      return r.seq.sampler.sample(row, r.numLogprobs, r.allowedMask?.() ?? null);
    });
    return {
      samples,
      ...(out.routedExperts ? { routedExperts: out.routedExperts } : {}),
      ...(batch.seqs.some((s) => s.allLogits) ? { logits: out.logits } : {}),
    };
  }

  close(): void | Promise<void> {
    return this.inner.close?.();
  }
}
