/**
 * The GPU sampler (kernels/sampling.cu) against the host sampler (src/engine/sampler.ts):
 * greedy identical (ties to the lower id, penalties over many steps), the draw distribution
 * by a chi-square test against the host's exact truncated distribution (>= 10k draws per
 * setting), seeds reproducible, logprobs / top logprobs within float tolerance, allowed-token
 * masks and logit bias.
 */
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import { GpuSampler, type GpuSampleRow } from '../../src/backend/cuda/gpu-sampler.js';
import type { SamplingParams } from '../../src/engine/engine-types.js';
import { truncate } from '../../src/engine/logits-processing.js';
import { SequenceSampler } from '../../src/engine/sampler.js';
import { rng, type Row } from './check-util.js';

const BASE: SamplingParams = {
  temperature: 1,
  topP: 1,
  topK: -1,
  minP: 0,
  presencePenalty: 0,
  frequencyPenalty: 0,
  repetitionPenalty: 1,
  seed: null,
};

function gaussianRow(V: number, seed: number, scale: number): Float32Array {
  const r = rng(seed);
  const x = new Float32Array(V);
  for (let i = 0; i < V; i++) {
    // sum of uniforms ~ normal; keeps logits realistic (a head and a long tail)
    x[i] = ((r() + r() + r() + r()) / 2) * scale;
  }
  return x;
}

class Harness {
  readonly sampler: GpuSampler;
  constructor(
    readonly gpu: CudaBackend,
    readonly V: number,
    readonly rows: number,
  ) {
    this.sampler = new GpuSampler(gpu.dev, gpu.ctx.kernels, V, rows);
  }
  /** Samples `rows` rows of `logits` (each row given, uploaded fresh). */
  async run(logits: Float32Array[], rows: GpuSampleRow[]) {
    const t = this.gpu.upload(
      Float32Array.from(logits.flatMap((r) => Array.from(r))),
      [logits.length, this.V],
      'f32',
    ) as CudaTensor;
    try {
      return await this.sampler.sample(t.ptr, rows);
    } finally {
      this.gpu.free(t);
    }
  }
  destroy(): void {
    this.sampler.destroy();
  }
}

/** Host-exact probabilities of the processed row (penalties none, temperature applied). */
function hostDistribution(x: Float32Array, p: SamplingParams): Map<number, number> {
  const y = Float32Array.from(x);
  if (p.temperature !== 1) for (let i = 0; i < y.length; i++) y[i] = y[i]! * (1 / p.temperature);
  const c = truncate(y, p);
  return new Map(c.ids.map((id, j) => [id, c.weights[j]! / c.total]));
}

/** Upper 0.1% point of chi-square with df degrees of freedom (Wilson–Hilferty). */
function chiSquareCritical(df: number): number {
  const z = 3.09;
  return df * (1 - 2 / (9 * df) + z * Math.sqrt(2 / (9 * df))) ** 3;
}

function chiSquare(counts: Map<number, number>, probs: Map<number, number>, n: number) {
  let outside = 0;
  for (const [id, c] of counts) if (!probs.has(id)) outside += c;
  let stat = 0;
  let df = -1;
  let restObs = 0;
  let restExp = 0;
  for (const [id, p] of probs) {
    const e = p * n;
    const o = counts.get(id) ?? 0;
    if (e >= 5) {
      stat += (o - e) ** 2 / e;
      df++;
    } else {
      restObs += o;
      restExp += e;
    }
  }
  if (restExp >= 5) {
    stat += (restObs - restExp) ** 2 / restExp;
    df++;
  }
  return { stat, df: Math.max(1, df), outside };
}

