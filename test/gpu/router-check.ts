/**
 * The bf16x3 router (cuda/matmul-bf16x3.ts, kernels/bf16x3.cu) at MiniMax-M3's router shape
 * [E = 128, D = 6144] against the CPU's f32 GEMM on the same f32 weights (not bf16-rounded):
 * 1. the device parts equal splitBf16x3 of the weight's values bit for bit after every way the
 *    backend writes a router: write, a write into a rows view, fillRandom, and the weight
 *    uploader from f32 bytes and from bf16 bytes (converted on the device);
 * 2. logits of the split path (matmulBf16x3 itself) at M = 64, 300 and 8192: ‖Δ‖/‖ref‖ and
 *    max|Δ|/max|ref| at most 1e-5, next to the f32 path's error on the same data (a plain f32
 *    weight); and `matmul` on the split weight: bit-equal to the split path where it takes it
 *    (M >= BF16X3_MIN_ROWS: all three), else the f32 path's error;
 * 3. top-4 ids of routerTopK on the GPU's logits against the CPU's on its own: equal except
 *    where the CPU's biased scores of the two ids lie within what a 1e-5 · max|ref| logit
 *    error can swap (sigmoid moves a score by at most a quarter of its logit's change).
 */
import type { Backend } from '../../src/backend/backend.js';
import type { CudaBackend } from '../../src/backend/cuda/cuda-backend.js';
import type { CudaTensor } from '../../src/backend/cuda/cuda-tensor.js';
import { bf16x3Applies, matmulBf16x3 } from '../../src/backend/cuda/matmul-bf16x3.js';
import { splitBf16x3 } from '../../src/backend/cuda/split-bf16x3.js';
import { SplitF32Weight } from '../../src/backend/cuda/split-f32-weight.js';
import { bf16ToF32, f32ToBf16 } from '../../src/tensor/dtype.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { countDiff, randArray, relErr, type Row } from './check-util.js';

const [E, D, TOPK] = [128, 6144, 4];
const LIMIT = 1e-5;
const ROUTER = { topK: TOPK, scale: 2.5, sharedExpertId: null };

export function checkRouter(cpu: Backend, gpu: CudaBackend): Row[] {
  return [...checkSplits(gpu), ...checkLogits(cpu, gpu)];
}

function splitWeight(gpu: CudaBackend): SplitF32Weight {
  const w = gpu.allocF32Weight([E, D]);
  if (!(w instanceof SplitF32Weight)) throw new Error('allocF32Weight: not a SplitF32Weight');
  return w;
}

/** Parts that differ, bit for bit, from splitBf16x3 of the weight's current values. */
function partsDiff(gpu: CudaBackend, w: SplitF32Weight): number {
  const want = Float32Array.from(splitBf16x3(gpu.readF32(w)), bf16ToF32);
  const got = gpu.readF32(w.stacked!);
  const [a, b] = [new Uint32Array(got.buffer), new Uint32Array(want.buffer)];
  let n = 0;
  for (let i = 0; i < b.length; i++) if (a[i] !== b[i]) n++;
  return n;
}

function splitRow(check: string, gpu: CudaBackend, w: SplitF32Weight): Row {
  const diff = partsDiff(gpu, w);
  return { check, value: `${diff}/${3 * E * D}`, limit: '0', pass: diff === 0 };
}

function checkSplits(gpu: CudaBackend): Row[] {
  const data = randArray(E * D, 71, 0.05, false);
  const rows: Row[] = [];
  const w = splitWeight(gpu);
  gpu.write(w, data);
  rows.push(splitRow('router split after write', gpu, w));
  gpu.write(gpu.rows(w, 17, 5), randArray(5 * D, 72, 3, false));
  rows.push(splitRow('router split after a rows-view write', gpu, w));
  const r = splitWeight(gpu);
  gpu.fillRandom(r, 73, 0.02);
  rows.push(splitRow('router split after fillRandom', gpu, r));
  const f = splitWeight(gpu);
  uploadBytes(gpu, f, new Uint8Array(data.buffer), 'f32');
  const landed = relErr(gpu.readF32(f), data);
  rows.push(splitRow('router split after f32 uploads', gpu, f));
  rows.push({
    check: 'router f32 uploads land exactly',
    value: landed.toExponential(2),
    limit: '0',
    pass: landed === 0,
  });
  const b = splitWeight(gpu);
  const bits = Uint16Array.from(data, f32ToBf16);
  uploadBytes(gpu, b, new Uint8Array(bits.buffer), 'bf16');
  rows.push(splitRow('router split after bf16 uploads', gpu, b));
  for (const t of [w, r, f, b]) gpu.free(t);
  return rows;
}

/** `bytes` into `w` through the weight uploader, in slot-sized pieces over two slots. */
function uploadBytes(
  gpu: CudaBackend,
  w: SplitF32Weight,
  bytes: Uint8Array,
  src: 'f32' | 'bf16',
): void {
  const slotBytes = 1 << 20; // several pieces, so each lands at its own offset
  const up = gpu.weightUploader({ slotBytes, numSlots: 2, numIds: 1 });
  const elem = src === 'f32' ? 4 : 2;
  try {
    for (let at = 0, i = 0; at < bytes.length; at += slotBytes, i++) {
      const slot = i % 2;
      up.ready(slot);
      const piece = bytes.subarray(at, Math.min(bytes.length, at + slotBytes));
      up.slots[slot]!.set(piece);
      up.upload(slot, piece.length, src, w, at / elem, 0);
    }
    const bad = up.finish()[0]!;
    if (bad !== 0) throw new Error(`router upload: ${bad} non-finite values`);
  } finally {
    up.close();
  }
}

