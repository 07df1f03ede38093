import type { KvCacheDtype } from '../../model/minimax-m3/kv-cache.js';
import type { LoadFormat } from '../../model/load-model.js';
import type { Quantization } from '../../model/minimax-m3/quantize-weights.js';
import type { ForwardBatch, SeqInBatch } from '../../backend/forward-batch.js';
import type { AllReduceFusion } from '../../parallel/allreduce-placement.js';
import type { ReductionVariant } from '../../parallel/reduction-semantics.js';
import type { CommName } from './device-map.js';

/**
 * The typed messages rank 0 sends the other ranks on the control channel, and their binary
 * encoding. A rank never receives a method name: it receives one of these variants and
 * switches on `kind` exhaustively.
 */
export interface RankSpec {
  readonly modelDir: string;
  readonly backend: string;
  readonly comm: CommName;
  /** CUDA: the device ordinal of each local rank of a host (`--gpu-ids`), several may share one. */
  readonly gpuIds?: readonly number[];
  readonly tp: number;
  readonly ep: boolean;
  readonly sp: boolean;
  readonly allReduceFusion: AllReduceFusion;
  readonly fuseSharedExperts: boolean;
  /** `--load-format` (default auto). */
  readonly loadFormat?: LoadFormat;
  /** `--quantization` (null or absent: weights as stored). */
  readonly quantization?: Quantization | null;
  /** `--kv-cache-dtype` resolved (absent: bf16). */
  readonly kvCacheDtype?: KvCacheDtype;
  /** Threads of each rank's CPU backend (`--cpu-threads`). */
  readonly cpuThreads?: number;
  /** What the CPU backend's KV caches hold (`--kv-cache-dtype bf16`: bf16; else float32). */
  readonly cpuKvCacheDtype?: 'f32' | 'bf16';
  /** Fused-versus-native trace of every deferred reduction (`--allreduce-trace DIR`). */
  readonly allReduceTrace?: { readonly dir: string; readonly variant: ReductionVariant };
  /** Time every collective, with a device sync on each side (benchmarks only). */
  readonly profileComm?: boolean;
}

export type StepMessage =
  | { readonly kind: 'init'; readonly spec: RankSpec }
  | {
      readonly kind: 'alloc-kv';
      readonly cacheId: number;
      readonly numPages: number;
      readonly pageSize: number;
    }
  | {
      readonly kind: 'forward';
      readonly cacheId: number;
      readonly stepId: number;
      readonly batch: ForwardBatch;
    }
  | { readonly kind: 'free-kv'; readonly cacheId: number }
  | {
      /** Every rank runs `iters` all-reduces of `elems` elements (after `warmup` more). */
      readonly kind: 'allreduce-bench';
      readonly elems: number;
      readonly dtype: 'bf16' | 'f32';
      readonly warmup: number;
      readonly iters: number;
    }
  | { readonly kind: 'shutdown' };

/** What a rank reports back to rank 0. */
export type StatusMessage =
  | { readonly kind: 'ready'; readonly rank: number }
  | {
      readonly kind: 'failed';
      readonly rank: number;
      readonly message: string;
      /** The rank failed because it lost another rank (a consequence, not the cause). */
      readonly secondary: boolean;
    };

const TAG: Record<StepMessage['kind'], number> = {
  init: 1,
  'alloc-kv': 2,
  forward: 3,
  'free-kv': 4,
  shutdown: 5,
  'allreduce-bench': 6,
};

export function encodeStep(m: StepMessage): Uint8Array {
  const w = new ByteWriter();
  w.u8(TAG[m.kind]);
  switch (m.kind) {
    case 'init':
      w.text(JSON.stringify(m.spec));
      break;
    case 'alloc-kv':
      w.u32(m.cacheId).u32(m.numPages).u32(m.pageSize);
      break;
    case 'forward':
      w.u32(m.cacheId).u32(m.stepId);
      writeBatch(w, m.batch);
      break;
    case 'free-kv':
      w.u32(m.cacheId);
      break;
    case 'allreduce-bench':
      w.u32(m.elems)
        .u8(m.dtype === 'bf16' ? 1 : 0)
        .u32(m.warmup)
        .u32(m.iters);
      break;
    case 'shutdown':
      break;
  }
  return w.finish();
}

