/**
 * FP8 KV cache (`--kv-cache-dtype fp8`, issue 13) on the GPU against the CPU backend, which
 * keeps each cached value's E4M3 round trip (code × scale) in f32:
 * - ops on the same cache: write_cache_8b codes bit for bit against the CPU's values (random
 *   bf16 rows, values past ±448 × scale saturating); decode, mixed, MSA-sparse and dense
 *   prefill attention over E4M3 K/V with per-tensor scales (MiniMax-M3 shapes: 64 heads, 4 KV
 *   heads, Dh 128, page 128, shuffled pages); MSA selection over E4M3 index keys (msa.cu);
 * - whole models (reduced-width random checkpoints, D 512, Dh 128, bf16 weights) with the
 *   FP8 cache on both backends, per-position relative logit error ≤ 3e-2; on the MSA model
 *   (FP8 index keys) no selection row differs from the CPU's except among tied blocks, and the
 *   bound holds with the tied rows given the CPU's choice (see modelRows);
 * - greedy tokens through the engine (CUDA graphs and eager) with the FP8 cache: the two agree
 *   and each token is the CPU's top-1 or within the error margin of it (teacher-forced).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AttentionOptions, Backend, BatchMeta } from '../../src/backend/backend.js';
import type { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { createCudaBackend, type CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import type { ForwardBatch } from '../../src/backend/forward-batch.js';
import { CudaStepRunner } from '../../src/engine/cuda-step-runner.js';
import { LlmEngine } from '../../src/engine/llm-engine.js';
import { M3ModelRunner } from '../../src/engine/m3-model-runner.js';
import { makeRequest } from '../../src/engine/test-helpers.js';
import { loadModel } from '../../src/model/load-model.js';
import type { KvCacheDtype } from '../../src/model/minimax-m3/kv-cache.js';
import { runForward } from '../../src/model/run-forward.js';
import { writeRandomCheckpoint } from '../../src/model/weights/random-checkpoint.js';
import { PRESETS } from '../../src/model/weights/random-presets.js';
import { F8E4M3_TABLE } from '../../src/tensor/dtype.js';
import { argmax, countDiff, randArray, relErr, type Row } from './check-util.js';
import { compareLogits } from './golden-check.js';
import { newTieCount, tieHook, withMsaHook, type MsaCall } from './msa-selection-ties.js';
import { errRow, pagedBatch, worstRow, type SeqSpec } from './paged-attention-util.js';

const H = 64;
const HKV = 4;
const DH = 128;
const S = 128;
const P = 96;
const W = HKV * DH;
const K_SCALE = 0.0371;
const V_SCALE = 0.0123;
/** bf16 outputs and P rounded to bf16 on the GPU (the bf16 attention checks' bounds). */
const LIMIT = 1e-2;
const WORST_LIMIT = 3e-2;
/** The bound for per-position logits vs the CPU. */
const LOGIT_LIMIT = 3e-2;

/** One batch writing every slot of a [P, S] cache in page order. */
function fillBatch(): ForwardBatch {
  const pageTable = Int32Array.from({ length: P }, (_, i) => i);
  const T = P * S;
  return {
    tokenIds: new Int32Array(T),
    seqs: [{ numCached: 0, numNew: T, pageTable }],
    pageSize: S,
    logitsFor: 'last',
  };
}

/** A fresh f8e4m3 cache [P, S, width] holding `rows` written with `scale` (one writeCache). */
function filled(be: Backend, rows: Float32Array, width: number, scale: number) {
  const meta = be.prepareBatch(fillBatch());
  const cache = be.alloc([P, S, width], 'f8e4m3');
  const x = be.upload(rows, [P * S, width], 'bf16');
  be.writeCache(cache, x, meta, scale);
  be.free(x);
  return cache;
}

