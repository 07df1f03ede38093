/**
 * The CPU backend's tensor memory: one shared WebAssembly memory, so the WASM kernels can
 * read tensors in place. Shared memory is used because growing it never detaches existing
 * views (a plain memory would invalidate every live Float32Array on each grow).
 *
 * Allocation: permanent tensors (weights, KV cache) take exact sizes; scratch sizes are
 * rounded to one of four classes per power of two (≤ 25% waste) and recycled per class, so
 * steps of varying shapes reuse memory instead of growing it. When the 4 GiB wasm limit is
 * reached, allocations fall back to ordinary arrays (the JS kernels then run).
 */
import { wasm, type WasmMemory } from './wasm-api.js';

const PAGE = 65536;
const MAX_PAGES = 65536;
const ALIGN = 64;

export class WasmHeap {
  readonly memory: WasmMemory = new wasm.Memory({ initial: 16, maximum: MAX_PAGES, shared: true });
  private top = ALIGN; // offset 0 is never handed out
  private readonly freeLists = new Map<number, number[]>();
  /**
   * Every block's size by offset, negated while it is free: a block taken again or freed
   * updates its entry in place. Deleting on free and adding on take (as until session 16)
   * churned the map, ~90 deletes and adds a decode B=1 step, which V8 pays by rebuilding its
   * table now and then (~5 KB of garbage a step).
   */
  private readonly sizeOf = new Map<number, number>();
  /**
   * `memory.buffer` since the last grow: new views are made on it, and `owns` compares with
   * it before the set (a decode B=1 step makes ~100 views and asks `owns` ~600 times; the
   * getter and a set lookup each cost about what the rest of a small op's JS does).
   */
  private buffer: ArrayBufferLike = this.memory.buffer;
  private readonly buffers = new Set<ArrayBufferLike>([this.buffer]);

  /** Bytes handed out and not freed. */
  inUse = 0;

  f32(n: number, scratch = true): Float32Array {
    const off = this.take(n * 4, scratch);
    return off === null ? new Float32Array(n) : new Float32Array(this.buffer, off, n);
  }

  i32(n: number, scratch = true): Int32Array {
    const off = this.take(n * 4, scratch);
    return off === null ? new Int32Array(n) : new Int32Array(this.buffer, off, n);
  }

  /** Half-width storage (bf16 bits). */
  u16(n: number, scratch = true): Uint16Array {
    const off = this.take(n * 2, scratch);
    return off === null ? new Uint16Array(n) : new Uint16Array(this.buffer, off, n);
  }

  /**
   * True when `a` lies in this heap (so WASM kernels can address it by `a.byteOffset`). V8 may
   * hand out a new `memory.buffer` object after any grow, so every one seen is kept.
   */
  owns(a: ArrayBufferView): boolean {
    const b = a.buffer;
    return b === this.buffer || this.buffers.has(b);
  }

  /** Returns a block obtained from f32/i32 (a view of its start); other arrays are ignored. */
  free(a: ArrayBufferView): void {
    if (!this.owns(a)) return;
    const size = this.sizeOf.get(a.byteOffset);
    if (size === undefined || size < 0) return; // not a block's start, or freed already
    this.sizeOf.set(a.byteOffset, -size);
    this.inUse -= size;
    const list = this.freeLists.get(size);
    if (list) list.push(a.byteOffset);
    else this.freeLists.set(size, [a.byteOffset]);
  }

  private take(bytes: number, scratch: boolean): number | null {
    const size = scratch ? sizeClass(bytes) : Math.ceil(Math.max(bytes, 1) / ALIGN) * ALIGN;
    const reused = this.freeLists.get(size)?.pop();
    const off = reused ?? this.bump(size);
    if (off === null) return null;
    this.sizeOf.set(off, size);
    this.inUse += size;
    return off;
  }

  private bump(size: number): number | null {
    const end = this.top + size;
    const have = this.memory.buffer.byteLength;
    if (end > have) {
      const pages = Math.ceil((end - have) / PAGE);
      if (have / PAGE + pages > MAX_PAGES) return null;
      this.memory.grow(pages);
      this.buffer = this.memory.buffer;
      this.buffers.add(this.buffer);
    }
    const off = this.top;
    this.top = end;
    return off;
  }
}

/** The size classes' multipliers of a power of two. */
const CLASS_STEPS = [1, 1.25, 1.5, 1.75, 2] as const;

/**
 * Rounds up to 2^k · {1, 1.25, 1.5, 1.75}, at least 64 bytes. The power of two from
 * Math.clz32 below 2 GiB: with Math.log2 and `**` a call took ~180 ns here, ~20 µs of a
 * decode B=1 step's ~100 allocations.
 */
export function sizeClass(bytes: number): number {
  if (bytes <= ALIGN) return ALIGN;
  const p = bytes < 2 ** 31 ? 1 << (31 - Math.clz32(bytes)) : 2 ** Math.floor(Math.log2(bytes));
  for (const f of CLASS_STEPS) {
    const c = Math.ceil((p * f) / ALIGN) * ALIGN;
    if (c >= bytes) return c;
  }
  return 2 * p;
}