export function decodeStep(bytes: Uint8Array): StepMessage {
  const r = new ByteReader(bytes);
  const tag = r.u8();
  switch (tag) {
    case TAG.init:
      return { kind: 'init', spec: JSON.parse(r.text()) as RankSpec };
    case TAG['alloc-kv']:
      return { kind: 'alloc-kv', cacheId: r.u32(), numPages: r.u32(), pageSize: r.u32() };
    case TAG.forward:
      return { kind: 'forward', cacheId: r.u32(), stepId: r.u32(), batch: readBatch(r) };
    case TAG['free-kv']:
      return { kind: 'free-kv', cacheId: r.u32() };
    case TAG.shutdown:
      return { kind: 'shutdown' };
    case TAG['allreduce-bench']:
      return {
        kind: 'allreduce-bench',
        elems: r.u32(),
        dtype: r.u8() === 1 ? 'bf16' : 'f32',
        warmup: r.u32(),
        iters: r.u32(),
      };
    default:
      throw new Error(`step message: unknown tag ${tag}`);
  }
}

export function encodeStatus(m: StatusMessage): Uint8Array {
  return Buffer.from(JSON.stringify(m), 'utf8');
}

export function decodeStatus(bytes: Uint8Array): StatusMessage {
  const m = JSON.parse(Buffer.from(bytes).toString('utf8')) as StatusMessage;
  if (m.kind !== 'ready' && m.kind !== 'failed') throw new Error('status message: unknown kind');
  return m;
}

/** ForwardBatch: T, token ids, sequences (cached, new, page table), page size, flags. */
function writeBatch(w: ByteWriter, b: ForwardBatch): void {
  w.i32s(b.tokenIds).u32(b.seqs.length);
  for (const s of b.seqs)
    w.u32(s.numCached)
      .u32(s.numNew)
      .i32s(s.pageTable)
      .u8(s.allLogits ? 1 : 0);
  w.u32(b.pageSize)
    .u8(b.logitsFor === 'all' ? 1 : 0)
    .u8(b.captureRoutedExperts ? 1 : 0);
}

function readBatch(r: ByteReader): ForwardBatch {
  const tokenIds = r.i32s();
  const seqs: SeqInBatch[] = Array.from({ length: r.u32() }, () => ({
    numCached: r.u32(),
    numNew: r.u32(),
    pageTable: r.i32s(),
    ...(r.u8() === 1 ? { allLogits: true } : {}),
  }));
  const pageSize = r.u32();
  const logitsFor = r.u8() === 1 ? 'all' : 'last';
  return { tokenIds, seqs, pageSize, logitsFor, captureRoutedExperts: r.u8() === 1 };
}

class ByteWriter {
  private parts: Buffer[] = [];

  u8(v: number): this {
    this.parts.push(Buffer.from([v]));
    return this;
  }

  u32(v: number): this {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v >>> 0);
    this.parts.push(b);
    return this;
  }

  i32s(a: Int32Array): this {
    this.u32(a.length);
    this.parts.push(Buffer.from(a.buffer, a.byteOffset, a.byteLength));
    return this;
  }

  text(s: string): this {
    const b = Buffer.from(s, 'utf8');
    this.u32(b.length);
    this.parts.push(b);
    return this;
  }

  finish(): Uint8Array {
    return Buffer.concat(this.parts);
  }
}

class ByteReader {
  private at = 0;
  private readonly buf: Buffer;

  constructor(bytes: Uint8Array) {
    this.buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.at++);
  }

  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.at);
    this.at += 4;
    return v;
  }

  i32s(): Int32Array {
    const n = this.u32();
    this.need(4 * n);
    const out = new Int32Array(n);
    new Uint8Array(out.buffer).set(this.buf.subarray(this.at, this.at + 4 * n));
    this.at += 4 * n;
    return out;
  }

  text(): string {
    const n = this.u32();
    this.need(n);
    const s = this.buf.toString('utf8', this.at, this.at + n);
    this.at += n;
    return s;
  }

  private need(n: number): void {
    if (this.at + n > this.buf.length) throw new Error('step message: truncated');
  }
}
