/**
 * Batched sampling on the device (kernels/sampling.cu): one launch per step samples every row
 * of a [R, V] f32 logits buffer; per-sequence penalty state (output-token counts, prompt bits)
 * lives in device memory. A step stages all row parameters (plus any allowed-token masks, bias
 * lists and first-use prompt bits) in one pinned buffer, uploaded with one copy; only the
 * chosen ids and the requested logprobs come back, through pinned memory, and the host waits
 * for them without blocking the event loop (`CudaDevice.whenDone`).
 */
import type { CudaDevice, PinnedBuffer } from './device.js';
import type { KernelCache } from './kernel-cache.js';
import { launchKernel } from './kernel-launch.js';
import { SAMPLE_ROWS } from './kernel-table.js';

/** Sampling parameters of one sequence, as sampler.ts uses them. */
export interface GpuSamplingParams {
  readonly temperature: number;
  readonly topP: number;
  readonly topK: number;
  readonly minP: number;
  readonly presencePenalty: number;
  readonly frequencyPenalty: number;
  readonly repetitionPenalty: number;
}

export const MAX_TOP_LOGPROBS = 20;
const ROW_BYTES = 128;
const GREEDY_EPS = 1e-5;

/** One sequence's sampling state; its device memory is owned by the GpuSampler. */
export class GpuSequenceState {
  /** Tokens sampled so far: the Philox counter of the next draw. */
  step = 0;
  /** Device int32 [V] output counts, or 0 when no penalty is set. */
  counts = 0;
  /** Device uint32 [ceil(V/32)] prompt-presence bits, or 0. */
  promptMask = 0;
  /** The counts and prompt bits still have to be initialised (first sampled step). */
  fresh = true;
  released = false;

  constructor(
    readonly params: GpuSamplingParams,
    readonly seed: number,
    readonly promptIds: readonly number[],
  ) {}

  get hasPenalties(): boolean {
    const p = this.params;
    return p.repetitionPenalty !== 1 || p.frequencyPenalty !== 0 || p.presencePenalty !== 0;
  }
}

export interface GpuSampleRow {
  /** Row of the logits buffer. */
  readonly logitsRow: number;
  readonly state: GpuSequenceState;
  /** Top logprobs (0..20), or null for none. */
  readonly numLogprobs: number | null;
  /** ceil(V/32) words, bit t = token t allowed. */
  readonly allowedMask?: Uint32Array;
  /** Sparse logit bias, added before the penalties. */
  readonly bias?: ReadonlyArray<readonly [number, number]>;
}

export interface GpuSampleOutput {
  readonly tokenId: number;
  readonly logprob?: number;
  readonly topLogprobs?: { tokenId: number; logprob: number }[];
}

export class GpuSampler {
  private readonly maskWords: number;
  private readonly stage: PinnedBuffer;
  private readonly stageDev: number;
  private readonly outDev: number;
  private readonly outHost: PinnedBuffer;
  private readonly done: unknown;
  /** Released states' buffers, reusable once no step that may read them is in flight. */
  private readonly freeCounts: { counts: number; promptMask: number }[] = [];
  private readonly deferred: { counts: number; promptMask: number }[] = [];
  private inFlight = false;

  constructor(
    private readonly dev: CudaDevice,
    private readonly kernels: KernelCache,
    readonly vocabSize: number,
    readonly maxRows: number,
  ) {
    this.maskWords = Math.ceil(vocabSize / 32);
    // rows, then per row at most: an allowed mask, prompt bits, and bias entries (bounded below).
    const stageBytes = maxRows * (ROW_BYTES + 2 * this.maskWords * 4) + 1024 * 1024;
    this.stage = dev.pinned(stageBytes);
    this.stageDev = dev.malloc(stageBytes, 'sampler staging');
    this.outDev = dev.malloc(this.outBytes(), 'sampler output');
    this.outHost = dev.pinned(this.outBytes());
    this.done = dev.createEvent();
  }

  private outBytes(): number {
    return this.maxRows * (2 + 2 * MAX_TOP_LOGPROBS) * 4;
  }