async function distributionRows(h: Harness): Promise<Row[]> {
  const out: Row[] = [];
  const x = gaussianRow(h.V, 11, 2.5);
  const settings: [string, Partial<SamplingParams>][] = [
    ['T=1', {}],
    ['T=0.7 top_k=50', { temperature: 0.7, topK: 50 }],
    ['T=1.3 top_p=0.9', { temperature: 1.3, topP: 0.9 }],
    ['T=1 min_p=0.05', { minP: 0.05 }],
    ['T=0.8 top_k=40 top_p=0.8 min_p=0.02', { temperature: 0.8, topK: 40, topP: 0.8, minP: 0.02 }],
  ];
  const N = 12_000;
  for (const [name, o] of settings) {
    const p = { ...BASE, ...o };
    const probs = hostDistribution(x, p);
    const counts = new Map<number, number>();
    for (let start = 0; start < N; start += h.rows) {
      const n = Math.min(h.rows, N - start);
      const rows: GpuSampleRow[] = Array.from({ length: n }, (_, i) => ({
        logitsRow: i,
        state: h.sampler.open(p, 1000 + start + i, []),
        numLogprobs: null,
      }));
      const res = await h.run(
        Array.from({ length: n }, () => x),
        rows,
      );
      for (const r of res) counts.set(r.tokenId, (counts.get(r.tokenId) ?? 0) + 1);
      for (const r of rows) h.sampler.release(r.state);
    }
    const c = chiSquare(counts, probs, N);
    const crit = chiSquareCritical(c.df);
    out.push({
      check: `sampler chi-square ${name} (${N} draws, ${probs.size} kept)`,
      value: `${c.stat.toFixed(1)} (df ${c.df}), outside ${c.outside}`,
      limit: `< ${crit.toFixed(1)}, 0 outside`,
      pass: c.stat < crit && c.outside === 0,
    });
  }
  return out;
}

async function greedyRows(h: Harness): Promise<Row[]> {
  // Many rows, a tie planted in each (equal maxima: the lower id must win).
  const R = Math.min(h.rows, 16);
  const logits = Array.from({ length: R }, (_, i) => {
    const x = gaussianRow(h.V, 100 + i, 3);
    const a = (i * 7919) % h.V;
    const b = (a + 1 + ((i * 104729) % (h.V - 1))) % h.V;
    x[a] = x[b] = 50;
    return x;
  });
  const rows = logits.map((_, i) => ({
    logitsRow: i,
    state: h.sampler.open(BASE_GREEDY, i, []),
    numLogprobs: 5,
  }));
  const res = await h.run(logits, rows);
  let mismatches = 0;
  let lpErr = 0;
  logits.forEach((x, i) => {
    const ref = new SequenceSampler(BASE_GREEDY, [], 1).sample(x, 5);
    const got = res[i]!;
    if (got.tokenId !== ref.tokenId) mismatches++;
    lpErr = Math.max(lpErr, Math.abs(got.logprob! - ref.logprob!));
    ref.topLogprobs!.forEach((t, k) => {
      if (got.topLogprobs![k]!.tokenId !== t.tokenId) mismatches++;
      lpErr = Math.max(lpErr, Math.abs(got.topLogprobs![k]!.logprob - t.logprob));
    });
  });
  for (const r of rows) h.sampler.release(r.state);
  return [
    {
      check: `sampler greedy + top-5 ids vs host (${R} rows of V=${h.V}, ties planted)`,
      value: `${mismatches} differ`,
      limit: '0',
      pass: mismatches === 0,
    },
    {
      check: 'sampler logprobs vs host',
      value: lpErr.toExponential(2),
      limit: '< 1e-3',
      pass: lpErr < 1e-3,
    },
  ];
}

const BASE_GREEDY: SamplingParams = { ...BASE, temperature: 0 };

/** Greedy with penalties over 40 steps: counts and prompt bits on the device drive the picks. */
async function penaltyRows(h: Harness): Promise<Row[]> {
  const settings: Partial<SamplingParams>[] = [
    { repetitionPenalty: 1.8 },
    { frequencyPenalty: 0.7 },
    { presencePenalty: 1.1, frequencyPenalty: 0.2, repetitionPenalty: 1.2 },
  ];
  const out: Row[] = [];
  const x = gaussianRow(h.V, 7, 1.2);
  const prompt = Array.from({ length: 30 }, (_, i) => (i * 31337) % h.V);
  for (const o of settings) {
    const p = { ...BASE_GREEDY, ...o };
    const ref = new SequenceSampler(p, prompt, 1);
    const state = h.sampler.open(p, 1, prompt);
    let differ = 0;
    const distinct = new Set<number>();
    for (let step = 0; step < 40; step++) {
      const want = ref.sample(x, null).tokenId;
      const got = (await h.run([x], [{ logitsRow: 0, state, numLogprobs: null }]))[0]!.tokenId;
      if (got !== want) differ++;
      distinct.add(want);
    }
    h.sampler.release(state);
    out.push({
      check: `sampler penalties ${JSON.stringify(o)} greedy 40 steps vs host`,
      value: `${differ} differ (${distinct.size} distinct tokens)`,
      limit: '0, > 1 distinct',
      pass: differ === 0 && distinct.size > 1,
    });
  }
  return out;
}

