import { describe, expect, it } from 'vitest';
import { CpuBackend } from './cpu-backend.js';
import { CpuTensor } from './cpu-tensor.js';
import { KernelWeights } from './kernel-weights.js';
import { PackedPanels, packPanels } from './packed-panels.js';

describe('KernelWeights: views of whole rows', () => {
  // a bf16 block [24, 8] (values exactly bf16) written from the host, as loadQk fills one
  const b = new CpuBackend();
  const block = b.alloc([24, 8], 'bf16') as CpuTensor;
  const values = Float32Array.from({ length: 24 * 8 }, (_, i) => (i % 13) - 6.5);
  b.write(block, values);
  const kw = new KernelWeights(b.kernels.heap);
  kw.written(block);
  const bits = (a: Float32Array): Uint16Array =>
    Uint16Array.from(new Uint32Array(a.buffer, a.byteOffset, a.length), (x) => x >>> 16);

  it('rows on panel boundaries read the packed panels of the block that hold them', () => {
    const view = b.rows(block, 8, 16) as CpuTensor;
    const got = kw.of(view, view.data as Float32Array);
    expect(got).toBeInstanceOf(PackedPanels);
    const own = packPanels(bits(values.subarray(64, 192)), new Uint16Array(128), 16, 8);
    expect(Array.from((got as PackedPanels).data)).toEqual(Array.from(own));
  });

  it('rows off the panel boundaries, or a block not written from the host, read float32', () => {
    const off = b.rows(block, 4, 8) as CpuTensor;
    expect(kw.of(off, off.data as Float32Array)).toBe(off.data);
    const fresh = b.alloc([16, 8], 'bf16') as CpuTensor;
    const view = b.rows(fresh, 8, 8) as CpuTensor;
    expect(kw.of(view, view.data as Float32Array)).toBe(view.data);
  });
});