  open(params: GpuSamplingParams, seed: number, promptIds: readonly number[]): GpuSequenceState {
    const s = new GpuSequenceState(params, seed, promptIds);
    if (s.hasPenalties) {
      const reuse = this.freeCounts.pop();
      s.counts = reuse?.counts ?? this.dev.malloc(this.vocabSize * 4, 'sampler counts');
      s.promptMask = reuse?.promptMask ?? this.dev.malloc(this.maskWords * 4, 'sampler prompt');
    }
    return s;
  }

  release(s: GpuSequenceState): void {
    if (s.released) return;
    s.released = true;
    if (s.counts === 0) return;
    (this.inFlight ? this.deferred : this.freeCounts).push({
      counts: s.counts,
      promptMask: s.promptMask,
    });
  }

  /**
   * Samples `rows` from `logits` (device f32 [R, V], modified in place). Enqueues the
   * parameter upload, the kernel and the copy back on the device's stream, then waits for
   * them asynchronously.
   */
  async sample(logits: number, rows: readonly GpuSampleRow[]): Promise<GpuSampleOutput[]> {
    if (rows.length === 0) return [];
    if (rows.length > this.maxRows)
      throw new Error(`gpu sampler: ${rows.length} rows, sized for ${this.maxRows}`);
    this.inFlight = true;
    try {
      const inits: { state: GpuSequenceState; bits: number }[] = [];
      const used = this.stageRows(rows, inits);
      this.dev.uploadAsync(this.stageDev, this.stage.address, used);
      // First use of a penalised sequence: zero counts, prompt bits from this step's staging.
      for (const { state, bits } of inits) {
        this.dev.memsetAsync(state.counts, 0, this.vocabSize * 4);
        this.dev.copyAsync(state.promptMask, bits, this.maskWords * 4);
      }
      const n = rows.length;
      const o = this.outDev;
      const M = this.maxRows;
      const topAt = o + 2 * M * 4;
      const topLpAt = topAt + M * MAX_TOP_LOGPROBS * 4;
      launchKernel(
        { dev: this.dev, kernels: this.kernels },
        SAMPLE_ROWS,
        'sample_rows',
        { grid: [n, 1, 1], block: [1024, 1, 1] },
        {
          rows: this.stageDev,
          logits,
          V: this.vocabSize,
          outIds: o,
          outLogprob: o + M * 4,
          outTopIds: topAt,
          outTopLogprob: topLpAt,
        },
      );
      const h = this.outHost.address;
      this.dev.downloadAsync(h, o, 2 * M * 4);
      const wantTop = rows.some((r) => (r.numLogprobs ?? 0) > 0);
      if (wantTop) this.dev.downloadAsync(h + 2 * M * 4, topAt, 2 * M * MAX_TOP_LOGPROBS * 4);
      this.dev.record(this.done);
      await this.dev.whenDone(this.done);
      for (const r of rows) r.state.step++;
      return this.read(rows);
    } finally {
      this.inFlight = false;
      this.freeCounts.push(...this.deferred.splice(0));
    }
  }

  private read(rows: readonly GpuSampleRow[]): GpuSampleOutput[] {
    const v = this.outHost.view;
    const M = this.maxRows;
    return rows.map((r, i) => {
      const tokenId = v.getInt32(i * 4, true);
      if (r.numLogprobs === null) return { tokenId };
      const topLogprobs: { tokenId: number; logprob: number }[] = [];
      for (let k = 0; k < r.numLogprobs; k++) {
        const at = 2 * M * 4 + (i * MAX_TOP_LOGPROBS + k) * 4;
        topLogprobs.push({
          tokenId: v.getInt32(at, true),
          logprob: v.getFloat32(at + M * MAX_TOP_LOGPROBS * 4, true),
        });
      }
      return { tokenId, logprob: v.getFloat32((M + i) * 4, true), topLogprobs };
    });
  }