function cacheWriteChecks(cpu: Backend, gpu: CudaBackend): Row[] {
  // Values up to ±2000 × scale: E4M3 saturates at 448, so about 78% of them clamp.
  const rows = randArray(P * S * W, 11, 2000 * K_SCALE);
  const c = filled(cpu, rows, W, K_SCALE);
  const g = filled(gpu, rows, W, K_SCALE) as CudaTensor;
  gpu.synchronize();
  const codes = new Uint8Array(P * S * W);
  gpu.dev.download(codes, g.ptr);
  const got = Float32Array.from(codes, (b) => Math.fround(F8E4M3_TABLE[b]! * K_SCALE));
  const want = cpu.readF32(c);
  let saturated = 0;
  for (const b of codes) if ((b & 0x7f) === 0x7e) saturated++;
  const small = randArray(P * S * W, 12, 0.05); // subnormal codes at scale 1
  const cs = filled(cpu, small, W, 1);
  const gs = filled(gpu, small, W, 1) as CudaTensor;
  gpu.synchronize();
  gpu.dev.download(codes, gs.ptr);
  const gotSmall = Float32Array.from(codes, (b) => F8E4M3_TABLE[b]!);
  const smallDiff = countDiff(gotSmall, cpu.readF32(cs));
  [c, cs].forEach((t) => cpu.free(t));
  [g, gs].forEach((t) => gpu.free(t));
  return [
    {
      check: 'write_cache_8b (scale 0.0371): values differing from the CPU round trip',
      value: `${countDiff(got, want)} (${saturated} saturated)`,
      limit: '0',
      pass: countDiff(got, want) === 0 && saturated > 0,
    },
    {
      check: 'write_cache_8b (scale 1, |x| < 0.05, subnormals): values differing',
      value: `${smallDiff}`,
      limit: '0',
      pass: smallDiff === 0,
    },
  ];
}

interface Caches {
  readonly k: ReturnType<Backend['alloc']>;
  readonly v: ReturnType<Backend['alloc']>;
}

function kvCaches(be: Backend): Caches {
  return {
    k: filled(be, randArray(P * S * W, 21, 3 * K_SCALE * 100), W, K_SCALE),
    v: filled(be, randArray(P * S * W, 22, 2 * V_SCALE * 100), W, V_SCALE),
  };
}

const BASE: AttentionOptions = {
  numHeads: H,
  numKvHeads: HKV,
  headDim: DH,
  scale: 1 / Math.sqrt(DH),
  kScale: K_SCALE,
  vScale: V_SCALE,
  blocks: null,
};

/** Per (KV group, token): the token's own block and up to 5 others, -1 padded to 16. */
function sparseBlocks(spec: SeqSpec): Int32Array {
  const pos: number[] = [];
  for (const s of spec) for (let i = 0; i < s.numNew; i++) pos.push(s.numCached + i);
  const topk = 16;
  const out = new Int32Array(HKV * pos.length * topk).fill(-1);
  for (let g = 0; g < HKV; g++)
    pos.forEach((p, t) => {
      const visible = Math.floor(p / S) + 1;
      const chosen = [...new Set([visible - 1, 0, (g * 7 + t) % visible, (t * 3) % visible])];
      chosen.forEach((b, j) => (out[(g * pos.length + t) * topk + j] = b));
    });
  return out;
}

function attend(
  be: Backend,
  kv: Caches,
  batch: ForwardBatch,
  q: Float32Array,
  blocks: Int32Array | null,
  base: AttentionOptions = BASE,
): Float32Array {
  const meta: BatchMeta = be.prepareBatch(batch);
  const T = meta.numTokens;
  const qt = be.upload(q, [T, H * DH], 'bf16');
  const out = be.alloc([T, H * DH], 'bf16');
  const bt = blocks ? be.upload(blocks, [HKV, T, 16], 'i32') : null;
  be.attention(out, qt, kv.k, kv.v, meta, { ...base, blocks: bt });
  const r = be.readF32(out);
  [qt, out, ...(bt ? [bt] : [])].forEach((t) => be.free(t));
  return r;
}

