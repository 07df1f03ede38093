import { type ForwardBatch, layoutBatch } from '../backend/forward-batch.js';
import type { ModelRunner, StepOutput } from './model-runner.js';

export interface FakeModelRunnerOptions {
  readonly vocabSize: number;
  readonly numPages: number;
  readonly pageSize: number;
  readonly maxModelLen: number;
  readonly eosTokenIds: readonly number[];
  /** Logit boost of each context's preferred token (higher = more peaked). */
  readonly peak: number;
  /** Simulated MoE layers for routed-expert capture: K ids of E per token and layer. */
  readonly numMoeLayers: number;
  readonly numExperts: number;
  readonly numExpertsPerTok: number;
  /** When > 0, forward resolves after this many ms, like an asynchronous device. */
  readonly delayMs: number;
}

const DEFAULTS: FakeModelRunnerOptions = {
  vocabSize: 64,
  numPages: 128,
  pageSize: 4,
  maxModelLen: 256,
  eosTokenIds: [0],
  peak: 6,
  numMoeLayers: 2,
  numExperts: 8,
  numExpertsPerTok: 2,
  delayMs: 0,
};

function mix(a: number, b: number): number {
  let x = Math.imul(a ^ 0x27d4eb2d, 0x85ebca6b) ^ b;
  x = Math.imul(x ^ (x >>> 15), 0x2c1b3c6d);
  x = Math.imul(x ^ (x >>> 12), 0x297a2d39);
  return (x ^ (x >>> 15)) >>> 0;
}

/**
 * A deterministic stand-in for a model. Each token writes mix(token, position) into its KV
 * slot; the logits of a position are a peaked distribution seeded by folding every KV slot of
 * the context in order, read back through the page table. So the output is a pure function of
 * the token history when the engine is right, and page-table, prefix-cache or preemption bugs
 * (a wrong, stale or unwritten slot) change the tokens or throw.
 */
export class FakeModelRunner implements ModelRunner {
  readonly opts: FakeModelRunnerOptions;
  readonly kv: Uint32Array;
  private readonly written: Uint8Array;
  /** Per forward call: [number of sequences, number of tokens]. */
  readonly calls: [number, number][] = [];

  constructor(options: Partial<FakeModelRunnerOptions> = {}) {
    this.opts = { ...DEFAULTS, ...options };
    this.kv = new Uint32Array(this.opts.numPages * this.opts.pageSize);
    this.written = new Uint8Array(this.kv.length);
  }

  get vocabSize(): number {
    return this.opts.vocabSize;
  }
  get numPages(): number {
    return this.opts.numPages;
  }
  get pageSize(): number {
    return this.opts.pageSize;
  }
  get maxModelLen(): number {
    return this.opts.maxModelLen;
  }
  get eosTokenIds(): readonly number[] {
    return this.opts.eosTokenIds;
  }

  /** Tokens of the batch in total (prefill chunks and decodes). */
  get tokensProcessed(): number {
    return this.calls.reduce((s, [, t]) => s + t, 0);
  }

  forward(batch: ForwardBatch): StepOutput | Promise<StepOutput> {
    const out = this.compute(batch);
    if (this.opts.delayMs <= 0) return out;
    return new Promise((resolve) => setTimeout(() => resolve(out), this.opts.delayMs));
  }

  private compute(batch: ForwardBatch): StepOutput {
    if (batch.pageSize !== this.opts.pageSize) throw new Error('fake runner: page size mismatch');
    const layout = layoutBatch(batch);
    const T = layout.numTokens;
    for (let t = 0; t < T; t++) {
      const slot = layout.slots[t]!;
      if (slot < 0 || slot >= this.kv.length)
        throw new Error(`fake runner: slot ${slot} out of range`);
      this.kv[slot] = mix(batch.tokenIds[t]!, layout.positions[t]!);
      this.written[slot] = 1;
    }
    const states = new Uint32Array(T); // context state after each new token
    let t = 0;
    for (const seq of batch.seqs) {
      let state = 0x9e3779b9;
      for (let pos = 0; pos < seq.numCached + seq.numNew; pos++) {
        state = mix(state, this.read(seq.pageTable, pos));
        if (pos >= seq.numCached) states[t++] = state;
      }
    }
    const V = this.opts.vocabSize;
    const rows = layout.logitRows;
    const logits = new Float32Array(rows.length * V);
    rows.forEach((row, r) => this.fillLogits(logits.subarray(r * V, (r + 1) * V), states[row]!));
    this.calls.push([batch.seqs.length, T]);
    if (!batch.captureRoutedExperts) return { logits };
    return { logits, routedExperts: this.route(states) };
  }

  private read(pageTable: Int32Array, pos: number): number {
    const S = this.opts.pageSize;
    const slot = pageTable[Math.floor(pos / S)]! * S + (pos % S);
    if (!this.written[slot])
      throw new Error(`fake runner: position ${pos} reads unwritten slot ${slot}`);
    return this.kv[slot]!;
  }

  private fillLogits(row: Float32Array, state: number): void {
    for (let v = 0; v < row.length; v++) row[v] = (mix(state, v + 1) / 2 ** 32) * 2;
    row[state % row.length]! += this.opts.peak;
  }

  private route(states: Uint32Array): Record<string, Int32Array> {
    const { numMoeLayers, numExperts, numExpertsPerTok: K } = this.opts;
    const out: Record<string, Int32Array> = {};
    for (let l = 0; l < numMoeLayers; l++) {
      const ids = new Int32Array(states.length * K);
      states.forEach((s, t) => {
        for (let j = 0; j < K; j++) ids[t * K + j] = mix(s, 1000 * (l + 1) + j) % numExperts;
      });
      out[String(l)] = ids;
    }
    return out;
  }
}
