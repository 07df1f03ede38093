/**
 * Real-dimension MiniMax-M3 on one GPU (weights generated on the device, see
 * test/gpu/real-model.ts): correctness against the CPU backend, then prefill and decode timings.
 *   node dist/gpu/bench/gpu-bench.js [--moe-layers 5] [--prompt 8] [--context 1024]
 *        [--batches 1,8,32,64,128] [--prefill 2048[,8192...]] [--skip-check] [--out DIR]
 *        [--prefill-attention tensor-cores|wgmma|scalar] [--quantization fp8 | none,fp8]
 *        [--kv-cache-dtype auto|bf16|fp8|fp8_e4m3] [--attention-alone 2048,8192] [--attention-ws]
 *        [--moe-lanes 6,8] [--fp8-decode default,v8] [--moe-scan serial,warp,block]
 *        [--profile-replays N]
 * The prefill rows print the whole per-op profile, its sum, the device span and the largest
 * gaps between ops (where host time goes that no op accounts for). --attention-alone times
 * dense prefill attention alone per kernel first (prefill-attention-time.ts); --moe-lanes times
 * the prefills again with the MoE's per-expert GEMMs on each of these lane counts (default 4).
 * Writes gpu-bench.json and gpu-bench.md under --out (default $OUT or .). --quantization
 * none,fp8 benches the bf16 weights, quantizes the same weights and benches again (one weight
 * build): gpu-bench-none.*, gpu-bench-fp8.* and a table of FP8 / bf16 on stdout.
 * --fp8-decode / --moe-scan time the decode batches once per FP8 decode-kernel choice and MoE
 * tile-table kernel (the per-op profile only for the first). --profile-replays N replays each
 * decode graph N more times inside a profiler range, for a per-node profile of the graph step:
 *   ncu --profile-from-start off --graph-profiling node --metrics gpu__time_duration.sum --csv
 *       --log-file ncu.csv node dist/gpu/bench/gpu-bench.js ... --profile-replays 3
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ForwardBatch } from '../src/backend/forward-batch.js';
import { createCudaBackend, type CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import type { ModelConfig } from '../src/config/model-config.js';
import type { ModelWeights } from '../src/model/minimax-m3/weights.js';
import {
  allocKvCache,
  KV_CACHE_DTYPE_FLAGS,
  kvBytesPerPage,
  resolveKvCacheDtype,
  type KvCache,
  type KvCacheDtype,
  type KvCacheDtypeFlag,
} from '../src/model/minimax-m3/kv-cache.js';
import { MiniMaxM3Model } from '../src/model/minimax-m3/minimax-m3-model.js';
import { SingleRankCommunicator } from '../src/parallel/communicator.js';
import { median } from '../test/gpu/check-util.js';
import { decodeBatch, timeGraphStep } from './graph-step.js';
import { prefillFlops } from './prefill-flops.js';
import { profileOps, profileTimeline } from '../test/gpu/op-profile.js';
import { KERNEL_KEYS, timePrefillAttention } from './prefill-attention-time.js';
import { timeSparseAttention } from './sparse-attention-time.js';
import { realCheck } from '../test/gpu/real-check.js';
import { buildGpuWeights, decodeWeightBytes, realConfig } from '../test/gpu/real-model.js';
import { quantizeModelWeights } from '../src/model/minimax-m3/quantize-weights.js';
import {
  totalWeightBytes,
  weightBytesByDtype,
  type WeightBytes,
} from '../src/model/minimax-m3/weight-bytes.js';
import { smoke, type Ceilings } from '../test/gpu/smoke.js';
import {
  DEFAULT_TUNING,
  type Fp8DecodeChoice,
  type MoeScan,
} from '../src/backend/cuda/kernel-tuning.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const PAGE = 128;

interface DecodeRow {
  /** FP8 decode kernels (fp8DenseKernel / fp8MoeKernel, or v8) and the MoE tile-table kernel. */
  variant: string;
  profile: Record<string, number>;
  batch: number;
  graphMs: number;
  eagerMs: number;
  /** Device ms of the step's attention ops (eager profile). */
  attentionMs: number;
  distinctExperts: number;
  weightGB: number;
  kvGB: number;
  rooflineMs: number;
  fraction: number;
}