const ATTENTION_CASES: [string, SeqSpec, boolean][] = [
  [
    'decode (contexts 0, 63, 64, 65, 1000, 3000)',
    [0, 63, 64, 65, 1000, 3000].map((c) => ({ numCached: c, numNew: 1 })),
    false,
  ],
  [
    'mixed (3 + 17 + 1 new tokens)',
    [
      { numCached: 100, numNew: 3 },
      { numCached: 0, numNew: 17 },
      { numCached: 700, numNew: 1 },
    ],
    false,
  ],
  ['MSA-sparse decode', [300, 1500, 2999].map((c) => ({ numCached: c, numNew: 1 })), true],
  [
    'dense prefill (tensor-core prefill kernel)',
    [
      { numCached: 0, numNew: 200 },
      { numCached: 150, numNew: 130 },
    ],
    false,
  ],
];

function attentionChecks(cpu: Backend, gpu: CudaBackend): Row[] {
  const kc = kvCaches(cpu);
  const kg = kvCaches(gpu);
  const rows: Row[] = [];
  ATTENTION_CASES.forEach(([name, spec, sparse], i) => {
    const batch = pagedBatch(spec, P, S, 'kv-fp8 attention check');
    const T = batch.tokenIds.length;
    const q = randArray(T * H * DH, 40 + i, 4);
    const blocks = sparse ? sparseBlocks(spec) : null;
    const g = attend(gpu, kg, batch, q, blocks);
    const c = attend(cpu, kc, batch, q, blocks);
    rows.push(errRow(`FP8 KV attention, ${name}: rel err vs CPU`, relErr(g, c), LIMIT));
    rows.push(errRow(`  worst (token, head) row`, worstRow(g, c, DH), WORST_LIMIT));
  });
  return rows;
}

/** Values of random finite E4M3 codes (both signs, subnormals, ±448): each is exactly a bf16. */
function codeValues(n: number, seed: number): Float32Array {
  const finite = [...F8E4M3_TABLE.keys()].filter((b) => (b & 0x7f) !== 0x7f);
  const r = randArray(n, seed, 1, false);
  return Float32Array.from(r, (x) => F8E4M3_TABLE[finite[Math.floor((x + 1) * 127) % 254]!]!);
}

/**
 * The FP8 kernels' widening is exact: with scales 1, attention over an E4M3 cache gives the same
 * bits as over a bf16 cache holding the codes' values (same kernels, same MMA order), for every
 * case above.
 */
function wideningChecks(gpu: CudaBackend): Row[] {
  const kv = codeValues(P * S * W, 51);
  const vv = codeValues(P * S * W, 52);
  const fp8 = { k: filled(gpu, kv, W, 1), v: filled(gpu, vv, W, 1) };
  const bf16 = { k: gpu.upload(kv, [P, S, W], 'bf16'), v: gpu.upload(vv, [P, S, W], 'bf16') };
  const ones = { ...BASE, kScale: 1, vScale: 1 };
  let differ = 0;
  let total = 0;
  ATTENTION_CASES.forEach(([name, spec, sparse], i) => {
    const batch = pagedBatch(spec, P, S, `kv-fp8 widening check, ${name}`);
    const q = randArray(batch.tokenIds.length * H * DH, 60 + i, 0.02);
    const blocks = sparse ? sparseBlocks(spec) : null;
    const a = attend(gpu, fp8, batch, q, blocks, ones);
    differ += countDiff(a, attend(gpu, bf16, batch, q, blocks, ones));
    total += a.length;
  });
  [fp8.k, fp8.v, bf16.k, bf16.v].forEach((t) => gpu.free(t));
  return [
    {
      check: 'E4M3 widening (scales 1): outputs differing from the same kernels over bf16 values',
      value: `${differ}/${total}`,
      limit: '0',
      pass: differ === 0 && total > 0,
    },
  ];
}

/** Block-max index scores of one (token, head) over the CPU's cached keys (host, f64). */
function hostScore(
  keys: Float32Array,
  q: Float32Array,
  pt: Int32Array,
  pos: number,
  b: number,
): number {
  const Di = q.length;
  let best = -Infinity;
  for (let j = b * S; j <= Math.min(pos, b * S + S - 1); j++) {
    const off = (pt[Math.floor(j / S)]! * S + (j % S)) * Di;
    let d = 0;
    for (let c = 0; c < Di; c++) d += q[c]! * keys[off + c]!;
    best = Math.max(best, d);
  }
  return best;
}

