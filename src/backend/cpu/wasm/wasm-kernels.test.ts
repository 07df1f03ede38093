import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assembleWat, bf16Variant, fmaVariant } from '../../../../scripts/assemble-wat.mjs';
import { CpuBackend } from '../cpu-backend.js';
import { widenBf16 } from '../cpu-tensor.js';
import { matmulF32 } from '../ops/matmul.js';
import { CpuKernels } from './cpu-kernels.js';
import {
  ATTENTION_FMA_WASM_BASE64,
  ATTENTION_WASM_BASE64,
  MATMUL_BF16_WASM_BASE64,
  MATMUL_WASM_BASE64,
} from './kernels-wasm.js';
import { sizeClass } from './wasm-heap.js';

function filled(k: CpuKernels, n: number, seed: number): Float32Array {
  const a = k.heap.f32(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    a[i] = s / 2 ** 31 - 0.5;
  }
  return a;
}

describe('WASM SIMD matmul', () => {
  it('embeds exactly the bytes matmul.wat assembles to (run scripts/build-wasm.mjs after editing)', async () => {
    const wat = readFileSync(new URL('./matmul.wat', import.meta.url), 'utf8');
    const attn = readFileSync(new URL('./attention.wat', import.meta.url), 'utf8');
    expect(Buffer.from(await assembleWat(attn)).toString('base64')).toBe(ATTENTION_WASM_BASE64);
    const attnFma = await assembleWat(fmaVariant(attn, false));
    expect(Buffer.from(attnFma).toString('base64')).toBe(ATTENTION_FMA_WASM_BASE64);
    const bytes = await assembleWat(wat);
    expect(Buffer.from(bytes).toString('base64')).toBe(MATMUL_WASM_BASE64);
    const bf16 = await assembleWat(bf16Variant(wat));
    expect(Buffer.from(bf16).toString('base64')).toBe(MATMUL_BF16_WASM_BASE64);
  });

  it.each([
    [1, 1, 4],
    [1, 7, 8],
    [2, 4, 4],
    [3, 9, 12],
    [5, 33, 64],
    [17, 260, 96],
  ])('matches the float64 JS kernel for M=%i N=%i K=%i', (M, N, K) => {
    const k = new CpuKernels();
    const x = filled(k, M * K, 1);
    const w = filled(k, N * K, 2);
    const got = k.heap.f32(M * N);
    const ref = new Float32Array(M * N);
    k.matmul(got, x, w, M, N, K);
    matmulF32(ref, x, w, M, N, K);
    for (let i = 0; i < M * N; i++)
      expect(Math.abs(got[i]! - ref[i]!)).toBeLessThan(1e-5 * Math.sqrt(K));
  });

  it('gives each row bit-identical results whatever the batch around it (batch invariance)', () => {
    const k = new CpuKernels();
    const [M, N, K] = [7, 13, 32];
    const x = filled(k, M * K, 3);
    const w = filled(k, N * K, 4);
    const all = k.heap.f32(M * N);
    k.matmul(all, x, w, M, N, K);
    for (let i = 0; i < M; i++) {
      const one = k.heap.f32(N);
      k.matmul(one, x.subarray(i * K, (i + 1) * K), w, 1, N, K);
      expect(Array.from(one)).toEqual(Array.from(all.subarray(i * N, (i + 1) * N)));
    }
  });

  it('falls back to the JS kernel for operands outside the heap or K not a multiple of 4', () => {
    const k = new CpuKernels();
    const x = new Float32Array([1, 2, 3]);
    const w = new Float32Array([4, 5, 6, 1, 1, 1]);
    const out = new Float32Array(2);
    k.matmul(out, x, w, 1, 2, 3);
    expect(Array.from(out)).toEqual([32, 6]);
  });
});

describe('bf16 weights', () => {
  /** A heap u16 array of bf16 bits of values in [−0.5, 0.5). */
  function bf16Filled(k: CpuKernels, n: number, seed: number): Uint16Array {
    const a = k.heap.u16(n);
    const f = new Float32Array(1);
    const bits = new Uint32Array(f.buffer);
    let s = seed;
    for (let i = 0; i < n; i++) {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      f[0] = s / 2 ** 31 - 0.5;
      a[i] = bits[0]! >>> 16;
    }
    return a;
  }

  it.each([
    [1, 1030, 64, 1],
    [5, 33, 96, 1],
    [17, 260, 128, 2],
    [64, 512, 256, 2],
  ])(
    'matmul_bf16 M=%i N=%i K=%i on %i thread(s): the same bits as the f32 kernel on the widened weights',
    (M, N, K, threads) => {
      const k = new CpuKernels({ threads, minParallelFlops: 0 });
      const x = filled(k, M * K, 1);
      const wh = bf16Filled(k, N * K, 2);
      const wf = k.heap.f32(N * K);
      widenBf16(wh, wf);
      const a = k.heap.f32(M * N);
      const b = k.heap.f32(M * N);
      k.matmul(a, x, wh, M, N, K);
      k.matmul(b, x, wf, M, N, K);
      k.close();
      expect(Array.from(a)).toEqual(Array.from(b));
      expect(a.some((v) => v !== 0)).toBe(true);
    },
  );
});