async function timeDecode(
  gpu: CudaBackend,
  model: MiniMaxM3Model,
  kv: KvCache,
  B: number,
  context: number,
  pagesPerSeq: number,
  ceil: Ceilings,
  linearBytes: number,
  variant: string,
  profile: boolean,
): Promise<DecodeRow> {
  const cfg = model.cfg;
  const step = (b: ForwardBatch) => model.forward(b, kv);
  const batch = decodeBatch(B, context, pagesPerSeq, cfg.vocabSize, PAGE);
  // Experts actually touched at this batch (for the bytes of the roofline).
  const routed = await step({ ...batch, captureRoutedExperts: true });
  let distinct = 0;
  for (const ids of Object.values(routed.routedExperts)) distinct += new Set(ids).size;
  const moeLayers = Object.keys(routed.routedExperts).length;
  const prof = profile ? await profileOps(gpu, () => step(batch)) : [];
  if (profile)
    console.log(
      `per-op device ms at B=${B} (eager step): ${prof
        .slice(0, 12)
        .map(([k, v]) => `${k} ${v.toFixed(3)}`)
        .join('; ')}`,
    );
  const eager: number[] = [];
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    await step(batch);
    eager.push(performance.now() - t0);
  }
  const graphMs = await timeGraphStep(gpu, model, kv, batch, pagesPerSeq, {
    profileReplays: Number(arg('profile-replays', '0')),
  });
  const w = decodeWeightBytes(cfg, B, true, linearBytes);
  const expertBytes = 3 * cfg.hiddenSize * cfg.moeIntermediateSize * linearBytes;
  // distinct counts the fused shared expert id too: it is one of the ids of every row.
  const weightBytes = w.always + distinct * expertBytes;
  const kvPerToken = kvBytesPerPage(
    cfg,
    { tpRank: 0, tpSize: 1 },
    1,
    kv.dtype === 'fp8_e4m3' ? 1 : 2,
  );
  const kvBytes = B * (context + 1) * kvPerToken;
  const rooflineMs = ((weightBytes + kvBytes) / (ceil.copyTBs * 1e12)) * 1e3;
  return {
    variant,
    profile: Object.fromEntries(prof.map(([k, v]) => [k, Number(v.toFixed(4))])),
    batch: B,
    graphMs,
    eagerMs: median(eager),
    attentionMs: prof.find(([k]) => k === 'attention')?.[1] ?? 0,
    distinctExperts: distinct / Math.max(1, moeLayers),
    weightGB: weightBytes / 1e9,
    kvGB: kvBytes / 1e9,
    rooflineMs,
    fraction: rooflineMs / graphMs,
  };
}

/** One sequence of T tokens from an empty cache, logits of the last. */
function prefillBatch(T: number, vocab: number): ForwardBatch {
  return {
    tokenIds: Int32Array.from({ length: T }, (_, i) => (i * 104729 + 7) % vocab),
    seqs: [
      {
        numCached: 0,
        numNew: T,
        pageTable: Int32Array.from({ length: Math.ceil(T / PAGE) }, (_, p) => 1 + p),
      },
    ],
    pageSize: PAGE,
    logitsFor: 'last',
  };
}

