import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { goldenCase } from '../../test/golden-dir.js';
import { CpuBackend } from '../backend/cpu/cpu-backend.js';
import type { ForwardBatch } from '../backend/forward-batch.js';
import { e4m3RoundTrip } from '../backend/kv-scale.js';
import { F8E4M3_TABLE } from '../tensor/dtype.js';
import { loadModel } from './load-model.js';
import { resolveKvCacheDtype } from './minimax-m3/kv-cache.js';
import type { MiniMaxM3Model } from './minimax-m3/minimax-m3-model.js';
import { runForward, singleSequenceCache } from './run-forward.js';
import { writeSafetensors, type TensorData } from './weights/safetensors-writer.js';

const dir = goldenCase('tiny-moe'); // MSA layers: index keys in the cache too
const denseDir = goldenCase('tiny-dense');
const idsOf = (d: string) =>
  (JSON.parse(readFileSync(`${d}/expect.json`, 'utf8')) as { ids: number[] }).ids;
const ids = idsOf(dir);

describe('e4m3RoundTrip (what an FP8 KV cache holds)', () => {
  it('keeps every E4M3 value times the scale and rounds others to nearest even', () => {
    for (const v of F8E4M3_TABLE) if (Number.isFinite(v)) expect(e4m3RoundTrip(v, 1)).toBe(v);
    expect(e4m3RoundTrip(1.0625, 1)).toBe(1); // halfway between 1 and 1.125: even
    expect(e4m3RoundTrip(1.1875, 1)).toBe(1.25);
    expect(e4m3RoundTrip(1.07, 1)).toBe(1.125);
    expect(e4m3RoundTrip(0.3, 0.25)).toBe(0.3125); // 1.2 -> 1.25, times 0.25
    expect(e4m3RoundTrip(3 * 2 ** -10, 1)).toBe(2 ** -8); // subnormal, half-even
  });

  it('saturates at ±448 × scale, as vLLM does, and keeps NaN', () => {
    expect(e4m3RoundTrip(1e6, 1)).toBe(448);
    expect(e4m3RoundTrip(-1e6, 1)).toBe(-448);
    expect(e4m3RoundTrip(Infinity, 2)).toBe(896);
    expect(e4m3RoundTrip(460, 1)).toBe(448);
    expect(e4m3RoundTrip(1000, 4)).toBe(1024); // 250 is between 240 and 256 (step 16): 256
    expect(Number.isNaN(e4m3RoundTrip(NaN, 1))).toBe(true);
  });
});

describe('CPU writeCache', () => {
  const b = new CpuBackend();
  const meta = b.prepareBatch({
    tokenIds: Int32Array.of(0, 0),
    seqs: [{ numCached: 0, numNew: 2, pageTable: Int32Array.of(1) }],
    pageSize: 4,
    logitsFor: 'last',
  });
  const x = b.upload(Float32Array.of(0.3, -700, 1.07, 5e-4, 2, 3, 4, 5), [2, 4], 'bf16');

  it('an f8e4m3 cache stores the E4M3 round trip of x / scale at each slot', () => {
    const cache = b.alloc([2, 4, 4], 'f8e4m3');
    b.writeCache(cache, x, meta, 0.5);
    const got = b.readF32(cache);
    const want = [0.3, -700, 1.07, 5e-4].map((v) => e4m3RoundTrip(v, 0.5));
    expect(Array.from(got.subarray(16, 20))).toEqual(want);
    expect(want[1]).toBe(-224); // saturated: 448 x 0.5
    expect(got[0]).toBe(0); // page 0 untouched
  });

  it('a bf16 cache keeps x and takes no scale; an FP8 cache takes a positive one', () => {
    const cache = b.alloc([2, 4, 4], 'bf16');
    b.writeCache(cache, x, meta);
    expect(b.readF32(cache)[16]).toBe(Math.fround(0.3));
    expect(() => b.writeCache(cache, x, meta, 2)).toThrow('bf16 cache takes no scale');
    expect(() => b.writeCache(b.alloc([2, 4, 4], 'f8e4m3'), x, meta, 0)).toThrow(
      'FP8 KV scale must be positive',
    );
  });
});

function maxRel(a: number[][], b: number[][]): number {
  let m = 0;
  a.forEach((row, t) => {
    let num = 0;
    let den = 0;
    row.forEach((v, i) => {
      num = Math.max(num, Math.abs(v - b[t]![i]!));
      den = Math.max(den, Math.abs(b[t]![i]!));
    });
    m = Math.max(m, num / den);
  });
  return m;
}

async function stepwise(model: MiniMaxM3Model): Promise<number[][]> {
  const { kv, pageTable } = singleSequenceCache(model, ids.length);
  const rows: number[][] = [];
  for (let pos = 0; pos < ids.length; pos++) {
    const batch: ForwardBatch = {
      tokenIds: Int32Array.of(ids[pos]!),
      seqs: [{ numCached: pos, numNew: 1, pageTable }],
      pageSize: kv.pageSize,
      logitsFor: 'all',
    };
    rows.push(Array.from((await model.forward(batch, kv)).logits));
  }
  return rows;
}

