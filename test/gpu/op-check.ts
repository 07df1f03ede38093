/**
 * Every Backend op on the CUDA backend against the CPU (float32) reference, on random inputs
 * rounded to bf16 first so both sides see the same values. Float outputs: ‖Δ‖/‖ref‖ under a
 * bf16-sized limit; integer outputs (router ids, MSA blocks): mismatching entries counted.
 */
import type { Backend, BatchMeta, ExpertWeights } from '../../src/backend/backend.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import type { DType } from '../../src/tensor/dtype.js';
import type { Shape } from '../../src/tensor/shape.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { countDiff, randArray, relErr, type Row } from './check-util.js';

type Pair = { cpu: Tensor; gpu: Tensor };

class Both {
  constructor(
    readonly cpu: Backend,
    readonly gpu: Backend,
  ) {}

  up(data: Float32Array | Int32Array, shape: Shape, dtype: DType): Pair {
    return { cpu: this.cpu.upload(data, shape, dtype), gpu: this.gpu.upload(data, shape, dtype) };
  }

  rand(shape: Shape, dtype: DType, seed: number, a = 1): Pair {
    const n = shape.reduce((x, y) => x * y, 1);
    return this.up(randArray(n, seed, a, dtype === 'bf16'), shape, dtype);
  }

  zeros(shape: Shape, dtype: DType): Pair {
    return { cpu: this.cpu.alloc(shape, dtype), gpu: this.gpu.alloc(shape, dtype) };
  }

  meta(batch: ForwardBatch): { cpu: BatchMeta; gpu: BatchMeta } {
    return { cpu: this.cpu.prepareBatch(batch), gpu: this.gpu.prepareBatch(batch) };
  }

  rel(p: Pair): number {
    return relErr(this.gpu.readF32(p.gpu), this.cpu.readF32(p.cpu));
  }

  diff(p: Pair): number {
    return countDiff(this.gpu.readI32(p.gpu), this.cpu.readI32(p.cpu));
  }
}

const BF16_LIMIT = 1e-2;

function floatRow(check: string, err: number, limit = BF16_LIMIT): Row {
  return { check, value: err.toExponential(2), limit: limit.toExponential(0), pass: err <= limit };
}

function intRow(check: string, diff: number, total: number, allowed = 0): Row {
  return { check, value: `${diff}/${total}`, limit: `${allowed}`, pass: diff <= allowed };
}

/** Three sequences with cached context and shuffled pages, page size S. */
function makeBatch(S: number, vocab: number): ForwardBatch {
  const spec = [
    { numCached: 70, numNew: 5 },
    { numCached: 0, numNew: 9 },
    { numCached: 300, numNew: 1 },
  ];
  let nextPage = 0;
  const order = Array.from({ length: 64 }, (_, i) => (i * 37) % 64);
  const seqs = spec.map((s) => {
    const pages = Math.ceil((s.numCached + s.numNew) / S);
    const pageTable = Int32Array.from({ length: pages }, () => order[nextPage++]!);
    return { ...s, pageTable };
  });
  const T = spec.reduce((n, s) => n + s.numNew, 0);
  return {
    tokenIds: Int32Array.from({ length: T }, (_, i) => (i * 7919) % vocab),
    seqs,
    pageSize: S,
    logitsFor: 'last',
  };
}