/** Median host time of 3 prefills after one untimed. */
async function hostPrefillMs(model: MiniMaxM3Model, kv: KvCache, T: number): Promise<number> {
  const batch = prefillBatch(T, model.cfg.vocabSize);
  await model.forward(batch, kv);
  const ms: number[] = [];
  for (let r = 0; r < 3; r++) {
    const t0 = performance.now();
    await model.forward(batch, kv);
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

/** Host ms of 3 prefills, each after `restMs` of idle. */
async function prefillReps(
  model: MiniMaxM3Model,
  batch: ForwardBatch,
  kv: KvCache,
  restMs: number,
): Promise<number[]> {
  const ms: number[] = [];
  for (let r = 0; r < 3; r++) {
    if (restMs) await new Promise((res) => setTimeout(res, restMs));
    const t0 = performance.now();
    await model.forward(batch, kv);
    ms.push(performance.now() - t0);
  }
  return ms;
}

async function timePrefill(
  gpu: CudaBackend,
  model: MiniMaxM3Model,
  kv: KvCache,
  T: number,
  ceil: Ceilings,
): Promise<Record<string, number>> {
  const batch = prefillBatch(T, model.cfg.vocabSize);
  await model.forward(batch, kv);
  const tl = await profileTimeline(gpu, () => model.forward(batch, kv));
  console.log(
    `per-op device ms, prefill ${T}: ${tl.ops.map(([k, v]) => `${k} ${v.toFixed(2)}`).join('; ')}`,
  );
  console.log(
    `prefill ${T} timeline: op sum ${tl.sumMs.toFixed(2)} ms, device span ${tl.spanMs.toFixed(2)} ms, host ${tl.hostMs.toFixed(2)} ms (profiled call); largest gaps: ${tl.gaps
      .map((g) => `${g.ms.toFixed(3)} ms after #${g.index - 1} ${g.after} before ${g.before}`)
      .join('; ')}`,
  );
  const ms = await prefillReps(model, batch, kv, 0);
  // The same prefill after 500 ms idle each: back-to-back prefills at this size have run about
  // 5% slower than the profiled call before them (s10w2: 8k 58.1 vs 55.4 ms); this row tells
  // the GPU's sustained-load behaviour apart from the engine's work.
  const rested = await prefillReps(model, batch, kv, 500);
  console.log(
    `prefill ${T} host ms: back-to-back ${ms.map((x) => x.toFixed(1)).join(' ')}; after 500 ms idle ${rested.map((x) => x.toFixed(1)).join(' ')}`,
  );
  const flops = prefillFlops(model.cfg, T);
  const t = median(ms);
  const tflops = flops / (t * 1e-3) / 1e12;
  return {
    tokens: T,
    ms: t,
    opSumMs: tl.sumMs,
    spanMs: tl.spanMs,
    attentionMs: tl.ops.find(([k]) => k === 'attention')?.[1] ?? 0,
    tflops,
    fractionOfGemm: tflops / ceil.gemmTflops,
    tokensPerSecond: T / (t * 1e-3),
    restedMs: median(rested),
    // Like with like: back-to-back prefills against the sustained GEMM rate, prefills after
    // an idle pause against the GEMM's own short burst.
    fractionOfSustainedGemm: tflops / ceil.gemmSustainedTflops,
    restedFractionOfGemm: flops / (median(rested) * 1e-3) / 1e12 / ceil.gemmTflops,
  };
}

function markdown(
  cfg: ModelConfig,
  ceil: Ceilings,
  prefills: Record<string, number>[],
  rows: DecodeRow[],
  context: number,
  check: unknown,
  quantization: string,
  weightBytes: WeightBytes,
  kv: KvCache,
): string {
  const wtype =
    quantization === 'fp8'
      ? 'block-FP8 linears (--quantization fp8; decode kernels by size: fp8DenseKernel, fp8MoeKernel)'
      : 'bf16';
  const lines = [
    `Model: MiniMax-M3 real dimensions, ${cfg.numLayers} layers (3 dense + ${cfg.numLayers - 3} MoE), ${wtype}, shared expert fused (129 x top-5).`,
    `Weights by dtype: ${Object.entries(weightBytes)
      .map(([k, v]) => `${k} ${(v / 1e9).toFixed(3)} GB`)
      .join(', ')}; total ${(totalWeightBytes(weightBytes) / 1e9).toFixed(3)} GB.`,
    `KV cache: ${kv.dtype} (--kv-cache-dtype), ${(kvBytesPerPage(cfg, { tpRank: 0, tpSize: 1 }, 1, kv.dtype === 'fp8_e4m3' ? 1 : 2) / 1024).toFixed(1)} KiB per token over all layers, ${kv.numPages} pages of ${kv.pageSize}.`,
    `Ceilings measured in the same run: cuBLAS bf16 GEMM 8192^3 ${ceil.gemmTflops.toFixed(0)} TFLOP/s (sustained ${ceil.gemmSustainedTflops.toFixed(0)}), device copy ${ceil.copyTBs.toFixed(2)} TB/s.`,
    '',
    ...prefills.map(
      (prefill) =>
        `Prefill ${prefill['tokens']} tokens: ${prefill['ms']!.toFixed(1)} ms, ${prefill['tflops']!.toFixed(0)} TFLOP/s = ${(100 * prefill['fractionOfGemm']!).toFixed(0)}% of the measured GEMM rate (back to back vs the sustained GEMM: ${(100 * prefill['fractionOfSustainedGemm']!).toFixed(0)}%; after 500 ms idle, ${prefill['restedMs']!.toFixed(1)} ms: ${(100 * prefill['restedFractionOfGemm']!).toFixed(0)}%).`,
    ),
    '',
    `Decode (context ${context} per sequence, CUDA graph replay, device time, median of 20):`,
    '',
    '| variant | batch | step ms (graph) | step ms (eager, host) | attention ms (device) | experts/layer | weights GB | KV GB | roofline ms | % of roofline |',
    '|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.variant} | ${r.batch} | ${r.graphMs.toFixed(3)} | ${r.eagerMs.toFixed(2)} | ${r.attentionMs.toFixed(3)} | ${r.distinctExperts.toFixed(1)} | ${r.weightGB.toFixed(2)} | ${r.kvGB.toFixed(3)} | ${r.rooflineMs.toFixed(3)} | ${(100 * r.fraction).toFixed(0)}% |`,
    ),
    '',
    'Correctness against the CPU backend: ' + JSON.stringify(check),
  ];
  return lines.join('\n');
}