describe('bf16 weight copies in the backend', () => {
  it('multiplies by a half-width copy of an exactly-bf16 weight, with the float32 bits', () => {
    const b = new CpuBackend();
    const [M, N, K] = [3, 64, 32];
    const wv = Float32Array.from({ length: N * K }, (_, i) => ((i * 37) % 61) / 16 - 2); // bf16-exact
    const xv = Float32Array.from({ length: M * K }, (_, i) => Math.sin(i));
    const x = b.upload(xv, [M, K], 'f32');
    const wb = b.upload(wv, [N, K], 'bf16');
    const wf = b.upload(wv, [N, K], 'f32'); // dtype f32: never copied
    const [o1, o2] = [b.alloc([M, N], 'f32'), b.alloc([M, N], 'f32')];
    const before = b.bytesInUse;
    b.matmul(o1, x, wb);
    expect(b.bytesInUse - before).toBe(N * K * 2); // the bf16 copy
    b.matmul(o2, x, wf);
    expect(Array.from(b.readF32(o1))).toEqual(Array.from(b.readF32(o2)));
    // a host write drops the copy: the next matmul sees the new values
    b.write(b.rows(wb, 0, 1), new Float32Array(K).fill(1));
    b.matmul(o1, x, wb);
    const row0 = Array.from(b.readF32(o1)).filter((_, i) => i % N === 0);
    row0.forEach((v, m) =>
      expect(v).toBeCloseTo(
        xv.subarray(m * K, (m + 1) * K).reduce((a, c) => a + c, 0),
        4,
      ),
    );
    // inexact values get a float32 copy (packed in panels for the register-blocked kernel)
    const wi = b.upload(
      wv.map((v) => v + 1e-3),
      [N, K],
      'bf16',
    );
    const mid = b.bytesInUse;
    b.matmul(o1, x, wi);
    expect(b.bytesInUse - mid).toBe(N * K * 4);
  });
});

describe('WasmHeap', () => {
  it('recycles freed scratch blocks of the same size class', () => {
    const k = new CpuKernels();
    const a = k.heap.f32(1000);
    const off = a.byteOffset;
    k.heap.free(a);
    const b = k.heap.f32(990);
    expect(b.byteOffset).toBe(off);
    expect(k.heap.inUse).toBe(sizeClass(4000));
  });

  it('ignores a second free of a block and views not at a block start', () => {
    const k = new CpuKernels();
    const a = k.heap.f32(1000);
    const b = k.heap.f32(1000);
    k.heap.free(a.subarray(4)); // not a block's start
    expect(k.heap.inUse).toBe(2 * sizeClass(4000));
    k.heap.free(a);
    k.heap.free(a); // freed already: not listed twice
    expect(k.heap.inUse).toBe(sizeClass(4000));
    const c = k.heap.f32(1000);
    const d = k.heap.f32(1000);
    expect(c.byteOffset).toBe(a.byteOffset);
    expect([a.byteOffset, b.byteOffset]).not.toContain(d.byteOffset); // a new block
    k.heap.free(c); // taken again: freed again
    expect(k.heap.inUse).toBe(2 * sizeClass(4000));
  });

  it('keeps earlier views valid when the memory grows', () => {
    const k = new CpuKernels();
    const a = k.heap.f32(16, false);
    a.fill(7);
    k.heap.f32(8 * 2 ** 20); // 32 MiB forces a grow
    expect(Array.from(a)).toEqual(new Array<number>(16).fill(7));
  });

  it('size classes are the smallest 2^k · {1, 1.25, 1.5, 1.75, 2} in 64-byte units that fit', () => {
    const spec = (n: number): number => {
      if (n <= 64) return 64;
      const p = 2 ** Math.floor(Math.log2(n));
      const fits = [1, 1.25, 1.5, 1.75, 2].map((f) => Math.ceil((p * f) / 64) * 64);
      return fits.find((c) => c >= n)!;
    };
    const sizes = [1, 64, 65, 100, 127, 128, 129, 160, 161, 4095, 4096, 4097, 123457, 2 ** 30 - 1];
    for (const n of [...sizes, 2 ** 30, 2 ** 31 - 1, 2 ** 31, 3e9])
      expect(sizeClass(n), `${n}`).toBe(spec(n));
    expect(sizeClass(100)).toBe(128);
    expect(sizeClass(4097)).toBe(5120);
  });

  it('size classes waste at most 25%', () => {
    for (const n of [65, 100, 1000, 4097, 123457, 10 ** 7]) {
      const c = sizeClass(n);
      expect(c).toBeGreaterThanOrEqual(n);
      expect(c).toBeLessThanOrEqual(Math.max(64, n * 1.25 + 64));
    }
  });
});
