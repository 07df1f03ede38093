/**
 * Every golden case through the MiniMax-M3 model on the CUDA backend against the same model on
 * the CPU backend (per-position ‖Δ‖/‖ref‖ of the logits, same argmax where the CPU's top-1
 * margin exceeds the error, routed-expert sets), and the seed-002 capture check with
 * shared-experts fusion on the GPU.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Backend } from '../../src/backend/backend.js';
import { loadModel } from '../../src/model/load-model.js';
import { compareGolden, type GoldenExpect } from '../../src/model/golden-compare.js';
import { badFusionRows } from '../../src/model/fusion-capture.js';
import { prefillBatch, runForward, singleSequenceCache } from '../../src/model/run-forward.js';
import { argmax, relErr, type Row } from './check-util.js';

const REL_LIMIT = 2e-2;

interface LogitStats {
  maxRel: number;
  medianRel: number;
  overLimit: number;
  top1Mismatch: number;
  top1Checked: number;
}

/** Per position: relative error, and top-1 agreement where the reference margin allows. */
export function compareLogits(got: ArrayLike<number>[], ref: ArrayLike<number>[]): LogitStats {
  let maxRel = 0;
  let top1Mismatch = 0;
  let top1Checked = 0;
  const rels: number[] = [];
  ref.forEach((r, t) => {
    const g = got[t]!;
    const rel = relErr(g, r);
    rels.push(rel);
    maxRel = Math.max(maxRel, rel);
    const a = argmax(r);
    let second = -Infinity;
    let norm = 0;
    for (let i = 0; i < r.length; i++) {
      if (i !== a) second = Math.max(second, r[i]!);
      norm += r[i]! * r[i]!;
    }
    // The margin must exceed the error scale (rel · RMS of the row) to call a flip a bug.
    const errScale = REL_LIMIT * Math.sqrt(norm / r.length) * 4;
    if (r[a]! - second > errScale) {
      top1Checked++;
      if (argmax(g) !== a) top1Mismatch++;
    }
  });
  rels.sort((a, b) => a - b);
  const medianRel = rels[Math.floor(rels.length / 2)] ?? 0;
  return {
    maxRel,
    medianRel,
    overLimit: rels.filter((x) => x >= REL_LIMIT).length,
    top1Mismatch,
    top1Checked,
  };
}

export async function checkGolden(dir: string, cpu: Backend, gpu: Backend): Promise<Row[]> {
  const rows: Row[] = [];
  if (!existsSync(dir))
    return [{ check: `golden dir ${dir}`, value: 'missing', limit: '-', pass: false }];
  for (const name of readdirSync(dir).sort()) {
    const caseDir = join(dir, name);
    if (!existsSync(join(caseDir, 'expect.json'))) continue;
    try {
      const ids = (
        JSON.parse(readFileSync(join(caseDir, 'expect.json'), 'utf8')) as { ids: number[] }
      ).ids;
      const ref = await runForward(await loadModel(caseDir, { backend: cpu }), ids);
      const got = await runForward(await loadModel(caseDir, { backend: gpu }), ids);
      const s = compareLogits(got.logits, ref.logits);
      let routeDiff = 0;
      let routeRows = 0;
      for (const [layer, refRows] of Object.entries(ref.routedExperts)) {
        refRows.forEach((r, t) => {
          routeRows++;
          const g = [...(got.routedExperts[layer]?.[t] ?? [])].sort((a, b) => a - b).join(',');
          if (g !== [...r].sort((a, b) => a - b).join(',')) routeDiff++;
        });
      }
      // bf16 activations flip near-tied MSA blocks and routes of these tiny models (the golden
      // README says so); a flip moves that position's logits entirely. Reported, not gated:
      // the f32 mode below is gated on expect.json.
      rows.push({
        check: `${name} bf16: median / max rel logit err`,
        value: `${s.medianRel.toExponential(1)} / ${s.maxRel.toExponential(1)}`,
        limit: 'info',
        pass: true,
      });
      rows.push({
        check: `${name} bf16: positions over 2e-2`,
        value: `${s.overLimit}/${ref.logits.length}`,
        limit: 'info',
        pass: true,
      });
      rows.push({
        check: `${name} bf16: top-1 flips (margin-checked)`,
        value: `${s.top1Mismatch}/${s.top1Checked}`,
        limit: 'info',
        pass: true,
      });
      rows.push({
        check: `${name} bf16: routed-expert rows differing`,
        value: `${routeDiff}/${routeRows}`,
        limit: 'info',
        pass: true,
      });
    } catch (e) {
      console.error(`${name}: ${(e as Error).stack ?? String(e)}`);
      rows.push({ check: `${name}`, value: 'error', limit: '-', pass: false });
    }
  }
  return rows;
}

/** Seed 002: with fusion on, every captured row has K distinct routed ids < E and one id E. */
export async function checkFusionCapture(caseDir: string, gpu: Backend): Promise<Row> {
  const ids = (JSON.parse(readFileSync(join(caseDir, 'expect.json'), 'utf8')) as { ids: number[] })
    .ids;
  const model = await loadModel(caseDir, { backend: gpu, fuseSharedExperts: true });
  const { numExperts: E, numExpertsPerTok: K } = model.cfg;
  const { kv, pageTable } = singleSequenceCache(model, ids.length);
  const out = await model.forward(prefillBatch(ids, pageTable, kv.pageSize, 'last', true), kv);
  const total = Object.keys(out.routedExperts).length * ids.length;
  const bad = badFusionRows(out.routedExperts, ids.length, K, E);
  return {
    check: 'fusion capture: K distinct routed < E + one shared',
    value: `${bad}/${total} bad`,
    limit: '0',
    pass: bad === 0 && total > 0,
  };
}

/** The float32 mode of the CUDA backend against expect.json under the golden pass rule. */
export async function checkGoldenExpect(dir: string, gpu32: Backend): Promise<Row[]> {
  const rows: Row[] = [];
  for (const name of readdirSync(dir).sort()) {
    const caseDir = join(dir, name);
    if (!existsSync(join(caseDir, 'expect.json'))) continue;
    try {
      const expect = JSON.parse(readFileSync(join(caseDir, 'expect.json'), 'utf8')) as GoldenExpect;
      const got = await runForward(await loadModel(caseDir, { backend: gpu32 }), expect.ids);
      const r = compareGolden(expect, got);
      rows.push({
        check: `${name} (CUDA f32 mode) vs expect.json`,
        value: r.maxAbsDiff.toExponential(2),
        limit: `${r.tolerance.toExponential(1)}, argmax, routes`,
        pass: r.pass,
      });
      if (!r.pass) console.error(`${name}: ${r.problems.join('; ')}`);
    } catch (e) {
      console.error(`${name}: ${(e as Error).stack ?? String(e)}`);
      rows.push({ check: `${name} (CUDA f32 mode)`, value: 'error', limit: '-', pass: false });
    }
  }
  return rows;
}