/** `--quantization`: none, fp8, or a list (none,fp8: the same weights benched, then quantized). */
function quantizationArg(): ('none' | 'fp8')[] {
  const qs = arg('quantization', 'none').split(',');
  for (const q of qs)
    if (q !== 'none' && q !== 'fp8') throw new Error(`--quantization must be fp8, not ${q}`);
  return qs as ('none' | 'fp8')[];
}

/** `--kv-cache-dtype` (vLLM's values), resolved. */
function kvCacheDtypeArg(): KvCacheDtype {
  const flag = arg('kv-cache-dtype', 'auto');
  if (!(KV_CACHE_DTYPE_FLAGS as readonly string[]).includes(flag))
    throw new Error(`--kv-cache-dtype must be one of ${KV_CACHE_DTYPE_FLAGS.join(', ')}`);
  return resolveKvCacheDtype(flag as KvCacheDtypeFlag);
}

interface Setup {
  gpu: CudaBackend;
  ceil: Ceilings;
  cfg: ModelConfig;
  context: number;
  batches: number[];
  prefillTs: number[];
  prefillAttention: string;
  kvCacheDtype: KvCacheDtype;
  kv: KvCache;
  out: string;
  /** Output file stem: gpu-bench, or gpu-bench-<quantization> when one run does several. */
  stem: string;
  /** --fp8-decode: FP8 decode kernel choices timed in turn (default, v8). */
  fp8Decode: readonly Fp8DecodeChoice[];
  /** --moe-scan: MoE tile-table kernels timed in turn (serial, warp). */
  moeScans: readonly MoeScan[];
}

interface PassResult {
  prefill: Record<string, number>[];
  decode: DecodeRow[];
  weightGB: number;
}

