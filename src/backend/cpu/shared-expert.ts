import type { Backend, MoeOptions, SharedExpertWeights } from '../backend.js';
import type { Tensor } from '../../tensor/tensor.js';
import { f32 } from './cpu-tensor.js';
import type { CpuTensor } from './cpu-tensor.js';
import type { KernelWeights } from './kernel-weights.js';
import type { SharedExpertRows } from './ops/moe.js';

/**
 * The shared expert as moeRows takes it (its GEMMs in the routed experts' pool jobs), or
 * null where its weights hold FP8 values: their matmuls may take W8A8 (quantized x), which
 * `addSharedExpert` leaves to CpuBackend.matmul.
 */
export function sharedExpertRows(
  s: SharedExpertWeights,
  D: number,
  weights: KernelWeights,
  isFp8: (w: Tensor) => boolean,
): SharedExpertRows | null {
  if (isFp8(s.gateUp) || isFp8(s.down)) return null;
  const I = s.down.shape[1]!;
  return {
    gateUp: weights.of(s.gateUp as CpuTensor, f32(s.gateUp, 'moe.shared.gateUp', [2 * I, D])),
    down: weights.of(s.down as CpuTensor, f32(s.down, 'moe.shared.down', [D, I])),
    I,
  };
}

/** out += the shared MLP of x, step by step (what the model runs beside a plain `moe`). */
export function addSharedExpert(
  b: Backend,
  out: Tensor,
  x: Tensor,
  s: SharedExpertWeights,
  o: MoeOptions,
): void {
  const [T, D] = x.shape as [number, number];
  const I = s.down.shape[1]!;
  const gu = b.alloc([T, 2 * I], 'f32'); // [T, 2Is]
  const act = b.alloc([T, I], 'f32'); // [T, Is]
  const y = b.alloc([T, D], 'f32'); // [T, D]
  b.matmul(gu, x, s.gateUp);
  b.swigluOai(act, gu, o.alpha, o.limit);
  b.matmul(y, act, s.down);
  b.add(out, out, y);
  for (const t of [gu, act, y]) b.free(t);
}