describe('--kv-cache-dtype fp8 on the CPU', () => {
  const load = (flag: 'auto' | 'fp8', from = dir) =>
    loadModel(from, { backend: new CpuBackend(), kvCacheDtype: resolveKvCacheDtype(flag) });

  it('auto is the model dtype: bf16 caches, as before', async () => {
    const m = await load('auto');
    const kv = m.allocKv(2, 4);
    expect(kv.dtype).toBe('bf16');
    expect(kv.layers.every((l) => l.k.dtype === 'bf16' && l.kScale === 1)).toBe(true);
  });

  it('stores K, V and the MSA index keys as E4M3 (scale 1.0 without checkpoint scales)', async () => {
    const m = await load('fp8');
    const kv = m.allocKv(2, 4);
    expect(kv.dtype).toBe('fp8_e4m3');
    expect(kv.layers.every((l) => l.k.dtype === 'f8e4m3' && l.v.dtype === 'f8e4m3')).toBe(true);
    expect(kv.layers.some((l) => l.indexK?.dtype === 'f8e4m3')).toBe(true);
    expect(kv.layers.every((l) => l.kScale === 1 && l.vScale === 1)).toBe(true);
  });

  it("changes the dense model's logits by the rounding only", async () => {
    const dIds = idsOf(denseDir);
    const ref = (await runForward(await load('auto', denseDir), dIds)).logits;
    const rel = maxRel((await runForward(await load('fp8', denseDir), dIds)).logits, ref);
    expect(rel).toBeGreaterThan(1e-3); // the cache really is rounded (2^-4 relative steps)
    expect(rel).toBeLessThan(0.1); // (the MoE model's routes flip on such changes)
  });

  it('decode reads what prefill wrote: each K/V is rounded once, when written', async () => {
    const fp8 = await load('fp8');
    const full = (await runForward(fp8, ids)).logits;
    expect(maxRel(full, (await runForward(await load('auto'), ids)).logits)).toBeGreaterThan(1e-3);
    expect(maxRel(await stepwise(fp8), full)).toBeLessThan(1e-5);
  });
});

/** tiny-dense with a second shard holding KV-cache scales (no index: every *.safetensors is read). */
function withScales(tensors: TensorData[]): string {
  const d = mkdtempSync(join(tmpdir(), 'kv-scales-'));
  copyFileSync(join(denseDir, 'config.json'), join(d, 'config.json'));
  copyFileSync(join(denseDir, 'model.safetensors'), join(d, 'model-00001-of-00002.safetensors'));
  writeSafetensors(join(d, 'model-00002-of-00002.safetensors'), tensors);
  return d;
}
const scalar = (name: string, v: number, shape: number[] = []): TensorData => ({
  name,
  dtype: 'F32',
  shape,
  data: new Float32Array(
    Math.max(
      1,
      shape.reduce((a, b) => a * b, 1),
    ),
  ).fill(v),
});

describe('FP8 KV scales from the checkpoint', () => {
  it('reads k_scale / v_scale (HF) and k_proj.output_scale, 1.0 where a layer has none', async () => {
    const d = withScales([
      scalar('model.layers.0.self_attn.k_scale', 0.125),
      scalar('model.layers.0.self_attn.v_scale', 0.5, [1]),
      scalar('model.layers.1.self_attn.k_proj.output_scale', 2),
    ]);
    try {
      const load = (kvCacheDtype: 'bf16' | 'fp8_e4m3') =>
        loadModel(d, { backend: new CpuBackend(), kvCacheDtype });
      const m = await load('fp8_e4m3');
      expect(m.kvScales.slice(0, 2)).toEqual([
        { k: 0.125, v: 0.5 },
        { k: 2, v: 1 },
      ]);
      const kv = m.allocKv(1, 16);
      expect([kv.layers[0]!.kScale, kv.layers[0]!.vScale, kv.layers[1]!.kScale]).toEqual([
        0.125, 0.5, 2,
      ]);
      // bf16 caches ignore the scales (as vLLM does).
      expect((await load('bf16')).allocKv(1, 16).layers[0]!.kScale).toBe(1);
      const dIds = idsOf(denseDir);
      const scaled = (await runForward(m, dIds)).logits;
      const plain = await loadModel(denseDir, {
        backend: new CpuBackend(),
        kvCacheDtype: 'fp8_e4m3',
      });
      // Other scales round K and V on another grid.
      expect(maxRel(scaled, (await runForward(plain, dIds)).logits)).toBeGreaterThan(1e-4);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });

  it('refuses a non-scalar or non-positive scale, naming the file and tensor', async () => {
    for (const [t, msg] of [
      [
        scalar('model.layers.0.self_attn.k_scale', 1, [2]),
        'per-tensor KV-cache scale is one value',
      ],
      [scalar('model.layers.1.self_attn.v_scale', -1), 'must be positive and finite'],
    ] as const) {
      const d = withScales([t]);
      try {
        await expect(
          loadModel(d, { backend: new CpuBackend(), kvCacheDtype: 'fp8_e4m3' }),
        ).rejects.toThrow(
          new RegExp(`model-00002-of-00002.safetensors: tensor "${t.name}": .*${msg}`),
        );
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    }
  });
});