/**
 * MSA selection over E4M3 index keys, tensor-core scoring (msa-score.cu, -DKV_FP8) and
 * msa.cu (msa_select_b8), against the CPU: rows whose ids differ only where the CPU's scores
 * of the swapped blocks tie (within 1e-4 of the row's largest score) are ties, not errors.
 */
async function msaChecks(cpu: Backend, gpu: CudaBackend): Promise<Row[]> {
  const Di = 128;
  const keys = randArray(P * S * Di, 31, 2);
  const spec = [2000, 5000, 3000, 400].map((c) => ({ numCached: c, numNew: 2 }));
  const batch = pagedBatch(spec, P, S, 'kv-fp8 msa check');
  const T = batch.tokenIds.length;
  const q = randArray(T * HKV * Di, 32, 1);
  const o = { numIndexHeads: HKV, indexDim: Di, topk: 16, initBlocks: 0, localBlocks: 1 };
  const run = (be: Backend) => {
    const cache = filled(be, keys, Di, 1);
    const meta = be.prepareBatch(batch);
    const qt = be.upload(q, [T, HKV * Di], 'bf16');
    const out = be.alloc([HKV, T, 16], 'i32');
    be.msaSelect(out, qt, cache, meta, o);
    const ids = be.readI32(out);
    const cached = be.name === 'cpu' ? be.readF32(cache) : null;
    [cache, qt, out].forEach((t) => be.free(t));
    return { ids, cached };
  };
  const c = run(cpu);
  const cachedKeys = c.cached!;
  const tokens = spec.flatMap((sp, si) =>
    Array.from({ length: sp.numNew }, (_, i) => ({
      pos: sp.numCached + i,
      pt: batch.seqs[si]!.pageTable,
    })),
  );
  const compare = (g: Int32Array) => {
    let untied = 0;
    let ties = 0;
    for (let h = 0; h < HKV; h++)
      tokens.forEach((tok, t) => {
        const r = (h * T + t) * 16;
        const a = new Set(g.subarray(r, r + 16));
        const b = new Set(c.ids.subarray(r, r + 16));
        const onlyG = [...a].filter((x) => !b.has(x));
        const onlyC = [...b].filter((x) => !a.has(x));
        if (onlyG.length === 0 && onlyC.length === 0) return;
        const qh = q.subarray((t * HKV + h) * Di, (t * HKV + h + 1) * Di);
        const sc = (blk: number) => hostScore(cachedKeys, qh, tok.pt, tok.pos, blk);
        const top = Math.max(...[...b].filter((x) => x >= 0).map(sc));
        const tied = onlyG.every((x) =>
          onlyC.some((y) => Math.abs(sc(x) - sc(y)) <= 1e-4 * Math.abs(top)),
        );
        if (tied) ties++;
        else untied++;
      });
    return { untied, ties };
  };
  const rows: Row[] = [];
  const scalar = await createCudaBackend({ msaScoring: 'scalar' });
  for (const [name, be] of [
    ['tensor-core scoring (msa-score.cu)', gpu],
    ['msa.cu (msa_select_b8)', scalar],
  ] as const) {
    const r = compare(run(be).ids);
    rows.push({
      check: `MSA selection over E4M3 index keys, ${name}: untied rows differing of ${HKV * T}`,
      value: `${r.untied} (${r.ties} tied)`,
      limit: '0',
      pass: r.untied === 0,
    });
  }
  return rows;
}

/** A reduced-width random checkpoint: D 512, 8 heads over 2 KV heads, Dh 128, dense FFN. */
function writeModel(dir: string, msa: boolean): void {
  const base = PRESETS['tiny']!();
  const sparse = base['sparse_attention_config'] as Record<string, unknown>;
  const cfg = {
    ...base,
    hidden_size: 512,
    num_attention_heads: 8,
    num_key_value_heads: 2,
    head_dim: 128,
    rotary_dim: 16,
    partial_rotary_factor: 0.125,
    dense_intermediate_size: 512,
    intermediate_size: 256,
    shared_intermediate_size: 256,
    vocab_size: 1024,
    moe_layer_freq: [0, 0, 0, 0],
    sparse_attention_config: {
      ...sparse,
      use_sparse_attention: msa,
      sparse_index_dim: 64,
      sparse_block_size: 16,
      sparse_topk_blocks: 3,
      sparse_attention_freq: msa ? [0, 1, 1, 1] : [0, 0, 0, 0],
      sparse_disable_index_value: msa ? [0, 1, 1, 1] : [0, 0, 0, 0],
    },
  };
  writeRandomCheckpoint({ config: cfg, outDir: dir, seed: 7 });
}