/** One quantization's check, prefill and decode timings on `weights`; writes its files. */
async function runPass(s: Setup, quantization: string, weights: ModelWeights): Promise<PassResult> {
  const { gpu, cfg, ceil, context, kv } = s;
  const linearBytes = quantization === 'fp8' ? 1 + 4 / 128 : 2;
  const weightBytes = weightBytesByDtype(weights, gpu);
  console.log(
    `${quantization}: weights by dtype (GB): ${JSON.stringify(Object.fromEntries(Object.entries(weightBytes).map(([k, v]) => [k, +(v / 1e9).toFixed(3)])))}, total ${(totalWeightBytes(weightBytes) / 1e9).toFixed(3)} GB`,
  );
  const model = new MiniMaxM3Model(cfg, weights, gpu, new SingleRankCommunicator());
  let check: unknown = 'skipped';
  if (!process.argv.includes('--skip-check'))
    check = await realCheck(gpu, model, Number(arg('prompt', '8')));
  const pagesPerSeq = Math.ceil((context + 1) / PAGE);
  const prefills: Record<string, number>[] = [];
  for (const T of s.prefillTs) {
    // A failing prefill is reported and the decode rows still run (one GPU window, two goals).
    const prefill = await timePrefill(gpu, model, kv, T, ceil).catch((e: Error) => {
      console.log(`${quantization} prefill ${T} FAILED: ${e.stack ?? e.message}`);
      return null;
    });
    if (!prefill) continue;
    console.log(
      `${quantization} prefill ${T} (${s.prefillAttention} attention): ${prefill['ms']!.toFixed(1)} ms, ${prefill['tflops']!.toFixed(0)} TFLOP/s`,
    );
    prefills.push(prefill);
  }
  for (const n of arg('moe-lanes', '')
    .split(',')
    .map(Number)
    .filter((x) => x > 0)) {
    gpu.setTuning({ moeLanes: n });
    for (const T of s.prefillTs)
      console.log(
        `prefill ${T}, ${n} MoE lanes: ${(await hostPrefillMs(model, kv, T)).toFixed(1)} ms`,
      );
  }
  gpu.setTuning({});
  const rows: DecodeRow[] = [];
  const choices = quantization === 'fp8' ? s.fp8Decode : (['default'] as const);
  for (const scan of s.moeScans)
    for (const choice of choices) {
      gpu.setTuning({ moeScan: scan, fp8Decode: choice });
      const variant = `${choice}/${scan}`;
      for (const B of s.batches) {
        const first = rows.length < s.batches.length;
        const r = await timeDecode(
          gpu,
          model,
          kv,
          B,
          context,
          pagesPerSeq,
          ceil,
          linearBytes,
          variant,
          first,
        );
        console.log(
          `${quantization} decode [${variant}] B=${B}: ${r.graphMs.toFixed(3)} ms graph, ${r.eagerMs.toFixed(2)} ms eager, roofline ${r.rooflineMs.toFixed(3)} ms (${(100 * r.fraction).toFixed(0)}%)`,
        );
        rows.push(r);
      }
    }
  gpu.setTuning({});
  mkdirSync(s.out, { recursive: true });
  writeFileSync(
    join(s.out, `${s.stem}.json`),
    JSON.stringify(
      {
        ceil,
        prefillAttention: s.prefillAttention,
        quantization,
        kvCacheDtype: s.kvCacheDtype,
        weightBytes,
        prefill: prefills,
        decode: rows,
        check,
        context,
        layers: cfg.numLayers,
      },
      null,
      2,
    ),
  );
  const md = markdown(cfg, ceil, prefills, rows, context, check, quantization, weightBytes, kv);
  writeFileSync(join(s.out, `${s.stem}.md`), md);
  console.log(`\n${md}`);
  return { prefill: prefills, decode: rows, weightGB: totalWeightBytes(weightBytes) / 1e9 };
}