export function checkOps(cpu: Backend, gpu: Backend): Row[] {
  const b = new Both(cpu, gpu);
  const rows: Row[] = [];
  const S = 16;
  const P = 64;
  const batch = makeBatch(S, 1000);
  const T = batch.tokenIds.length;
  const m = b.meta(batch);
  const run = (name: string, f: () => Row | Row[]): void => {
    try {
      const r = f();
      rows.push(...(Array.isArray(r) ? r : [r]));
    } catch (e) {
      rows.push({ check: name, value: 'error', limit: '-', pass: false });
      console.error(`${name}: ${(e as Error).stack ?? String(e)}`);
    }
  };

  run('embedding', () => {
    const table = b.rand([1000, 256], 'bf16', 1);
    const out = b.zeros([T, 256], 'bf16');
    cpu.embedding(out.cpu, table.cpu, m.cpu);
    gpu.embedding(out.gpu, table.gpu, m.gpu);
    return floatRow('embedding [T,256] bf16', b.rel(out), 0);
  });

  run('rmsNorm', () =>
    [64, 6144].map((n) => {
      const x = b.rand([T, 4 * n], 'bf16', 2);
      const w = b.rand([n], 'f32', 3, 0.1);
      const out = b.zeros([T, 4 * n], 'bf16');
      cpu.rmsNorm(out.cpu, x.cpu, w.cpu, 1e-6);
      gpu.rmsNorm(out.gpu, x.gpu, w.gpu, 1e-6);
      return floatRow(`rmsNorm rows of ${n}`, b.rel(out));
    }),
  );

  run('addRmsNorm', () =>
    [128, 6144]
      .map((n) => {
        const r = b.rand([T, n], 'bf16', 4);
        const x = b.rand([T, n], 'bf16', 5);
        const w = b.rand([n], 'f32', 6, 0.1);
        const out = b.zeros([T, n], 'bf16');
        cpu.addRmsNorm(out.cpu, r.cpu, x.cpu, w.cpu, 1e-6);
        gpu.addRmsNorm(out.gpu, r.gpu, x.gpu, w.gpu, 1e-6);
        return [
          floatRow(`addRmsNorm out, D=${n}`, b.rel(out)),
          floatRow(`addRmsNorm residual, D=${n}`, b.rel(r)),
        ];
      })
      .flat(),
  );

  run('matmul', () => {
    const x = b.rand([T, 512], 'bf16', 7);
    const w = b.rand([384, 512], 'bf16', 8, 0.05);
    const o1 = b.zeros([T, 384], 'bf16');
    cpu.matmul(o1.cpu, x.cpu, w.cpu);
    gpu.matmul(o1.gpu, x.gpu, w.gpu);
    const o2 = b.zeros([T, 384], 'f32');
    cpu.matmul(o2.cpu, x.cpu, w.cpu);
    gpu.matmul(o2.gpu, x.gpu, w.gpu);
    const wr = b.rand([128, 512], 'f32', 9, 0.05);
    const o3 = b.zeros([T, 128], 'f32');
    cpu.matmul(o3.cpu, x.cpu, wr.cpu);
    gpu.matmul(o3.gpu, x.gpu, wr.gpu);
    // Skinny shapes (M <= 64, bf16 weights <= 16 MB) take the split-K streaming kernel, not cuBLAS.
    const ws = b.rand([4096, 512], 'bf16', 16, 0.05);
    const o4 = b.zeros([T, 4096], 'bf16');
    cpu.matmul(o4.cpu, x.cpu, ws.cpu);
    gpu.matmul(o4.gpu, x.gpu, ws.gpu);
    const o5 = b.zeros([T, 4096], 'f32');
    cpu.matmul(o5.cpu, x.cpu, ws.cpu);
    gpu.matmul(o5.gpu, x.gpu, ws.gpu);
    return [
      floatRow('matmul skinny M=15 N=4096 -> bf16', b.rel(o4)),
      floatRow('matmul skinny M=15 N=4096 -> f32', b.rel(o5), 1e-4),
      floatRow('matmul bf16 -> bf16', b.rel(o1)),
      floatRow('matmul bf16 -> f32', b.rel(o2), 1e-4),
      floatRow('matmul router bf16 x f32 -> f32', b.rel(o3), 1e-5),
    ];
  });

  run('matmulMany', () => {
    // Adjacent row views of one bf16 weight at >= PACKED_MIN_ROWS rows: one GEMM, then split.
    const M = 600;
    const x = b.rand([M, 256], 'bf16', 40);
    const packed = b.rand([512 + 128 + 8, 256], 'bf16', 41, 0.05);
    const apart = b.rand([96, 256], 'bf16', 42, 0.05);
    const parts = [
      [0, 512],
      [512, 128],
      [640, 8],
    ] as const;
    const views = (k: 'cpu' | 'gpu') => [
      ...parts.map(([s0, n]) => (k === 'cpu' ? cpu : gpu).rows(packed[k], s0, n)),
      apart[k],
    ];
    const outs = [...parts.map(([, n]) => n), 96].map((n) => b.zeros([M, n], 'bf16'));
    cpu.matmulMany!(
      outs.map((o) => o.cpu),
      x.cpu,
      views('cpu'),
    );
    gpu.matmulMany!(
      outs.map((o) => o.gpu),
      x.gpu,
      views('gpu'),
    );
    return outs.map((o, i) =>
      floatRow(
        `matmulMany M=${M} part ${i} [${o.cpu.shape[1]}, 256]${i < 3 ? ' (packed)' : ''}`,
        b.rel(o),
      ),
    );
  });

  run('add', () => {
    const a = b.rand([T, 300], 'bf16', 10);
    const c = b.rand([T, 300], 'bf16', 11);
    const o = b.zeros([T, 300], 'bf16');
    cpu.add(o.cpu, a.cpu, c.cpu);
    gpu.add(o.gpu, a.gpu, c.gpu);
    return floatRow('add bf16', b.rel(o));
  });

  run('rope', () => {
    const x = b.rand([T, 4 * 128], 'f32', 12);
    const opts = { numHeads: 4, headDim: 128, rotaryDim: 64, theta: 5e6 };
    cpu.rope(x.cpu, m.cpu, opts);
    gpu.rope(x.gpu, m.gpu, opts);
    const y = b.rand([T, 2 * 16], 'bf16', 13);
    const o2 = { numHeads: 2, headDim: 16, rotaryDim: 8, theta: 1e4 };
    cpu.rope(y.cpu, m.cpu, o2);
    gpu.rope(y.gpu, m.gpu, o2);
    // 13 heads: a thread rotates 8 heads with one angle, so the last group is partial.
    const z = b.rand([T, 13 * 128], 'f32', 15);
    const o3 = { numHeads: 13, headDim: 128, rotaryDim: 64, theta: 5e6 };
    cpu.rope(z.cpu, m.cpu, o3);
    gpu.rope(z.gpu, m.gpu, o3);
    return [
      floatRow('rope f32 Dh 128 rot 64', b.rel(x), 1e-5),
      floatRow('rope bf16 Dh 16 rot 8', b.rel(y)),
      floatRow('rope f32 13 heads (a partial group of 8)', b.rel(z), 1e-5),
    ];
  });

  run('swigluOai', () => {
    const gu = b.rand([T, 2 * 96], 'bf16', 14, 9);
    const o = b.zeros([T, 96], 'bf16');
    cpu.swigluOai(o.cpu, gu.cpu, 1.702, 7);
    gpu.swigluOai(o.gpu, gu.gpu, 1.702, 7);
    return floatRow('swigluOai (clamps bind)', b.rel(o));
  });

  rows.push(...attentionChecks(b, m, T));
  rows.push(...moeChecks(b, T));

  run('gatherLogitRows', () => {
    const x = b.rand([T, 256], 'bf16', 15);
    const o = b.zeros([m.cpu.numLogitRows, 256], 'bf16');
    cpu.gatherLogitRows(o.cpu, x.cpu, m.cpu);
    gpu.gatherLogitRows(o.gpu, x.gpu, m.gpu);
    return floatRow('gatherLogitRows', b.rel(o), 0);
  });
  return rows;

  function attentionChecks(bb: Both, mm: { cpu: BatchMeta; gpu: BatchMeta }, TT: number): Row[] {
    const out: Row[] = [];
    const Hkv = 4;
    const H = 64;
    const Dh = 128;
    const W = Hkv * Dh;
    const kc = bb.rand([P, S, W], 'bf16', 20);
    const vc = bb.rand([P, S, W], 'bf16', 21);
    const kn = bb.rand([TT, W], 'bf16', 22);
    const vn = bb.rand([TT, W], 'bf16', 23);
    cpu.writeCache(kc.cpu, kn.cpu, mm.cpu);
    gpu.writeCache(kc.gpu, kn.gpu, mm.gpu);
    cpu.writeCache(vc.cpu, vn.cpu, mm.cpu);
    gpu.writeCache(vc.gpu, vn.gpu, mm.gpu);
    out.push(floatRow('writeCache', bb.rel(kc), 0));
    const q = bb.rand([TT, H * Dh], 'bf16', 24, 0.3);
    const o = bb.zeros([TT, H * Dh], 'bf16');
    const base = { numHeads: H, numKvHeads: Hkv, headDim: Dh, scale: 1 / Math.sqrt(Dh) };
    cpu.attention(o.cpu, q.cpu, kc.cpu, vc.cpu, mm.cpu, { ...base, blocks: null });
    gpu.attention(o.gpu, q.gpu, kc.gpu, vc.gpu, mm.gpu, { ...base, blocks: null });
    out.push(floatRow('attention dense (GQA 16, Dh 128)', bb.rel(o)));
    // MSA: index queries/keys, block selection, sparse attention over the chosen blocks.
    const Di = 128;
    const topk = 4;
    const ik = bb.rand([P, S, Di], 'bf16', 25);
    const iq = bb.rand([TT, Hkv * Di], 'bf16', 26);
    const blocks = bb.zeros([Hkv, TT, topk], 'i32');
    const mo = { numIndexHeads: Hkv, indexDim: Di, topk, initBlocks: 0, localBlocks: 1 };
    cpu.msaSelect(blocks.cpu, iq.cpu, ik.cpu, mm.cpu, mo);
    gpu.msaSelect(blocks.gpu, iq.gpu, ik.gpu, mm.gpu, mo);
    out.push(intRow('msaSelect block ids', bb.diff(blocks), Hkv * TT * topk));
    // Same blocks on both sides, so sparse attention is compared on its own.
    const sel = bb.gpu.upload(cpu.readI32(blocks.cpu), [Hkv, TT, topk], 'i32');
    const o2 = bb.zeros([TT, H * Dh], 'bf16');
    cpu.attention(o2.cpu, q.cpu, kc.cpu, vc.cpu, mm.cpu, { ...base, blocks: blocks.cpu });
    gpu.attention(o2.gpu, q.gpu, kc.gpu, vc.gpu, mm.gpu, { ...base, blocks: sel });
    out.push(floatRow('attention sparse (MSA top-4 of 16-token blocks)', bb.rel(o2)));
    return out;
  }

  function moeChecks(bb: Both, TT: number): Row[] {
    const out: Row[] = [];
    for (const [D, I, E, dt] of [
      [256, 128, 8, 'bf16'],
      [64, 32, 8, 'f32'],
    ] as const) {
      const logits = bb.rand([TT, E], 'f32', 30 + D, 3);
      const bias = bb.rand([E], 'f32', 31, 0.1);
      for (const shared of [null, E] as const) {
        const width = 2 + (shared === null ? 0 : 1);
        const ids = bb.zeros([TT, width], 'i32');
        const wts = bb.zeros([TT, width], 'f32');
        const ro = { topK: 2, scale: 2, sharedExpertId: shared };
        cpu.routerTopK(ids.cpu, wts.cpu, logits.cpu, bias.cpu, ro);
        gpu.routerTopK(ids.gpu, wts.gpu, logits.gpu, bias.gpu, ro);
        out.push(intRow(`routerTopK ids (shared ${shared ?? 'off'})`, bb.diff(ids), TT * width));
        out.push(floatRow(`routerTopK weights (shared ${shared ?? 'off'})`, bb.rel(wts), 1e-5));
        const Etot = E + (shared === null ? 0 : 1);
        const x = bb.rand([TT, D], dt, 32 + D);
        const gu = bb.rand([Etot, 2 * I, D], dt, 33 + D, 2 / Math.sqrt(D));
        const dn = bb.rand([Etot, D, I], dt, 34 + D, 2 / Math.sqrt(I));
        const ew = (side: 'cpu' | 'gpu'): ExpertWeights => ({
          gateUp: gu[side],
          down: dn[side],
          firstExpert: 0,
          numLocalExperts: Etot,
        });
        const o = bb.zeros([TT, D], dt);
        const mo = { alpha: 1.702, limit: 7 };
        cpu.moe(o.cpu, x.cpu, ids.cpu, wts.cpu, ew('cpu'), mo);
        gpu.moe(
          o.gpu,
          x.gpu,
          bb.gpu.upload(cpu.readI32(ids.cpu), [TT, width], 'i32'),
          wts.gpu,
          ew('gpu'),
          mo,
        );
        const path = dt === 'bf16' ? 'tensor cores' : 'scalar f32';
        out.push(
          floatRow(
            `moe ${path} D=${D} I=${I} (shared ${shared ?? 'off'})`,
            bb.rel(o),
            dt === 'bf16' ? BF16_LIMIT : 1e-5,
          ),
        );
      }
    }
    return out;
  }
}