const TOKENS = Array.from({ length: 96 }, (_, i) => (i * 37 + 11) % 1024);

/**
 * Whole-model logits, GPU vs CPU with the FP8 cache on both: every position within the issue's
 * 3e-2. MSA block selection is discrete and bf16 index queries flip near-tied blocks (the
 * bf16-KV baseline of the same model: 1.0e-1 max on one H200), so on the MSA model the selections
 * are compared row by row (msa-selection-ties.ts): no row may differ unless its blocks tie, and
 * the max bound is held on a second GPU run whose tied rows take the CPU's choice (the natural
 * run is held to the median and the margin-checked top-1 and its max is reported).
 */
async function modelRows(
  cpu: CpuBackend,
  gpu: CudaBackend,
  dir: string,
  name: string,
  msa: boolean,
): Promise<Row[]> {
  const logits = async (be: Backend, kvCacheDtype: KvCacheDtype) =>
    (await runForward(await loadModel(dir, { backend: be, kvCacheDtype }), TOKENS)).logits;
  if (!msa) {
    const g = compareLogits(await logits(gpu, 'fp8_e4m3'), await logits(cpu, 'fp8_e4m3'));
    const base = compareLogits(await logits(gpu, 'bf16'), await logits(cpu, 'bf16'));
    return [
      errRow(`${name}, FP8 KV GPU vs CPU: max per-position rel logit err`, g.maxRel, LOGIT_LIMIT),
      {
        check: '  median rel / top-1 flips (margin-checked) / bf16-KV baseline max',
        value: `${g.medianRel.toExponential(1)} / ${g.top1Mismatch}/${g.top1Checked} / ${base.maxRel.toExponential(1)}`,
        limit: '0 flips',
        pass: g.top1Mismatch === 0,
      },
    ];
  }
  const f = await tieAwareRuns(cpu, gpu, dir, 'fp8_e4m3');
  const base = await tieAwareRuns(cpu, gpu, dir, 'bf16');
  const t = f.natural.ties;
  return [
    {
      check: `${name}, FP8 KV: selection rows differing from the CPU, untied (tied, at positions)`,
      value: `${t.untied} (${t.tied}, ${t.positions.size})`,
      limit: '0 untied',
      pass: t.untied === 0 && f.forced.ties.untied === 0,
    },
    errRow(
      '  tied rows given the CPU choice: max per-position rel logit err',
      f.forced.stats.maxRel,
      LOGIT_LIMIT,
    ),
    errRow('  as run: median per-position rel logit err', f.natural.stats.medianRel, LOGIT_LIMIT),
    {
      check: '  as run: max rel / top-1 flips (margin-checked) / bf16-KV max as run, ties given',
      value: `${f.natural.stats.maxRel.toExponential(1)} / ${f.natural.stats.top1Mismatch}/${f.natural.stats.top1Checked} / ${base.natural.stats.maxRel.toExponential(1)}, ${base.forced.stats.maxRel.toExponential(1)}`,
      limit: '0 flips',
      pass: f.natural.stats.top1Mismatch === 0,
    },
  ];
}

/**
 * The MSA model on the CPU (selections recorded), then on the GPU as run and with its tied
 * selection rows given the CPU's choice.
 */
async function tieAwareRuns(cpu: CpuBackend, gpu: CudaBackend, dir: string, kv: KvCacheDtype) {
  const forward = async (be: Backend) =>
    (await runForward(await loadModel(dir, { backend: be, kvCacheDtype: kv }), TOKENS)).logits;
  const calls: MsaCall[] = [];
  const ref = await withMsaHook(
    cpu,
    (c) => calls.push(c),
    () => forward(cpu),
  );
  const run = async (force: boolean) => {
    const ties = newTieCount();
    const got = await withMsaHook(gpu, tieHook(gpu, calls, ties, force), () => forward(gpu));
    return { ties, stats: compareLogits(got, ref) };
  };
  return { natural: await run(false), forced: await run(true) };
}