/** FP8 over bf16: weight memory, decode graph step per batch, prefill rate. */
function ratios(b: PassResult, f: PassResult): string {
  const pct = (r: DecodeRow) => `${(100 * r.fraction).toFixed(0)}%`;
  return [
    '| | bf16 | FP8 | FP8 / bf16 |',
    '|---|---|---|---|',
    `| weight memory GB | ${b.weightGB.toFixed(3)} | ${f.weightGB.toFixed(3)} | ${(f.weightGB / b.weightGB).toFixed(3)} |`,
    ...f.decode.flatMap((q) => {
      // bf16 with the same MoE tile-table kernel and batch.
      const scan = q.variant.split('/')[1];
      const r = b.decode.find((x) => x.batch === q.batch && x.variant.split('/')[1] === scan);
      if (!r) return [];
      return [
        `| decode graph step B=${q.batch} ms (% of own roofline) [FP8 ${q.variant}] | ${r.graphMs.toFixed(3)} (${pct(r)}) | ${q.graphMs.toFixed(3)} (${pct(q)}) | ${(q.graphMs / r.graphMs).toFixed(3)} |`,
      ];
    }),
    ...b.prefill.flatMap((p) => {
      const q = f.prefill.find((x) => x['tokens'] === p['tokens']);
      if (!q) return [];
      return `| prefill ${p['tokens']} TFLOP/s | ${p['tflops']!.toFixed(0)} | ${q['tflops']!.toFixed(0)} | ${(q['tflops']! / p['tflops']!).toFixed(3)} |`;
    }),
  ].join('\n');
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const numMoe = Number(arg('moe-layers', '5'));
  const context = Number(arg('context', '1024'));
  const batches = arg('batches', '1,8,32,64,128')
    .split(',')
    .map(Number)
    .filter((b) => b > 0); // --batches 0: prefill only
  const prefillTs = arg('prefill', '2048')
    .split(',')
    .map(Number)
    .filter((t) => t > 0); // --prefill 0: none
  const prefillAttention = arg('prefill-attention', 'tensor-cores');
  if (
    prefillAttention !== 'tensor-cores' &&
    prefillAttention !== 'wgmma' &&
    prefillAttention !== 'scalar'
  )
    throw new Error(
      `--prefill-attention must be tensor-cores, wgmma or scalar, not ${prefillAttention}`,
    );
  const gpu = await createCudaBackend({ prefillAttention });
  const ceil = smoke(gpu);
  const cfg = realConfig(numMoe);
  for (const T of arg('attention-alone', '')
    .split(',')
    .map(Number)
    .filter((n) => n > 0)) {
    const r = timePrefillAttention(gpu, cfg, T, process.argv.includes('--attention-ws'));
    if (r['rel_ws_wg'] !== undefined)
      console.log(
        `attention FA_WS T=${T}: dense ${r['ms_ws']!.toFixed(3)} ms (wg ${r['ms_wg']!.toFixed(3)}), sparse ${r['ms_sparse_ws']!.toFixed(3)} ms (wg ${r['ms_sparse_wg']!.toFixed(3)}); outputs vs wg ${r['rel_ws_wg']!.toExponential(2)} / ${r['rel_sparse_ws_wg']!.toExponential(2)}`,
      );
    const sp = timeSparseAttention(gpu, cfg, T);
    console.log(
      `attention alone T=${T}: ${KERNEL_KEYS.map((key) => `${key} ${(r[`ms_${key}`] ?? 0).toFixed(3)} ms (${(r[`tflops_${key}`] ?? 0).toFixed(0)} TFLOP/s)`).join(', ')}; ` +
        `MSA-sparse (random top-${cfg.sparse?.topkBlocks ?? 16}) default ${sp.ms_sparse_default.toFixed(3)} ms, wgmma ${sp.ms_sparse_wgmma.toFixed(3)} ms, decode kernel ${sp.ms_sparse_decode_kernel.toFixed(3)} ms`,
    );
  }
  const t0 = performance.now();
  const quantizations = quantizationArg();
  const kvCacheDtype = kvCacheDtypeArg();
  let weights = await buildGpuWeights(gpu, cfg, true);
  gpu.synchronize();
  console.log(
    `built ${cfg.numLayers}-layer real-dimension weights on the GPU in ${(performance.now() - t0).toFixed(0)} ms; ${(gpu.dev.bytesAllocated / 2 ** 30).toFixed(1)} GiB allocated`,
  );
  const pagesPerSeq = Math.ceil((context + 1) / PAGE);
  const maxB = Math.max(0, ...batches);
  const kv = allocKvCache(
    gpu,
    cfg,
    { tpRank: 0, tpSize: 1 },
    1 + Math.max(maxB * pagesPerSeq, Math.ceil(Math.max(0, ...prefillTs) / PAGE)),
    PAGE,
    kvCacheDtype,
  );
  const fp8Decode = arg('fp8-decode', 'default').split(',') as Fp8DecodeChoice[];
  const moeScans = arg('moe-scan', DEFAULT_TUNING.moeScan).split(',') as MoeScan[];
  if (fp8Decode.some((c) => c !== 'default' && c !== 'v8'))
    throw new Error('--fp8-decode takes default and/or v8');
  if (moeScans.some((c) => c !== 'serial' && c !== 'warp' && c !== 'block'))
    throw new Error('--moe-scan takes serial, warp and/or block');
  const setup = {
    fp8Decode,
    moeScans,
    gpu,
    ceil,
    cfg,
    context,
    batches,
    prefillTs,
    prefillAttention,
    kvCacheDtype,
    kv,
    out,
  };
  const results: Partial<Record<'none' | 'fp8', PassResult>> = {};
  for (const q of quantizations) {
    // `--quantization fp8` as the loader applies it: block FP8 on the device, bf16 freed.
    if (q === 'fp8') weights = quantizeModelWeights(weights, gpu);
    gpu.synchronize();
    const stem = quantizations.length > 1 ? `gpu-bench-${q}` : 'gpu-bench';
    results[q] = await runPass({ ...setup, stem }, q, weights);
  }
  if (results.none && results.fp8) console.log(`\n${ratios(results.none, results.fp8)}`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
