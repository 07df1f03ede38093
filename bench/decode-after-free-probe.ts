/**
 * Follow-up to long-context-decode-probe.ts (issue 12): its run showed the batch-1 decode graph
 * at 100k context slow (3.15 against 1.99 ms, median of 20) only in the first ~60 ms of replays
 * after a ONE-SHOT 100k prefill, and steady at 1.99 ms after 100 more, with the same KV bits,
 * logits and MSA selection as after a chunked prefill. A one-shot 100k prefill's per-layer
 * tensors are over the allocator's 1 GiB pool limit (device-allocator.ts): cuMemAlloc'd and
 * cuMemFree'd each forward (device memory rose to ~102 GB and fell to 64 GB as it ended);
 * 16k chunks keep theirs in the pool. This asks which of these the transient follows:
 *   E1 one-shot prefill, then replays at once (time series: host ms after the prefill, device ms);
 *   E2 one-shot prefill, 300 ms sleep, then replays (time, not replay count, if it is gone);
 *   E3 after a chunked prefill (steady): 8 x 4 GiB cuMemAlloc + memset, replays; then the
 *      same blocks cuMemFree'd, replays; then again alloc, free, 300 ms sleep, replays.
 *   node dist/gpu/bench/decode-after-free-probe.js [--long 100000] [--chunk 16384]
 *        [--gib 32] [--skip-one-shot] [--out DIR] [--dry-run]
 * Writes decode-after-free-probe.json under --out (default $OUT or .).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCudaBackend, type CudaBackend } from '../src/backend/cuda/cuda-backend.js';
import { allocKvCache } from '../src/model/minimax-m3/kv-cache.js';
import { MiniMaxM3Model } from '../src/model/minimax-m3/minimax-m3-model.js';
import { SingleRankCommunicator } from '../src/parallel/communicator.js';
import { median } from '../test/gpu/check-util.js';
import { buildGpuWeights, realConfig } from '../test/gpu/real-model.js';
import {
  arg,
  capture,
  decodeOf,
  PAGE,
  pagesOf,
  prefill,
  sleep,
  stamp,
} from './long-context-util.js';

type Series = [number, number][];

const ONE_SHOTS = [
  ['E1 one-shot, replays at once', 0],
  ['E2 one-shot, 300 ms sleep', 300],
] as const;

/** Medians of replay windows and when the step first stayed within 10% of the steady value. */
function summarize(s: Series, steady: number): string {
  const win = (a: number, b: number) =>
    b > a && a < s.length ? median(s.slice(a, b).map(([, ms]) => ms)).toFixed(3) : '-';
  let settled = s.length;
  for (let i = s.length - 1; i >= 0 && s[i]![1] <= 1.1 * steady; i--) settled = i;
  const at = settled < s.length ? `${s[settled]![0].toFixed(0)} ms (replay ${settled})` : 'never';
  return (
    `replays 0-4 ${win(0, 5)}, 5-19 ${win(5, 20)}, 20-49 ${win(20, 50)}, 50-99 ${win(50, 100)}, ` +
    `100+ ${win(100, s.length)} ms; first ${s[0]![1].toFixed(3)} at ${s[0]![0].toFixed(0)} ms; ` +
    `within 10% of steady from ${at}`
  );
}

type Graph = Awaited<ReturnType<typeof capture>>;