async function greedy(dir: string, gpu: CudaBackend, eager: boolean, prompts: number[][]) {
  const model = await loadModel(dir, { backend: gpu, kvCacheDtype: 'fp8_e4m3' });
  const runner = new M3ModelRunner(model, { numPages: 64 });
  const step = new CudaStepRunner(runner, { enforceEager: eager, maxNumSeqs: 8 });
  const engine = new LlmEngine(step, { maxNumSeqs: 8 });
  try {
    const tokens = await Promise.all(
      prompts.map(async (p, i) => {
        const ids: number[] = [];
        const req = makeRequest(`kv${i}`, p, { maxTokens: 24, ignoreEos: true });
        for await (const ev of engine.generate(req)) {
          if (ev.type === 'token') ids.push(ev.tokenId);
          if (ev.type === 'error') throw new Error(ev.message);
        }
        return ids;
      }),
    );
    return { tokens, graphSteps: step.counts.graphSteps };
  } finally {
    await engine.shutdown();
  }
}

async function greedyRows(cpu: CpuBackend, gpu: CudaBackend, dir: string): Promise<Row[]> {
  const prompts = [0, 1, 2, 3].map((s) => TOKENS.slice(s * 5, s * 5 + 20 + 7 * s));
  const graphs = await greedy(dir, gpu, false, prompts);
  const eager = await greedy(dir, gpu, true, prompts);
  const ref = await loadModel(dir, { backend: cpu, kvCacheDtype: 'fp8_e4m3' });
  let outside = 0;
  let total = 0;
  for (let i = 0; i < prompts.length; i++) {
    const seq = [...prompts[i]!, ...graphs.tokens[i]!];
    const logits = (await runForward(ref, seq)).logits;
    for (let j = 0; j < graphs.tokens[i]!.length; j++) {
      const row = logits[prompts[i]!.length - 1 + j]!;
      const top = row[argmax(row)]!;
      let norm = 0;
      for (const v of row) norm += v * v;
      const margin = LOGIT_LIMIT * Math.sqrt(norm / row.length) * 4;
      total++;
      if (row[graphs.tokens[i]![j]!]! < top - margin) outside++;
    }
  }
  const same = graphs.tokens.every((t, i) => countDiff(t, eager.tokens[i]!) === 0);
  return [
    {
      check: `engine greedy, FP8 KV: CUDA graphs (${graphs.graphSteps} graph steps) = eager`,
      value: same ? 'equal' : 'differ',
      limit: 'equal',
      pass: same && graphs.graphSteps > 0,
    },
    {
      check: '  GPU tokens below the CPU top-1 by more than the error margin',
      value: `${outside}/${total}`,
      limit: '0',
      pass: outside === 0,
    },
  ];
}

export async function checkKvFp8(cpu: CpuBackend, gpu: CudaBackend): Promise<Row[]> {
  const rows: Row[] = [];
  const part = async (what: string, f: () => Row[] | Promise<Row[]>) => {
    try {
      rows.push(...(await f()));
    } catch (e) {
      console.error(`${what}: ${(e as Error).stack ?? String(e)}`);
      rows.push({ check: `kv-fp8 ${what}`, value: 'error', limit: '-', pass: false });
    }
  };
  await part('cache write', () => cacheWriteChecks(cpu, gpu));
  await part('attention', () => attentionChecks(cpu, gpu));
  await part('widening', () => wideningChecks(gpu));
  await part('msa', () => msaChecks(cpu, gpu));
  for (const msa of [false, true]) {
    const dir = mkdtempSync(join(tmpdir(), 'kv-fp8-'));
    try {
      writeModel(dir, msa);
      const name = msa ? 'random D512 MSA model' : 'random D512 dense-attention model';
      await part(name, () => modelRows(cpu, gpu, dir, name, msa));
      if (msa) await part('engine greedy', () => greedyRows(cpu, gpu, dir));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }
  return rows;
}
