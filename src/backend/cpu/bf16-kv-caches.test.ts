import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { assembleWat, fmaVariant, kvBf16Variant } from '../../../scripts/assemble-wat.mjs';
import { f32ToBf16Into } from '../../tensor/dtype.js';
import { layoutBatch, type ForwardBatch } from '../forward-batch.js';
import { CpuKernels } from './wasm/cpu-kernels.js';
import {
  ATTENTION_KV16_FMA_WASM_BASE64,
  ATTENTION_KV16_WASM_BASE64,
  BF16_ROWS_WASM_BASE64,
} from './wasm/kernels-wasm.js';

const wat = (f: string): string => readFileSync(new URL(`./wasm/${f}`, import.meta.url), 'utf8');
const b64 = async (text: string): Promise<string> =>
  Buffer.from(await assembleWat(text)).toString('base64');

describe('bf16 caches on the CPU: kernels', () => {
  it('embeds the bytes bf16-rows.wat and the kv16 variants of attention.wat assemble to', async () => {
    expect(await b64(wat('bf16-rows.wat'))).toBe(BF16_ROWS_WASM_BASE64);
    expect(await b64(kvBf16Variant(wat('attention.wat')))).toBe(ATTENTION_KV16_WASM_BASE64);
    const fma = kvBf16Variant(fmaVariant(wat('attention.wat'), false));
    expect(await b64(fma)).toBe(ATTENTION_KV16_FMA_WASM_BASE64);
  });

  it("round_bf16_rows gives f32ToBf16Into's bits (ties to even, NaN quiet), only the step's rows", () => {
    const k = new CpuKernels();
    const W = 8;
    const special = [1 + 2 ** -8, 1 + 3 * 2 ** -8, -0, Infinity, -Infinity, NaN, 1e-40, -3e38];
    const data = k.heap.f32(6 * W);
    for (let i = 0; i < data.length; i++) data[i] = Math.sin(i * 1.7) * 10 ** ((i % 9) - 4);
    data.set(special, 3 * W);
    const bits = new Uint32Array(data.buffer, data.byteOffset, data.length);
    bits[3 * W + 5] = 0x7f800001; // a signalling NaN: quieted
    const before = Float32Array.from(data);
    const copy = k.heap.u16(data.length);
    copy.fill(0xdead);
    // one sequence whose two new tokens sit in slots 3 and 1 (page table 1, 0; page size 2)
    const batch: ForwardBatch = {
      tokenIds: new Int32Array(2),
      seqs: [{ numCached: 1, numNew: 2, pageTable: Int32Array.of(1, 0) }],
      pageSize: 2,
      logitsFor: 'last',
    };
    const layout = layoutBatch(batch);
    expect(Array.from(layout.slots)).toEqual([3, 0]);
    expect(k.roundBf16Rows(data, copy, batch, layout, W)).toBe(true);
    const want = new Uint16Array(data.length);
    f32ToBf16Into(before, want);
    for (let r = 0; r < 6; r++)
      for (let d = 0; d < W; d++) {
        const i = r * W + d;
        if (r === 3 || r === 0) {
          expect(copy[i], `${i}`).toBe(want[i]);
          expect(bits[i], `${i}`).toBe((want[i]! << 16) >>> 0);
        } else {
          expect(copy[i]).toBe(0xdead);
          expect(Object.is(data[i], before[i])).toBe(true);
        }
      }
    expect(Array.from(copy.subarray(3 * W, 3 * W + 3))).toEqual([0x3f80, 0x3f82, 0x8000]);
    expect(copy[3 * W + 5]).toBe(0x7fc0);
    k.close();
  });
});
