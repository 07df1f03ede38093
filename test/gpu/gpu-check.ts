/**
 * The GPU-versus-CPU check (run on the GPU machine):
 *   node dist/gpu/test/gpu/gpu-check.js [--golden DIR] [--out DIR]
 *        [--only smoke,ops,router,msa,golden,sampler,engine,load,skinny,fp8,w8a8,kv-fp8 (default), attention,
 *                comm, comm-procs, gemm-rs, group, fp8-real, tiny-long, msa-ops, fused, moe] [--fp8-real-positions 2]
 *        [--comm-ranks 2,4,8] [--comm-tokens 1,7,128,1000,8192] [--comm-hidden 6144] [--gemm-rs-procs 2,4] [--group-parts layouts,trace,failures]
 *        [--group-layouts tp2,tp4+sp,tp2+ep+sp,tp2+sp+long,tp4:--allreduce-fusion=off]
 *        [--group-failures 0,1,2]
 * 1. FFI smoke and device ceilings, 2. every op against the CPU backend on random inputs,
 * 3. every golden case through the model on CUDA versus CPU, plus the seed-002 capture check,
 * 4. the GPU sampler against the host sampler (sampler-check.ts), 5. greedy tokens through the
 * engine with CUDA graphs, with --enforce-eager and on the CPU (engine-check.ts),
 * 6. streamed and dummy loading on CUDA versus CPU, and the NaN/Inf scan (load-check.ts),
 * 7. the CUDA IPC collectives and the fused all-reduce + add + norm with 2/4/8 ranks sharing
 * the GPU as streams (comm-check.ts) and as processes (comm-process-check.ts),
 * 7b. GEMM + reduce-scatter against GEMM then reduce-scatter bit for bit, ranks as streams
 * (comm-gemm-rs-check.ts) and as processes (comm-process-check.ts),
 * 8. `--tp` groups sharing the GPU through the CLI: forward vs the CPU backend, the fusion
 * trace, and failing ranks ending the group (group-check.ts),
 * 9. the decode GEMMs on bf16 and FP8 weights, split-K, against the CPU (skinny-check.ts),
 * 10. FP8 weights: every FP8 op and FP8 models against the CPU (fp8-check.ts); opt-in, the
 * real-dimension model under --quantization fp8 vs the CPU (fp8-real-check.ts),
 * 11. the FP8 KV cache: every FP8-KV op, models and engine greedy vs the CPU (kv-fp8-check.ts),
 * 12. MSA at long context: selection and sparse attention ops (msa-prefill-check.ts) and an
 * 8,320-token prompt through a reduced-width MSA model (msa-model-check.ts),
 * 13. the bf16x3 router at the real router shape: its split after every write path, logits
 * at M = 300 and 8192 and the routed ids against the CPU's f32 GEMM (router-check.ts);
 * `attention` runs only the attention kernels' checks of `ops`, `moe` only its MoE paths'.
 * Writes gpu-check.json under --out (default $OUT or .), prints a table, exits 1 on failure.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CpuBackend } from '../../src/backend/cpu/cpu-backend.js';
import { createCudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import { type Row, printTable } from './check-util.js';
import { checkCommStreams } from './comm-check.js';
import { checkGemmRsStreams } from './comm-gemm-rs-check.js';
import { checkCommProcesses, checkGemmRsProcesses } from './comm-process-check.js';
import { checkDecodeAttention } from './decode-attention-check.js';
import { checkEngineGreedy } from './engine-check.js';
import { checkSharedGpuGroups, type GroupLayout } from './group-check.js';
import { checkFusionCapture, checkGolden, checkGoldenExpect } from './golden-check.js';
import { checkLoading } from './load-check.js';
import { checkFp8 } from './fp8-check.js';
import { checkFp8Real } from './fp8-real-check.js';
import { checkW8a8 } from './w8a8-check.js';
import { checkKvFp8 } from './kv-fp8-check.js';
import { checkNormRopeCache } from './norm-rope-cache-check.js';
import { checkTinyLong } from './tiny-long-check.js';
import { checkMoeGrouped, checkMoePaths, checkMoeSkinnyTiles } from './moe-check.js';
import { checkMsaModel } from './msa-model-check.js';
import { checkMsaPrefill } from './msa-prefill-check.js';
import { checkOps } from './op-check.js';
import { checkPrefillAttention } from './prefill-attention-check.js';
import { checkRouter } from './router-check.js';
import { checkSampler } from './sampler-check.js';
import { checkSkinny } from './skinny-check.js';
import { checkWgmmaGemm } from './wgmma-gemm-check.js';
import { checkHalf, checkSplit } from './split-check.js';
import { smoke } from './smoke.js';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

async function main(): Promise<void> {
  // Load every kernel of a module with it: a lazily loaded first launch may wait behind a
  // kernel spinning for another rank (CUDA lazy-loading caveat for interdependent kernels).
  process.env['CUDA_MODULE_LOADING'] ??= 'EAGER';
  const outDir = arg('out', process.env['OUT'] ?? '.');
  const golden = arg('golden', process.env['MOESERVE_GOLDEN'] ?? 'test/fixtures/golden');
  const only = new Set(
    arg('only', 'smoke,ops,router,msa,golden,sampler,engine,load,skinny,fp8,w8a8,kv-fp8').split(
      ',',
    ),
  );
  const gpu = await createCudaBackend();
  const cpu = new CpuBackend();
  const result: Record<string, unknown> = {};
  const all: Row[] = [];
  if (only.has('smoke')) result['ceilings'] = smoke(gpu);
  if (only.has('ops')) {
    const rows = [
      ...checkOps(cpu, gpu),
      ...checkPrefillAttention(cpu, gpu),
      ...checkDecodeAttention(cpu, gpu),
      ...checkMoePaths(cpu, gpu),
    ];
    printTable('ops: CUDA vs CPU', rows);
    all.push(...rows);
  }
  if (only.has('router')) {
    const rows = guard('bf16x3 router', () => checkRouter(cpu, gpu));
    printTable('bf16x3 router [128, 6144]: split, logits and ids vs the CPU f32 GEMM', rows);
    all.push(...rows);
  }
  if (only.has('attention')) {
    // The attention kernels' checks alone (also part of ops), for a quick look after a change.
    const rows = [...checkPrefillAttention(cpu, gpu), ...checkDecodeAttention(cpu, gpu)];
    printTable('attention kernels: CUDA vs CPU', rows);
    all.push(...rows);
  }
  if (only.has('moe')) {
    // The MoE paths' checks of `ops` alone (tiles, per-expert cuBLAS on its lanes, vs CPU).
    const rows = checkMoePaths(cpu, gpu);
    printTable('MoE paths: CUDA vs CPU and vs each other', rows);
    all.push(...rows);
  }
  if (only.has('msa-ops')) {
    // The MSA selection and sparse attention checks of `msa` without its model check.
    const rows = checkMsaPrefill(cpu, gpu);
    printTable('MSA selection and sparse attention vs CPU', rows);
    all.push(...rows);
  }
  if (only.has('msa')) {
    const gpu32 = await createCudaBackend({ float32: true });
    const rows = [...checkMsaPrefill(cpu, gpu), ...(await checkMsaModel(cpu, gpu, gpu32))];
    printTable('MSA selection, sparse attention and an MSA model at long context', rows);
    all.push(...rows);
  }
  if (only.has('fused')) {
    // The fused norm/RoPE/cache kernel (the default: bit for bit against the steps) and the
    // grouped cuBLAS MoE GEMMs (opt-in; against the CPU and the per-expert loop).
    const rows = [...(await checkNormRopeCache(gpu)), ...checkMoeGrouped(cpu, gpu)];
    printTable('fused norm/RoPE/cache kernel and grouped MoE GEMMs', rows);
    all.push(...rows);
  }
  if (only.has('tiny-long')) {
    // Opt-in diagnosis: tiny-moe at the group check's 1,101-token prompt (tiny-long-check.ts).
    const gpu32 = await createCudaBackend({ float32: true });
    const rows = await checkTinyLong(cpu, gpu, gpu32, golden).catch((e: Error) => {
      console.error(e.stack);
      return [{ check: 'tiny-long', value: 'error', limit: '-', pass: false }];
    });
    printTable(
      'tiny-moe at 1,101 tokens: its kernels vs CPU, f32 mode, bf16 with ties given',
      rows,
    );
    all.push(...rows);
  }
  if (only.has('golden')) {
    const rows = await checkGolden(golden, cpu, gpu);
    rows.push(
      await checkFusionCapture(join(golden, 'tiny-moe'), gpu).catch((e: Error) => {
        console.error(e.stack);
        return { check: 'fusion capture', value: 'error', limit: '-', pass: false };
      }),
    );
    const gpu32 = await createCudaBackend({ float32: true });
    rows.push(...(await checkGoldenExpect(golden, gpu32)));
    printTable('golden: model on CUDA vs CPU (bf16), CUDA f32 mode vs expect.json', rows);
    all.push(...rows);
  }
  if (only.has('sampler')) {
    const rows = await checkSampler(gpu).catch((e: Error) => {
      console.error(e.stack);
      return [{ check: 'sampler', value: 'error', limit: '-', pass: false }];
    });
    printTable('GPU sampler vs host sampler', rows);
    all.push(...rows);
  }
  if (only.has('engine')) {
    const rows = await checkEngineGreedy(golden, await createCudaBackend({ float32: true }));
    printTable('engine: CUDA graphs / eager / CPU greedy tokens (f32 mode)', rows);
    all.push(...rows);
  }
  if (only.has('load')) {
    const rows = await checkLoading(cpu, gpu, await createCudaBackend({ float32: true }));
    printTable('loading: streamed and dummy loads on CUDA vs CPU, NaN/Inf scan', rows);
    all.push(...rows);
  }
  const commRanks = arg('comm-ranks', '2,4,8').split(',').map(Number);
  const hidden = Number(arg('comm-hidden', '6144'));
  if (only.has('comm')) {
    const tokens = arg('comm-tokens', '1,7,128,1000,8192').split(',').map(Number);
    const rows = guard('comm', () =>
      checkCommStreams({ ranks: commRanks, tokens, hidden }, (W, r) =>
        printTable(
          `IPC collectives, ${W} ranks as streams of one process, vs the CPU definition`,
          r,
        ),
      ),
    );
    all.push(...rows);
  }
  if (only.has('comm-procs')) {
    const o = { ranks: commRanks, tokens: [1, 7], hidden, timeoutMs: 120_000 };
    const rows = await checkCommProcesses(o);
    printTable('IPC collectives, ranks as processes sharing the GPU (cuIpc handles)', rows);
    all.push(...rows);
  }
  if (only.has('gemm-rs')) {
    const rows = guard('gemm-rs', () =>
      checkGemmRsStreams(commRanks, (W, r) =>
        printTable(`GEMM + reduce-scatter, ${W} ranks as streams of one process`, r),
      ),
    );
    const procs = arg('gemm-rs-procs', '2,4').split(',').map(Number);
    const prows = await checkGemmRsProcesses(procs, 180_000);
    printTable('GEMM + reduce-scatter, ranks as processes sharing the GPU', prows);
    all.push(...rows, ...prows);
  }
  if (only.has('group')) {
    // --group-parts layouts,trace,failures; --group-layouts tp4,tp2+sp,tp2+sp+long,tp4:--allreduce-fusion=off
    const parts = new Set(arg('group-parts', 'layouts,trace,failures').split(','));
    const picked = process.argv.includes('--group-layouts')
      ? arg('group-layouts', '').split(',').map(parseLayout)
      : undefined;
    const failures = process.argv.includes('--group-failures')
      ? new Set(arg('group-failures', '').split(',').map(Number))
      : undefined;
    const rows = await checkSharedGpuGroups(golden, parts, picked, failures);
    printTable(
      '--tp groups sharing the GPU (--gpu-ids 0,..): vs CPU, fusion trace, failures',
      rows,
    );
    all.push(...rows);
  }
  if (only.has('skinny')) {
    const rows = [
      ...guard('q8 activation split', () => checkSplit(gpu)),
      ...guard('h8 activation scaling', () => checkHalf(gpu)),
      ...guard('skinny GEMMs', () => checkSkinny(cpu, gpu)),
      ...guard('wgmma FP8 GEMM', () => checkWgmmaGemm(cpu, gpu)),
      ...guard('bf16 MoE on the skinny tiles', () => checkMoeSkinnyTiles(cpu, gpu)),
    ];
    printTable('Decode GEMMs (skinny-gemm.cu): bf16 / FP8 weights vs CPU, split-K', rows);
    all.push(...rows);
  }
  if (only.has('fp8')) {
    const rows = await checkFp8(cpu, gpu, golden);
    printTable('FP8 weights: CUDA vs CPU on the same quantized weights', rows);
    all.push(...rows);
  }
  if (only.has('w8a8')) {
    const rows = await checkW8a8(cpu, gpu);
    printTable('W8A8 (block FP8 from 257 rows): quantizer, scale tables, GEMMs vs CPU', rows);
    all.push(...rows);
  }
  if (only.has('kv-fp8')) {
    const rows = await checkKvFp8(cpu, gpu);
    printTable('FP8 KV cache (--kv-cache-dtype fp8): CUDA vs CPU on the same cached values', rows);
    all.push(...rows);
  }
  if (only.has('fp8-real')) {
    // Opt-in: the CPU reference of the real-dimension model takes about a minute.
    let rows: Row[];
    try {
      rows = await checkFp8Real(gpu, Number(arg('fp8-real-positions', '2')));
    } catch (e) {
      console.error((e as Error).stack);
      rows = [
        {
          check: 'real dims FP8',
          value: `error: ${(e as Error).message}`,
          limit: '-',
          pass: false,
        },
      ];
    }
    printTable('FP8 (--quantization fp8) real-dimension model vs CPU', rows);
    all.push(...rows);
  }
  result['rows'] = all;
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'gpu-check.json'), JSON.stringify(result, null, 2));
  const failed = all.filter((r) => !r.pass).length;
  console.log(`\n${all.length - failed}/${all.length} checks passed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

/** `tp4`, `tp2+sp`, `tp2+ep+sp`, `tp2+sp+long`, with `:--flag=value` extra CLI arguments. */
function parseLayout(s: string): GroupLayout {
  const [head, ...extra] = s.split(':');
  const m = /^tp(\d+)(\+ep)?(\+sp)?(\+long)?$/.exec(head!);
  if (!m) throw new Error(`--group-layouts: bad layout ${s}`);
  return {
    tp: Number(m[1]),
    ep: m[2] !== undefined,
    sp: m[3] !== undefined,
    long: m[4] !== undefined,
    extra: extra.flatMap((e) => e.split('=')),
  };
}

function guard(what: string, f: () => Row[]): Row[] {
  try {
    return f();
  } catch (e) {
    console.error((e as Error).stack);
    return [{ check: what, value: `error: ${(e as Error).message}`, limit: '-', pass: false }];
  }
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