async function seedRows(h: Harness): Promise<Row[]> {
  const x = gaussianRow(h.V, 5, 1);
  const p = { ...BASE, temperature: 0.9, topP: 0.95 };
  const draw = async (seed: number) => {
    const state = h.sampler.open(p, seed, []);
    const ids: number[] = [];
    for (let s = 0; s < 16; s++)
      ids.push((await h.run([x], [{ logitsRow: 0, state, numLogprobs: null }]))[0]!.tokenId);
    h.sampler.release(state);
    return ids.join(',');
  };
  const a = await draw(1234);
  const b = await draw(1234);
  const c = await draw(1235);
  return [
    {
      check: 'sampler seeds: same seed same tokens, other seed other tokens',
      value: `${a === b ? 'same' : 'DIFFERENT'} / ${a === c ? 'SAME' : 'different'}`,
      limit: 'same / different',
      pass: a === b && a !== c,
    },
  ];
}

async function maskBiasRows(h: Harness): Promise<Row[]> {
  const x = gaussianRow(h.V, 9, 2);
  const allowed = [3, 77, h.V - 1];
  const mask = new Uint32Array(Math.ceil(h.V / 32));
  for (const t of allowed) mask[t >>> 5]! |= 1 << (t & 31);
  const p = { ...BASE, temperature: 1.5 };
  let outside = 0;
  const rows: GpuSampleRow[] = Array.from({ length: Math.min(h.rows, 64) }, (_, i) => ({
    logitsRow: i,
    state: h.sampler.open(p, i, []),
    numLogprobs: null,
    allowedMask: mask,
  }));
  const res = await h.run(
    rows.map(() => x),
    rows,
  );
  for (const r of res) if (!allowed.includes(r.tokenId)) outside++;
  rows.forEach((r) => h.sampler.release(r.state));
  // A bias of +100 on one token makes greedy pick it; -inf-like bias removes the argmax.
  const g = h.sampler.open(BASE_GREEDY, 1, []);
  const top = new SequenceSampler(BASE_GREEDY, [], 1).sample(x, null).tokenId;
  const biased = (
    await h.run([x], [{ logitsRow: 0, state: g, numLogprobs: null, bias: [[42, 100]] }])
  )[0]!.tokenId;
  const removed = (
    await h.run([x], [{ logitsRow: 0, state: g, numLogprobs: null, bias: [[top, -1e30]] }])
  )[0]!.tokenId;
  h.sampler.release(g);
  return [
    {
      check: 'sampler allowed-token mask (64 draws, 3 allowed)',
      value: `${outside} outside`,
      limit: '0',
      pass: outside === 0,
    },
    {
      check: 'sampler logit bias (+100 picks it, -1e30 removes the argmax)',
      value: `${biased}, ${removed === top ? 'argmax kept' : 'argmax removed'}`,
      limit: '42, removed',
      pass: biased === 42 && removed !== top,
    },
  ];
}

export async function checkSampler(gpu: CudaBackend): Promise<Row[]> {
  const small = new Harness(gpu, 1000, 1024);
  const big = new Harness(gpu, 200_064, 16);
  try {
    return [
      ...(await greedyRows(big)),
      ...(await penaltyRows(big)),
      ...(await distributionRows(small)),
      ...(await seedRows(small)),
      ...(await maskBiasRows(big)),
    ];
  } finally {
    small.destroy();
    big.destroy();
  }
}
