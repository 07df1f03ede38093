import type { Backend } from '../../backend/backend.js';
import { DTYPE_BYTES, type DType } from '../../tensor/dtype.js';
import { isFp8Weight } from '../../tensor/fp8-weight.js';
import { numel } from '../../tensor/shape.js';
import { isSplitF32 } from '../../tensor/split-f32.js';
import type { Tensor } from '../../tensor/tensor.js';
import type { ModelWeights } from './weights.js';

/**
 * Weight memory by storage dtype (`fp8_e4m3` codes, their scales under `fp8_scale`; a split f32
 * router's parts under `bfloat16`).
 */
export type WeightBytes = Readonly<Record<string, number>>;

const NAMES: Readonly<Record<DType, string>> = {
  f32: 'float32',
  f16: 'float16',
  bf16: 'bfloat16',
  i32: 'int32',
  u8: 'uint8',
  f8e4m3: 'fp8_e4m3',
};

/** A storage dtype as memory reports name it (vLLM's / torch's spelling). */
export function dtypeName(d: DType): string {
  return NAMES[d];
}

/** Bytes of every weight tensor of `w` as `backend` stores them, by dtype (vLLM's names). */
export function weightBytesByDtype(w: ModelWeights, backend: Backend): WeightBytes {
  const out: Record<string, number> = {};
  const add = (key: string, bytes: number) => (out[key] = (out[key] ?? 0) + bytes);
  const count = (t: Tensor | null) => {
    if (!t) return;
    if (isFp8Weight(t)) {
      add('fp8_e4m3', numel(t.shape));
      add('fp8_scale', numel(t.scales.shape) * DTYPE_BYTES[t.scales.dtype]);
      return;
    }
    const d = backend.storageDtype(t.dtype);
    add(NAMES[d], numel(t.shape) * DTYPE_BYTES[d]);
    // A split router's bf16 parts (CUDA bf16x3) are weight memory too.
    if (isSplitF32(t)) add(NAMES.bf16, t.partElements * DTYPE_BYTES.bf16);
  };
  [w.embed, w.norm, w.lmHead].forEach(count);
  for (const l of w.layers) {
    const a = l.attn;
    [l.inputNorm, l.postAttnNorm, a.qProj, a.kProj, a.vProj, a.oProj, a.qNorm, a.kNorm].forEach(
      count,
    );
    if (a.index) [a.index.qProj, a.index.kProj, a.index.qNorm, a.index.kNorm].forEach(count);
    if (l.mlp) [l.mlp.gateUp, l.mlp.down].forEach(count);
    if (l.moe) {
      [l.moe.gate, l.moe.bias, l.moe.experts.gateUp, l.moe.experts.down].forEach(count);
      if (l.moe.shared) [l.moe.shared.gateUp, l.moe.shared.down].forEach(count);
    }
  }
  return out;
}

/** The total of a WeightBytes. */
export function totalWeightBytes(b: WeightBytes): number {
  return Object.values(b).reduce((s, n) => s + n, 0);
}