function checkLogits(cpu: Backend, gpu: CudaBackend): Row[] {
  const wdata = randArray(E * D, 81, 2 / Math.sqrt(D), false);
  const bias = randArray(E, 82, 0.1, false);
  const wc = cpu.upload(wdata, [E, D], 'f32');
  const ws = splitWeight(gpu);
  gpu.write(ws, wdata);
  const wf = gpu.upload(wdata, [E, D], 'f32');
  const [bc, bg] = [cpu.upload(bias, [E], 'f32'), gpu.upload(bias, [E], 'f32')];
  const rows: Row[] = [];
  for (const M of [64, 300, 8192]) {
    const x = randArray(M * D, 90 + M, 1, true);
    const xc = cpu.upload(x, [M, D], 'bf16');
    const xg = gpu.upload(x, [M, D], 'bf16') as CudaTensor;
    const logits = (b: Backend, w: Tensor) => {
      const o = b.alloc([M, E], 'f32');
      b.matmul(o, b === cpu ? xc : xg, w);
      return o;
    };
    const ref = logits(cpu, wc);
    const refv = cpu.readF32(ref);
    // The split path itself at every M, whatever rows BF16X3_MIN_ROWS gives it in matmul.
    const split = gpu.alloc([M, E], 'f32') as CudaTensor;
    matmulBf16x3(gpu.ctx, gpu.gemm, split, xg, ws, M);
    const splitv = gpu.readF32(split);
    rows.push(...errorRows(`router bf16x3 M=${M}`, splitv, refv));
    const [plain, viaMatmul] = [logits(gpu, wf), logits(gpu, ws)];
    rows.push(...errorRows(`router f32 path M=${M}`, gpu.readF32(plain), refv));
    const chosen = gpu.readF32(viaMatmul);
    if (bf16x3Applies(ws, xg, M)) {
      const same = countDiff(chosen, splitv);
      rows.push({
        check: `router matmul M=${M} takes bf16x3 (values differing from it)`,
        value: `${same}/${M * E}`,
        limit: '0',
        pass: same === 0,
      });
    } else rows.push(...errorRows(`router matmul M=${M} (f32 path)`, chosen, refv));
    rows.push(idsRow(cpu, gpu, M, { ref, refv, split, bc, bg, bias }));
    for (const t of [xg, split, plain, viaMatmul]) gpu.free(t);
  }
  for (const t of [ws, wf, bg]) gpu.free(t);
  return rows;
}

function errorRows(what: string, got: Float32Array, ref: Float32Array): Row[] {
  const rel = relErr(got, ref);
  let maxD = 0;
  let maxR = 0;
  for (let i = 0; i < ref.length; i++) {
    maxD = Math.max(maxD, Math.abs(got[i]! - ref[i]!) || (Number.isNaN(got[i]!) ? Infinity : 0));
    maxR = Math.max(maxR, Math.abs(ref[i]!));
  }
  const row = (check: string, v: number): Row => ({
    check,
    value: v.toExponential(2),
    limit: LIMIT.toExponential(0),
    pass: v <= LIMIT,
  });
  return [row(`${what} ‖Δ‖/‖ref‖`, rel), row(`${what} max|Δ|/max|ref|`, maxD / maxR)];
}

interface IdsInput {
  readonly ref: Tensor;
  readonly refv: Float32Array;
  readonly split: Tensor;
  readonly bc: Tensor;
  readonly bg: Tensor;
  readonly bias: Float32Array;
}

/** routerTopK ids from each side's logits: differences not explained by a tie are failures. */
function idsRow(cpu: Backend, gpu: CudaBackend, M: number, o: IdsInput): Row {
  const top = (b: Backend, logits: Tensor, bias: Tensor) => {
    const ids = b.alloc([M, TOPK], 'i32');
    b.routerTopK(ids, b.alloc([M, TOPK], 'f32'), logits, bias, ROUTER);
    return b.readI32(ids);
  };
  const want = top(cpu, o.ref, o.bc);
  const got = top(gpu, o.split, o.bg);
  let maxR = 0;
  for (const v of o.refv) maxR = Math.max(maxR, Math.abs(v));
  const tol = (LIMIT * maxR) / 2; // two scores, each within a quarter of the logit bound
  const score = (t: number, e: number) => 1 / (1 + Math.exp(-o.refv[t * E + e]!)) + o.bias[e]!;
  let ties = 0;
  let bad = 0;
  for (let i = 0; i < want.length; i++) {
    if (got[i] === want[i]) continue;
    const t = Math.floor(i / TOPK);
    const g = got[i]!;
    const tie = g >= 0 && g < E && Math.abs(score(t, want[i]!) - score(t, g)) <= tol;
    if (tie) ties++;
    else bad++;
  }
  return {
    check: `router top-${TOPK} ids M=${M} (differing ids, CPU ties within the bound apart)`,
    value: `${bad}/${want.length} (+${ties} ties)`,
    limit: '0',
    pass: bad === 0,
  };
}