  /** Writes the row structs and their side data into the pinned buffer; returns bytes used. */
  private stageRows(
    rows: readonly GpuSampleRow[],
    inits: { state: GpuSequenceState; bits: number }[],
  ): number {
    const v = this.stage.view;
    let tail = rows.length * ROW_BYTES;
    const putWords = (w: ArrayLike<number>, words: number): number => {
      const at = tail;
      if (at + words * 4 > this.stage.bytes)
        throw new Error('gpu sampler: staging buffer too small for this step');
      for (let i = 0; i < words; i++) v.setUint32(at + i * 4, w[i] ?? 0, true);
      tail += words * 4;
      return this.stageDev + at;
    };
    rows.forEach((r, i) => {
      const s = r.state;
      if (s.released) throw new Error('gpu sampler: a released sequence was sampled');
      const p = s.params;
      const greedy = p.temperature < GREEDY_EPS;
      if (s.fresh && s.counts !== 0)
        inits.push({
          state: s,
          bits: putWords(promptBits(s.promptIds, this.maskWords), this.maskWords),
        });
      s.fresh = false;
      const mask = r.allowedMask ? putWords(r.allowedMask, this.maskWords) : 0;
      if (r.allowedMask && r.allowedMask.length !== this.maskWords)
        throw new Error(
          `gpu sampler: allowed mask has ${r.allowedMask.length} words, want ${this.maskWords}`,
        );
      const bias = r.bias ?? [];
      for (const [t] of bias)
        if (!(Number.isInteger(t) && t >= 0 && t < this.vocabSize))
          throw new Error(`gpu sampler: logit bias token ${t} outside [0, ${this.vocabSize})`);
      const biasIds = bias.length
        ? putWords(
            bias.map((b) => b[0]),
            bias.length,
          )
        : 0;
      const biasVals = bias.length
        ? this.putFloats(
            bias.map((b) => b[1]),
            () => tail,
            (n) => (tail += n),
          )
        : 0;
      if (r.numLogprobs !== null && !(r.numLogprobs >= 0 && r.numLogprobs <= MAX_TOP_LOGPROBS))
        throw new Error(
          `gpu sampler: top logprobs ${r.numLogprobs} outside [0, ${MAX_TOP_LOGPROBS}]`,
        );
      const b = i * ROW_BYTES;
      const u64 = (off: number, x: number) => v.setBigUint64(b + off, BigInt(x), true);
      u64(0, s.counts);
      u64(8, s.counts !== 0 && p.repetitionPenalty !== 1 ? s.promptMask : 0);
      u64(16, mask);
      u64(24, biasIds);
      u64(32, biasVals);
      v.setBigUint64(b + 40, BigInt.asUintN(64, BigInt(s.seed)), true);
      u64(48, s.step);
      v.setFloat64(b + 56, greedy || p.temperature === 1 ? 1 : 1 / p.temperature, true);
      v.setFloat64(b + 64, p.repetitionPenalty, true);
      v.setFloat64(b + 72, p.frequencyPenalty, true);
      v.setFloat64(b + 80, p.presencePenalty, true);
      v.setFloat32(b + 88, p.topP, true);
      v.setFloat32(b + 92, p.minP, true);
      v.setInt32(b + 96, p.topK, true);
      v.setInt32(b + 100, r.numLogprobs ?? -1, true);
      v.setInt32(b + 104, bias.length, true);
      v.setInt32(b + 108, r.logitsRow, true);
      v.setInt32(b + 112, greedy ? 1 : 0, true);
    });
    return tail;
  }

  private putFloats(xs: number[], at: () => number, bump: (n: number) => void): number {
    const off = at();
    if (off + xs.length * 4 > this.stage.bytes)
      throw new Error('gpu sampler: staging buffer too small for this step');
    xs.forEach((x, i) => this.stage.view.setFloat32(off + i * 4, x, true));
    bump(xs.length * 4);
    return this.stageDev + off;
  }

  destroy(): void {
    for (const b of [...this.freeCounts, ...this.deferred]) {
      this.dev.free(b.counts, this.vocabSize * 4);
      this.dev.free(b.promptMask, this.maskWords * 4);
    }
    this.dev.free(this.stageDev, this.stage.bytes);
    this.dev.free(this.outDev, this.outBytes());
  }
}

/** Bit t of word t>>>5 set for every prompt token t. */
function promptBits(ids: readonly number[], words: number): Uint32Array {
  const bits = new Uint32Array(words);
  for (const t of ids) bits[t >>> 5]! |= 1 << (t & 31);
  return bits;
}