/** E3: replays after cuMemAlloc (+ memset) and cuMemFree of `gib` GiB in 4 GiB blocks. */
async function allocFree(
  gpu: CudaBackend,
  gib: number,
  g: Graph,
  report: (name: string, s: Series) => void,
): Promise<void> {
  report('E3 baseline', g.series(100, performance.now()));
  const blocks = (touch: boolean) => {
    const t0 = performance.now();
    const ptrs = Array.from({ length: gib / 4 }, () => gpu.dev.malloc(4 * 2 ** 30, 'probe'));
    if (touch) for (const p of ptrs) gpu.dev.memsetAsync(p, 0, 4 * 2 ** 30);
    gpu.dev.sync();
    stamp(
      `cuMemAlloc ${gib} GiB${touch ? ' + memset' : ''}: ${(performance.now() - t0).toFixed(1)} ms host`,
    );
    return ptrs;
  };
  const freeAll = (ptrs: number[]) => {
    const t0 = performance.now();
    for (const p of ptrs) gpu.dev.free(p, 4 * 2 ** 30);
    stamp(`cuMemFree ${gib} GiB: ${(performance.now() - t0).toFixed(1)} ms host`);
  };
  const held = blocks(true);
  report(`E3a after cuMemAlloc + memset of ${gib} GiB`, g.series(150, performance.now()));
  freeAll(held);
  report(`E3b after cuMemFree of ${gib} GiB`, g.series(300, performance.now()));
  const untouched = blocks(false);
  report(`E3c after cuMemAlloc of ${gib} GiB, untouched`, g.series(100, performance.now()));
  freeAll(untouched);
  report(`E3d after cuMemFree of ${gib} GiB untouched`, g.series(300, performance.now()));
  freeAll(blocks(true));
  await sleep(300);
  report(`E3e cuMemAlloc + memset + cuMemFree, 300 ms sleep`, g.series(150, performance.now()));
  g.destroy();
}

async function main(): Promise<void> {
  const out = arg('out', process.env['OUT'] ?? '.');
  const long = Number(arg('long', '100000'));
  const chunk = Number(arg('chunk', '16384'));
  const gib = Number(arg('gib', '32'));
  const pages = Math.ceil((long + 1) / PAGE);
  if (process.argv.includes('--dry-run')) {
    console.log(
      `dry run: long ${long}, chunk ${chunk}, ${gib} GiB in 4 GiB blocks, ${pages} pages`,
    );
    return;
  }
  const gpu = await createCudaBackend({});
  const cfg = realConfig(1);
  const weights = await buildGpuWeights(gpu, cfg, true);
  const model = new MiniMaxM3Model(cfg, weights, gpu, new SingleRankCommunicator());
  const kv = allocKvCache(gpu, cfg, { tpRank: 0, tpSize: 1 }, 1 + 2 * pages, PAGE);
  const fill = async (L: number, c: number, base: number) => {
    for (const b of prefill(L, c, pagesOf(pages, base, L), cfg.vocabSize))
      await model.forward(b, kv);
  };
  const decode = (base: number) => decodeOf(long, pagesOf(pages, base, long));
  const results: Record<string, Series> = {};
  let steady = 0;
  const report = (name: string, s: Series) => {
    results[name] = s;
    stamp(`${name}: ${summarize(s, steady)}`);
  };
  await fill(4096, 0, 0); // warm-up: kernels, pool
  // Steady reference: after a chunked prefill (pooled scratch), 300 replays.
  await fill(long, chunk, 1);
  await model.forward(decode(1), kv);
  const ref = await capture(gpu, model, kv, decode(1));
  ref.time(50);
  steady = median(ref.time(100));
  stamp(`steady (chunked prefill, after 50 replays): ${steady.toFixed(3)} ms`);
  ref.destroy();
  const oneShots = process.argv.includes('--skip-one-shot') ? [] : ONE_SHOTS;
  for (const [name, pause] of oneShots) {
    await fill(long, 0, 0);
    const t0 = performance.now();
    await model.forward(decode(0), kv);
    const g = await capture(gpu, model, kv, decode(0));
    if (pause) await sleep(pause);
    report(name, g.series(300, t0));
    g.destroy();
  }
  await allocFree(gpu, gib, await capture(gpu, model, kv, decode(1)), report);
  mkdirSync(out, { recursive: true });
  const round = (s: Series) => s.map(([a, b]) => [Number(a.toFixed(1)), Number(b.toFixed(3))]);
  writeFileSync(
    join(out, 'decode-after-free-probe.json'),
    JSON.stringify(
      {
        long,
        chunk,
        gib,
        steady,
        series: Object.fromEntries(Object.entries(results).map(([k, s]) => [k, round(s)])),
      },
      null,
      1,
    ),
  );
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exitCode = 2;
});
